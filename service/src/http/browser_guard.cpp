#include "http/browser_guard.h"

#include <boost/asio/ip/address.hpp>
#include <boost/beast/core/string.hpp>

namespace fencelock::service {

namespace {

std::string_view trimmed(std::string_view text) noexcept {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

bool same_text(std::string_view a, std::string_view b) noexcept {
  return boost::beast::iequals(a, b);
}

bool ends_with_text(std::string_view text, std::string_view suffix) noexcept {
  return text.size() >= suffix.size() &&
         same_text(text.substr(text.size() - suffix.size()), suffix);
}

bool is_ip_address(std::string_view name) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(std::string(name), ec);
  return !ec;
}

// `text` fit to be quoted in an answer: printable ASCII, others as '?', at most `max` bytes.
std::string echoed(std::string_view text, std::size_t max) {
  std::string out;
  for (const char c : text.substr(0, max)) out += (c >= ' ' && c < 0x7f) ? c : '?';
  return out;
}

bool listed(const std::vector<std::string>& allowed, std::string_view value) {
  for (const std::string& entry : allowed) {
    if (entry == "*" || same_text(entry, value)) return true;
    if (entry.size() > 1 && entry.front() == '.' && ends_with_text(value, entry)) return true;
  }
  return false;
}

}  // namespace

std::string_view host_name_of(std::string_view host) noexcept {
  host = trimmed(host);
  if (!host.empty() && host.front() == '[') {
    // "[v6]" or "[v6]:port"; anything else after the ']' is not a host name: kept whole, so that
    // it matches nothing.
    const auto close = host.find(']');
    if (close == std::string_view::npos) return host;
    const std::string_view rest = host.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return host;
    return host.substr(1, close - 1);
  }
  const auto colon = host.rfind(':');
  if (colon != std::string_view::npos && host.find(':') == colon) host = host.substr(0, colon);
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);  // "localhost." is localhost
  return host;
}

bool host_allowed(const BrowserGuardOptions& options, std::string_view name) {
  if (name.empty() || is_ip_address(name)) return true;
  if (same_text(name, "localhost") || ends_with_text(name, ".localhost")) return true;
  return listed(options.allowed_hosts, name);
}

std::optional<ApiResponse> screen_browser(const BrowserGuardOptions& options,
                                          const RequestHead& head) {
  if (options.check_host && !head.host.empty()) {
    const std::string_view name = host_name_of(head.host);
    if (!host_allowed(options, name)) {
      return RequestHandler::error_response(
          WireError::kHostNotAllowed,
          "the Host '" + echoed(name, 100) +
              "' is not one of this fencelockd's names: add it to --allowed-hosts");
    }
  }
  if (head.repeated_origin) {
    return RequestHandler::error_response(WireError::kCrossSiteRequest,
                                          "requests from web pages are refused (Origin or "
                                          "Sec-Fetch-Site sent more than once)");
  }
  if (!head.origin.empty()) {
    if (!listed(options.allowed_origins, trimmed(head.origin))) {
      return RequestHandler::error_response(
          WireError::kCrossSiteRequest,
          "requests from web pages are refused (Origin is not in --allowed-origins)");
    }
  } else if (!head.sec_fetch_site.empty()) {
    const std::string_view site = trimmed(head.sec_fetch_site);
    if (!same_text(site, "same-origin") && !same_text(site, "none")) {
      return RequestHandler::error_response(
          WireError::kCrossSiteRequest,
          "requests from web pages are refused (Sec-Fetch-Site: " + echoed(site, 20) + ")");
    }
  }
  if (head.has_body) {
    std::string_view media = head.content_type;
    if (const auto semicolon = media.find(';'); semicolon != std::string_view::npos)
      media = media.substr(0, semicolon);
    if (!same_text(trimmed(media), "application/json")) {
      return RequestHandler::error_response(
          WireError::kUnsupportedMediaType,
          "send the body as JSON with \"Content-Type: application/json\"");
    }
  }
  return std::nullopt;
}

}  // namespace fencelock::service
