#include "ops/log.h"

#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <ctime>
#include <vector>

#include "base/append_decimal.h"
#include "ops/log_sink.h"

namespace fencelock::service {
namespace {

std::atomic<LogFormat> g_format{LogFormat::kText};
std::atomic<LogLevel> g_lowest{LogLevel::kInfo};

constexpr char kHex[] = "0123456789abcdef";

void append_hex_byte(std::string& out, std::string_view prefix, unsigned char byte) {
  out += prefix;
  out += kHex[byte >> 4];
  out += kHex[byte & 0xf];
}

bool is_control(unsigned char byte) noexcept {
  return byte < 0x20 || byte == 0x7f;
}

// The length of the valid UTF-8 sequence that starts `text`, or 0 if it is not one.
std::size_t utf8_sequence(std::string_view text) noexcept {
  const auto lead = static_cast<unsigned char>(text[0]);
  std::size_t length = 0;
  std::uint32_t lowest = 0;
  std::uint32_t code = 0;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2, lowest = 0x80, code = lead & 0x1fU;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3, lowest = 0x800, code = lead & 0x0fU;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4, lowest = 0x10000, code = lead & 0x07U;
  } else {
    return 0;
  }
  if (text.size() < length) return 0;
  for (std::size_t i = 1; i < length; ++i) {
    const auto next = static_cast<unsigned char>(text[i]);
    if ((next & 0xc0U) != 0x80U) return 0;
    code = (code << 6) | (next & 0x3fU);
  }
  if (code < lowest || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return 0;
  return length;
}

// A text value may be written bare in the text format.
bool bare(std::string_view text) noexcept {
  if (text.empty() || text.size() > kMaxLogValueBytes) return false;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte >= 0x7f || c == '"' || c == '\\' || c == '=') return false;
  }
  return true;
}

void append_text_value(std::string& out, std::string_view text) {
  if (bare(text)) {
    out += text;
    return;
  }
  const bool clipped = text.size() > kMaxLogValueBytes;
  if (clipped) text = text.substr(0, kMaxLogValueBytes);
  out += '"';
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (is_control(byte)) {
      append_hex_byte(out, "\\x", byte);
    } else {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
  }
  if (clipped) out += "...";
  out += '"';
}

void append_json_string(std::string& out, std::string_view text) {
  const bool clipped = text.size() > kMaxLogValueBytes;
  if (clipped) text = text.substr(0, kMaxLogValueBytes);
  out += '"';
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x80) {
      const std::size_t length = utf8_sequence(text.substr(i));
      if (length == 0) {
        out += "\\ufffd";
        ++i;
      } else {
        out += text.substr(i, length);
        i += length;
      }
      continue;
    }
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (is_control(byte)) {
      append_hex_byte(out, "\\u00", byte);
    } else {
      out += c;
    }
    ++i;
  }
  if (clipped) out += "...";
  out += '"';
}

void append_time(std::string& out) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  // The date and time to the second change once a second: formatted once per second per thread,
  // not once per record (strftime and gmtime_r were ~0.4 % of fencelockd's CPU under load).
  thread_local std::time_t stamped = -1;
  thread_local char stamp[32];
  thread_local std::size_t stamp_size = 0;
  if (seconds != stamped) {
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    stamp_size = std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
    stamped = seconds;
  }
  out.append(stamp, stamp_size);
  out += '.';
  out += static_cast<char>('0' + millis / 100);
  out += static_cast<char>('0' + millis / 10 % 10);
  out += static_cast<char>('0' + millis % 10);
  out += 'Z';
}

void append_value(std::string& out, LogFormat format, const LogField& field) {
  switch (field.kind()) {
    case LogField::Kind::kText:
      return format == LogFormat::kJson ? append_json_string(out, field.text())
                                        : append_text_value(out, field.text());
    case LogField::Kind::kSigned:
      return append_decimal(out, field.signed_value());
    case LogField::Kind::kUnsigned:
      return append_decimal(out, field.unsigned_value());
    case LogField::Kind::kBool:
      out += field.unsigned_value() != 0 ? "true" : "false";
      return;
    case LogField::Kind::kAbsent:
      return;
  }
}

void format_record(std::string& out, LogFormat format, LogLevel level, std::string_view event,
                   const LogField* begin, const LogField* end) {
  if (format == LogFormat::kJson) {
    out += R"({"time":")";
    append_time(out);
    out += R"(","level":")";
    out += log_level_name(level);
    out += R"(","event":)";
    append_json_string(out, event);
    for (const LogField* field = begin; field != end; ++field) {
      if (field->kind() == LogField::Kind::kAbsent) continue;
      out += ',';
      append_json_string(out, field->key());
      out += ':';
      append_value(out, format, *field);
    }
    out += '}';
    return;
  }
  append_time(out);
  out += ' ';
  out += log_level_name(level);
  out += ' ';
  out += event;
  for (const LogField* field = begin; field != end; ++field) {
    if (field->kind() == LogField::Kind::kAbsent) continue;
    out += ' ';
    out += field->key();
    out += '=';
    append_value(out, format, *field);
  }
}

// The process's sink. Never destroyed: a thread may log at any moment, also while static objects
// are destroyed at exit; it is stopped (and flushed) by stop_async_log(), not by a destructor.
LogSink& process_sink() {
  static LogSink* const sink = new LogSink(LogSinkOptions{STDERR_FILENO});
  return *sink;
}

void write_record(LogLevel level, std::string_view event, const LogField* begin,
                  const LogField* end) noexcept {
  try {
    thread_local std::string line;
    line.clear();
    format_record(line, g_format.load(std::memory_order_relaxed), level, event, begin, end);
    line += '\n';
    // Queued for the writer thread, or written at once when asynchronous logging is off; a
    // failed or dropped record has nowhere left to be reported but the drop counter.
    static_cast<void>(process_sink().submit(line));
    // A record far above the usual size (a long configuration) does not keep its memory.
    if (line.capacity() > std::size_t{64} * 1024) line = std::string();
  } catch (...) {  // out of memory: the record is lost, the caller goes on
  }
}

bool is_key_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

}  // namespace

std::string_view log_level_name(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "error";
}

std::optional<LogLevel> parse_log_level(std::string_view name) noexcept {
  for (const LogLevel level :
       {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning, LogLevel::kError}) {
    if (name == log_level_name(level)) return level;
  }
  return std::nullopt;
}

std::optional<LogFormat> parse_log_format(std::string_view name) noexcept {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  return std::nullopt;
}

std::string_view log_format_name(LogFormat format) noexcept {
  return format == LogFormat::kJson ? "json" : "text";
}

void configure_log(LogFormat format, LogLevel lowest) noexcept {
  g_format.store(format, std::memory_order_relaxed);
  g_lowest.store(lowest, std::memory_order_relaxed);
}

bool log_enabled(LogLevel level) noexcept {
  return level >= g_lowest.load(std::memory_order_relaxed);
}

void start_async_log() {
  process_sink().start();
}

void stop_async_log() noexcept {
  process_sink().stop();
}

std::uint64_t log_records_dropped() noexcept {
  return process_sink().dropped();
}

std::string one_line(std::string_view text, std::size_t max_bytes) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (is_control(byte)) {
      append_hex_byte(out, "\\x", byte);
    } else {
      out += c;
    }
    if (out.size() >= max_bytes) return out + "...";
  }
  return out;
}

void log_event(LogLevel level, std::string_view event, LogFields fields) noexcept {
  if (!log_enabled(level)) return;
  write_record(level, event, fields.begin(), fields.end());
}

void log_event(LogLevel level, std::string_view event, std::string_view preformatted) noexcept {
  if (!log_enabled(level)) return;
  try {
    // key=value and key="value" pairs become fields; any other words are kept, in order, as one
    // "detail" field (an old caller's free text).
    constexpr std::size_t kMaxFields = 64;
    std::vector<LogField> fields;
    fields.reserve(kMaxFields + 1);
    std::string detail;
    std::string_view rest = preformatted;
    while (!rest.empty()) {
      if (rest.front() == ' ') {
        rest.remove_prefix(1);
        continue;
      }
      std::size_t key_end = 0;
      while (key_end < rest.size() && is_key_char(rest[key_end])) ++key_end;
      const bool is_field = key_end > 0 && key_end < rest.size() && rest[key_end] == '=' &&
                            fields.size() < kMaxFields;
      if (is_field) {
        const std::string_view key = rest.substr(0, key_end);
        rest.remove_prefix(key_end + 1);
        std::string_view value;
        if (!rest.empty() && rest.front() == '"') {
          const std::size_t close = rest.find("\" ", 1);
          const std::size_t end = close != std::string_view::npos ? close
                                  : (rest.size() > 1 && rest.back() == '"')
                                      ? rest.size() - 1
                                      : std::string_view::npos;
          if (end != std::string_view::npos) {
            value = rest.substr(1, end - 1);
            rest.remove_prefix(end + 1);
            fields.emplace_back(key, value);
            continue;
          }
        }
        const std::size_t space = rest.find(' ');
        value = rest.substr(0, space);
        rest.remove_prefix(space == std::string_view::npos ? rest.size() : space);
        fields.emplace_back(key, value);
        continue;
      }
      const std::size_t space = rest.find(' ');
      if (!detail.empty()) detail += ' ';
      detail += rest.substr(0, space);
      rest.remove_prefix(space == std::string_view::npos ? rest.size() : space);
    }
    if (!detail.empty()) fields.emplace_back("detail", detail);
    write_record(level, event, fields.data(), fields.data() + fields.size());
  } catch (...) {  // out of memory: the record is lost
  }
}

std::string format_log_record(LogFormat format, LogLevel level, std::string_view event,
                              LogFields fields) {
  std::string out;
  format_record(out, format, level, event, fields.begin(), fields.end());
  return out;
}

}  // namespace fencelock::service
