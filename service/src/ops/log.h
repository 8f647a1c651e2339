// One-line structured log records on stderr, one record per event: its UTC time, level, event name
// and fields (key, value). Two formats, chosen once at startup (configure_log):
//   text: 2026-11-23T18:00:00.123Z info request method=GET route=healthz status=200 reason="a b"
//         A value is written bare when it is non-empty printable ASCII without space, '"', '\\'
//         or '='; otherwise in double quotes with '"' and '\\' escaped by a backslash.
//   json: {"time":"2026-11-23T18:00:00.123Z","level":"info","event":"request","method":"GET",...}
//         Numbers and booleans are JSON numbers and booleans, text is a JSON string; bytes that
//         are not valid UTF-8 become U+FFFD.
// In both, a control character in a value is escaped (text: \xNN, json: \u00NN) and a text value
// is capped at kMaxLogValueBytes, so a record stays on one line and bounded whatever a client
// sent. Records below the configured level are dropped before any formatting.
//
// Adding an event is one call: log_event(LogLevel::kInfo, "node_resolved",
//   {{"node", address}, {"addresses", list}, {"took_ms", elapsed.count()}});
// Event names and keys are fixed snake_case words chosen by the caller, never client input.
//
// Thread-safe: each record is formatted into a per-thread buffer (no allocation once it has grown),
// so records never interleave. It is then written with one write(2) by the thread that logs, or,
// between start_async_log() and stop_async_log(), queued for a writer thread of its own
// (log_sink.h): the thread that logs never waits for stderr, a record that finds the queue full is
// dropped and counted (log_records_dropped()), and one thread's records keep their order. Callers
// never pass a lease secret or an API key's secret.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace fencelock::service {

enum class LogLevel { kDebug, kInfo, kWarning, kError };
enum class LogFormat { kText, kJson };

// "debug", "info", "warning", "error".
std::string_view log_level_name(LogLevel level) noexcept;
// The level a name stands for ("debug" … "error"), nullopt for anything else.
std::optional<LogLevel> parse_log_level(std::string_view name) noexcept;
// "text" or "json"; nullopt for anything else.
std::optional<LogFormat> parse_log_format(std::string_view name) noexcept;
std::string_view log_format_name(LogFormat format) noexcept;

// Sets the format and the lowest level written (default: text, info). Call once at startup,
// before other threads log; later calls are allowed (tests) and take effect for later records.
void configure_log(LogFormat format, LogLevel lowest) noexcept;
// Whether a record at `level` would be written: lets a caller skip building an expensive field.
bool log_enabled(LogLevel level) noexcept;

// From start_async_log() on, records are queued for a writer thread (LogSink, log_sink.h, with
// its default capacity and linger) instead of written by the thread that logs; stop_async_log()
// writes every record queued and returns to writing at once. Call both from one thread (the
// service's run); start throws std::system_error if the thread cannot start (logging then stays
// synchronous). Records lost since start (a full queue, a failed write): log_records_dropped().
void start_async_log();
void stop_async_log() noexcept;
std::uint64_t log_records_dropped() noexcept;

// Longest value a field keeps by default (one_line()); longer ones end in "...".
inline constexpr std::size_t kMaxLogValueBytes = 1024;

// Text from outside (a client, a file, OpenSSL, a Redis error) made fit for one line: control
// bytes (below 0x20, and 0x7f) become "\xNN", and the text is capped at `max_bytes` (then "...").
// Printable text, quotes and non-ASCII bytes are kept: the log format escapes them.
std::string one_line(std::string_view text, std::size_t max_bytes = kMaxLogValueBytes);

// One field of a record: a key and a value that is text, a whole number or a boolean. Holds views:
// it lives only for the log_event() call it is written in.
class LogField {
 public:
  enum class Kind : std::uint8_t { kText, kSigned, kUnsigned, kBool, kAbsent };

  LogField(std::string_view key, std::string_view text) noexcept
      : key_(key), text_(text), kind_(Kind::kText) {}
  LogField(std::string_view key, const std::string& text) noexcept
      : LogField(key, std::string_view(text)) {}
  LogField(std::string_view key, const char* text) noexcept
      : LogField(key, std::string_view(text)) {}
  LogField(std::string_view key, bool flag) noexcept
      : key_(key), unsigned_(flag ? 1U : 0U), kind_(Kind::kBool) {}
  template <std::signed_integral T>
  LogField(std::string_view key, T number) noexcept
      : key_(key), signed_(static_cast<std::int64_t>(number)), kind_(Kind::kSigned) {}
  template <std::unsigned_integral T>
  requires(!std::same_as<T, bool>) LogField(std::string_view key, T number)
  noexcept : key_(key), unsigned_(static_cast<std::uint64_t>(number)), kind_(Kind::kUnsigned) {}

  // A field written only when it has a value: non-empty text, a non-zero count, a set optional.
  static LogField if_present(std::string_view key, std::string_view text) noexcept {
    return text.empty() ? absent(key) : LogField(key, text);
  }
  static LogField if_present(std::string_view key, std::uint64_t count) noexcept {
    return count == 0 ? absent(key) : LogField(key, count);
  }
  static LogField if_present(std::string_view key, std::optional<std::uint64_t> number) noexcept {
    return number ? LogField(key, *number) : absent(key);
  }

  // `field` if `condition` holds, else nothing.
  static LogField when(bool condition, const LogField& field) noexcept {
    return condition ? field : absent(field.key());
  }

  std::string_view key() const noexcept { return key_; }
  Kind kind() const noexcept { return kind_; }
  std::string_view text() const noexcept { return text_; }
  std::int64_t signed_value() const noexcept { return signed_; }
  std::uint64_t unsigned_value() const noexcept { return unsigned_; }

 private:
  static LogField absent(std::string_view key) noexcept {
    LogField field(key, std::string_view());
    field.kind_ = Kind::kAbsent;
    return field;
  }

  std::string_view key_;
  std::string_view text_;
  std::int64_t signed_ = 0;
  std::uint64_t unsigned_ = 0;
  Kind kind_;
};

using LogFields = std::initializer_list<LogField>;

// Writes one record if `level` is enabled. Never throws; a failed write is ignored (there is
// nowhere left to report it).
void log_event(LogLevel level, std::string_view event, LogFields fields = {}) noexcept;

// The older form: fields already written as text ("node=a:1 reason=\"why\""). They are read back
// into fields (key=value, key="quoted value"); text that is not a field goes to a field named
// "detail". Prefer the form above: it escapes values, and is cheaper.
void log_event(LogLevel level, std::string_view event, std::string_view preformatted) noexcept;

// The record log_event() would write, without the trailing newline: for tests.
std::string format_log_record(LogFormat format, LogLevel level, std::string_view event,
                              LogFields fields);

}  // namespace fencelock::service
