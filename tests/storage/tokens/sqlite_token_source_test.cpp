// The SQLite token source against real files, real threads and a real second process.
#include "fencelock/storage/sqlite_token_source.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include <random>
#include <set>

#include "build_paths.h"
#include "temp_dir.h"
#include "token_checks.h"
#include "tokens/sqlite_handle.h"

using namespace fencelock::storage;
using namespace fencelock::testing;

namespace {

std::shared_ptr<SqliteTokenSource> open_source(const std::filesystem::path& path,
                                               std::uint64_t block = 1000) {
  SqliteTokenOptions options;
  options.path = path;
  options.reserve_block = block;
  auto source = SqliteTokenSource::open(options);
  if (!source.ok()) FAIL(source.error().message);
  return source.value();
}

// Runs the drawer process with stdout on a pipe.
struct Drawer {
  pid_t pid = -1;
  FILE* out = nullptr;
  Drawer(const std::filesystem::path& path, const std::string& name) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::dup2(fds[1], STDOUT_FILENO);
      ::close(fds[0]);
      ::execl(token_drawer_binary(), token_drawer_binary(), path.c_str(), name.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(fds[1]);
    out = ::fdopen(fds[0], "r");
  }
  ~Drawer() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (out != nullptr) std::fclose(out);
  }
  bool read_token(std::uint64_t& token) {
    unsigned long long value = 0;
    if (std::fscanf(out, "%llu", &value) != 1) return false;
    token = value;
    return true;
  }
};

}  // namespace

TEST_CASE("eight threads drawing one name get unique tokens in real-time order", "[storage]") {
  TempDir dir;
  const std::uint64_t block = GENERATE(as<std::uint64_t>{}, 1, 7, 1000);
  auto source = open_source(dir.path() / "tokens.db", block);
  const auto draws = draw_concurrently(*source, "orders", 8, 1000);

  std::set<std::uint64_t> unique;
  std::map<int, std::uint64_t> last_of_thread;
  for (const Draw& d : draws) {
    REQUIRE(d.token > 0);
    unique.insert(d.token);
  }
  CHECK(unique.size() == draws.size());
  for (const Draw& d : draws) {  // draws are grouped per thread in call order
    CHECK(d.token > last_of_thread[d.thread]);
    last_of_thread[d.thread] = d.token;
  }
  std::string why;
  CHECK(real_time_ordered(draws, why));
  INFO(why);
  CHECK(source->stats().draws == 8000);
}

TEST_CASE("counters are per name, start at 1 and current() reports the last token", "[storage]") {
  TempDir dir;
  auto source = open_source(dir.path() / "tokens.db");
  CHECK(current_of(*source, "a").value() == 0);
  CHECK(draw_one(*source, "a").value() == 1);
  CHECK(draw_one(*source, "a").value() == 2);
  CHECK(draw_one(*source, "b").value() == 1);
  CHECK(current_of(*source, "a").value() == 2);
  CHECK(current_of(*source, "b").value() == 1);
  CHECK(current_of(*source, "never").value() == 0);
}

TEST_CASE("a restart continues above every token handed out before", "[storage]") {
  TempDir dir;
  const auto path = dir.path() / "tokens.db";
  std::uint64_t before = 0;
  {
    auto source = open_source(path, 100);
    for (int i = 0; i < 250; ++i) before = draw_one(*source, "jobs").value();
  }
  auto reopened = open_source(path, 100);
  const std::uint64_t current = current_of(*reopened, "jobs").value();
  CHECK(current >= before);
  const std::uint64_t after = draw_one(*reopened, "jobs").value();
  CHECK(after > current);
  CHECK(after <= before + 100 + 1);  // at most one block skipped
}

TEST_CASE("tokens never repeat after the owning process is killed mid-draw", "[storage]") {
  TempDir dir;
  const auto path = dir.path() / "tokens.db";
  std::uint64_t greatest = 0;
  for (int round = 0; round < 3; ++round) {
    Drawer drawer(path, "crashy");
    for (int i = 0; i < 500 + round * 37; ++i) {
      std::uint64_t token = 0;
      REQUIRE(drawer.read_token(token));
      REQUIRE(token > greatest);
      greatest = token;
    }
  }  // each round ends in SIGKILL while the drawer is still drawing
  auto source = open_source(path);
  CHECK(draw_one(*source, "crashy").value() > greatest);
}

TEST_CASE("a second process cannot own the same token file", "[storage]") {
  TempDir dir;
  const auto path = dir.path() / "tokens.db";
  auto owner = open_source(path);

  SECTION("another process is refused with a clear message") {
    const std::string command =
        std::string(token_drawer_binary()) + " " + path.string() + " x 1 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[512] = {};
    const std::size_t n = std::fread(buffer, 1, sizeof(buffer) - 1, pipe);
    const int status = ::pclose(pipe);
    CHECK(WEXITSTATUS(status) == 2);
    CHECK_THAT(std::string(buffer, n),
               Catch::Contains("in use by another process (pid " + std::to_string(::getpid())));
  }
  SECTION("a second open in this process is refused too") {
    SqliteTokenOptions options;
    options.path = path;
    auto second = SqliteTokenSource::open(options);
    REQUIRE_FALSE(second.ok());
    CHECK(second.error().code == ErrorCode::kUnavailable);
  }
  SECTION("closing the owner frees the file") {
    owner.reset();
    CHECK(open_source(path) != nullptr);
  }
}

TEST_CASE("an evicted name continues above its recorded mark", "[storage]") {
  TempDir dir;
  SqliteTokenOptions options;
  options.path = dir.path() / "tokens.db";
  options.reserve_block = 50;
  options.max_cached_names = 2;
  auto source = SqliteTokenSource::open(options).value();
  const std::uint64_t first = draw_one(*source, "a").value();
  REQUIRE(draw_one(*source, "b").ok());
  REQUIRE(draw_one(*source, "c").ok());  // evicts "a"
  const std::uint64_t current = current_of(*source, "a").value();
  CHECK(current >= first);
  CHECK(draw_one(*source, "a").value() > current);
}

TEST_CASE("token sources refuse bad names and bad options", "[storage]") {
  TempDir dir;
  auto source = open_source(dir.path() / "tokens.db");
  CHECK(draw_one(*source, "").error().code == ErrorCode::kInvalidArgument);
  CHECK(draw_one(*source, std::string(2000, 'n')).error().code == ErrorCode::kInvalidArgument);

  SqliteTokenOptions options;
  options.path = dir.path() / "other.db";
  options.reserve_block = 0;
  CHECK(SqliteTokenSource::open(options).error().code == ErrorCode::kInvalidArgument);
  options.reserve_block = 10;
  options.path = dir.path() / "missing-dir" / "tokens.db";
  CHECK(SqliteTokenSource::open(options).error().code == ErrorCode::kUnavailable);
}

namespace {

std::shared_ptr<SqliteTokenSource> open_small(const std::filesystem::path& path,
                                              std::uint64_t block, std::size_t cached) {
  SqliteTokenOptions options;
  options.path = path;
  options.reserve_block = block;
  options.max_cached_names = cached;
  auto source = SqliteTokenSource::open(options);
  if (!source.ok()) FAIL(source.error().message);
  return source.value();
}

}  // namespace

TEST_CASE("a batch whose draws evict each other never hands out a token above the durable mark",
          "[storage]") {
  // One name cached, one token reserved per commit: every draw of a new name in a batch evicts the
  // previous one and raises the floor, so the batch climbs past what a count of its draws predicts.
  TempDir dir;
  const auto path = dir.path() / "tokens.db";
  std::uint64_t greatest = 0;
  for (int round = 0; round < 5; ++round) {
    auto source = open_small(path, 1, 1);
    std::vector<std::string> names;
    for (int i = 0; i < 24; ++i) names.push_back("n" + std::to_string(i % 12));
    for (const auto& token : draw_burst(*source, names)) {
      REQUIRE(token.ok());
      greatest = std::max(greatest, token.value());
    }
    source.reset();

    auto reopened = open_small(path, 1, 1);
    for (int i = 0; i < 12; ++i) {
      const std::uint64_t token = draw_one(*reopened, "n" + std::to_string(i)).value();
      INFO("round " << round << ", name n" << i);
      REQUIRE(token > greatest);
    }
    for (int i = 0; i < 12; ++i)
      greatest = std::max(greatest, current_of(*reopened, "n" + std::to_string(i)).value());
  }
}

TEST_CASE(
    "after a reopen every name continues above every token handed out, whatever the block and "
    "cache sizes",
    "[storage]") {
  TempDir dir;
  const auto path = dir.path() / "tokens.db";
  const std::uint32_t seed = 20240601;
  std::mt19937 random(seed);
  auto pick = [&random](std::uint64_t low, std::uint64_t high) {
    return std::uniform_int_distribution<std::uint64_t>(low, high)(random);
  };
  std::uint64_t greatest = 0;
  std::map<std::string, std::uint64_t> last_of_name;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int reopen = 0; reopen < 40 && std::chrono::steady_clock::now() < give_up; ++reopen) {
    const std::uint64_t block = pick(1, 5);
    const std::size_t cached = pick(1, 4);
    const std::size_t name_count = pick(1, 8);
    INFO("seed " << seed << ", reopen " << reopen << ", block " << block << ", cache " << cached);
    auto source = open_small(path, block, cached);

    // The first draw of each name after the reopen: above everything handed out before.
    for (std::size_t n = 0; n < name_count; ++n) {
      const std::string name = "name-" + std::to_string(n);
      const std::uint64_t token = draw_one(*source, name).value();
      REQUIRE(token > greatest);
      last_of_name[name] = token;
    }
    for (const auto& [name, last] : last_of_name) greatest = std::max(greatest, last);

    for (int burst = 0, bursts = static_cast<int>(pick(1, 4)); burst < bursts; ++burst) {
      std::vector<std::string> names(pick(1, 16));
      for (auto& name : names) name = "name-" + std::to_string(pick(0, name_count - 1));
      const auto tokens = draw_burst(*source, names);
      for (std::size_t i = 0; i < names.size(); ++i) {
        REQUIRE(tokens[i].ok());
        REQUIRE(tokens[i].value() >
                last_of_name[names[i]]);  // per name: increasing, never repeated
        last_of_name[names[i]] = tokens[i].value();
        greatest = std::max(greatest, tokens[i].value());
      }
      for (std::size_t n = 0; n < name_count; ++n) {
        const std::string name = "name-" + std::to_string(n);
        const std::uint64_t current = current_of(*source, name).value();
        CHECK(current >= last_of_name[name]);    // never below what was handed out
        greatest = std::max(greatest, current);  // and a later draw must pass it too
      }
    }
  }
}

TEST_CASE(
    "a reservation that cannot be written hands out nothing, and later draws stay below the mark",
    "[storage]") {
  TempDir dir;
  const auto path = dir.path() / "tokens.db";
  auto source = open_small(path, 2, 1);
  std::uint64_t greatest = draw_one(*source, "a").value();  // reserves up to 3

  // Another connection holds SQLite's write lock: the worker's reservation fails at once
  // (SQLITE_BUSY).
  auto blocker = SqliteDatabase::open(path);
  REQUIRE(blocker.ok());
  REQUIRE(blocker->exec("BEGIN IMMEDIATE").ok());
  std::vector<std::string> names{"a", "b", "a", "c", "a", "b"};
  bool some_failed = false;
  for (const auto& token : draw_burst(*source, names)) {
    if (token.ok()) {
      greatest = std::max(greatest, token.value());
      CHECK(token.value() <= 3);  // only what the first reservation covered
    } else {
      CHECK(token.error().code == ErrorCode::kUnavailable);
      some_failed = true;
    }
  }
  CHECK(some_failed);
  for (const char* name : {"a", "b", "c"}) CHECK(current_of(*source, name).value() <= 3);
  REQUIRE(blocker->exec("COMMIT").ok());

  for (const auto& token : draw_burst(*source, names)) greatest = std::max(greatest, token.value());
  source.reset();
  auto reopened = open_small(path, 2, 1);
  for (const char* name : {"a", "b", "c"}) CHECK(draw_one(*reopened, name).value() > greatest);
}

TEST_CASE("a token file keeps one random store id across reopens, and another file has another",
          "[storage]") {
  TempDir dir;
  std::string first_id;
  {
    auto source = open_source(dir.path() / "tokens.db");
    first_id = source->store_id();
    REQUIRE(draw_one(*source, "a").ok());
  }
  CHECK(first_id.size() == 32);
  CHECK(first_id.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(open_source(dir.path() / "tokens.db")->store_id() == first_id);
  CHECK(open_source(dir.path() / "tokens.db")->store_id() == first_id);
  CHECK(open_source(dir.path() / "other.db")->store_id() != first_id);
}

TEST_CASE("a token file from before store ids gets one on its next open and keeps its tokens",
          "[storage]") {
  TempDir dir;
  const auto path = dir.path() / "tokens.db";
  std::uint64_t before = 0;
  {
    auto source = open_source(path, 10);
    for (int i = 0; i < 25; ++i) before = draw_one(*source, "old").value();
  }
  {
    auto db = SqliteDatabase::open(path);
    REQUIRE(db.ok());
    REQUIRE(db->exec("DROP TABLE token_store").ok());
  }
  auto reopened = open_source(path, 10);
  const std::string id = reopened->store_id();
  CHECK(id.size() == 32);
  CHECK(draw_one(*reopened, "old").value() > before);
  reopened.reset();
  CHECK(open_source(path, 10)->store_id() == id);
}

TEST_CASE("a token file has a history once it reserved a token, and only then", "[storage]") {
  TempDir dir;
  const auto path = dir.path() / "tokens.db";
  { CHECK_FALSE(open_source(path, 10)->has_history()); }
  { CHECK_FALSE(open_source(path, 10)->has_history()); }  // opened, never drawn: still new
  {
    auto source = open_source(path, 10);
    REQUIRE(draw_one(*source, "jobs").ok());
    CHECK_FALSE(source->has_history());  // fixed at open
  }
  CHECK(open_source(path, 10)->has_history());
}
