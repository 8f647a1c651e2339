// Keeps web browsers away from fencelockd. A page that an operator's browser opens can send
// requests to any address that browser reaches — a fencelockd on loopback too — and a DNS name
// the page's author controls can be made to resolve to 127.0.0.1 (DNS rebinding). Three checks on
// a request's head, in this order; the first that fails answers:
//  1. Host (when `check_host`): the name in the Host header must be an IP address, "localhost" or
//     a name under ".localhost", or match one of `allowed_hosts` (exact, case-insensitive; "*"
//     matches any name, ".example.com" any name under example.com) → 421 host_not_allowed.
//  2. Cross-site: an Origin header not listed in `allowed_origins` ("*" allows any), or, without
//     an Origin, a Sec-Fetch-Site other than "same-origin" or "none", or either header sent twice
//     → 403 cross_site_request.
//  3. A request with a body must send it as application/json, which no page can send to another
//     site without a CORS preflight (fencelockd answers none) → 415 unsupported_media_type.
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/exchange.h"

namespace fencelock::service {

struct BrowserGuardOptions {
  // Check the Host header. Default true; fencelockd turns it off with API keys (a browser cannot
  // send a key it does not have) unless --allowed-hosts is given.
  bool check_host = true;
  // Host names allowed besides IP addresses and localhost: the machine's names, the listen
  // address's name, and --allowed-hosts. Default: none.
  std::vector<std::string> allowed_hosts;
  // Origins (scheme://host[:port], as browsers send them) allowed to call: --allowed-origins.
  // Default: none.
  std::vector<std::string> allowed_origins;
};

// What the checks read of a request's head; empty views for absent headers.
struct RequestHead {
  std::string_view host;
  std::string_view origin;
  std::string_view sec_fetch_site;
  std::string_view content_type;
  bool has_body = false;         // Content-Length above 0, or chunked
  bool repeated_origin = false;  // Origin or Sec-Fetch-Site more than once: refused as cross-site
};

// The answer that refuses `head`, or nullopt when it passes every check.
std::optional<ApiResponse> screen_browser(const BrowserGuardOptions& options,
                                          const RequestHead& head);

// The name part of a Host header value: "a.example:80" → "a.example", "[::1]:8080" → "::1";
// a bracketed value followed by anything but a port is returned whole (it matches nothing).
std::string_view host_name_of(std::string_view host) noexcept;

// Whether `name` (a host name, no port) passes check 1.
bool host_allowed(const BrowserGuardOptions& options, std::string_view name);

}  // namespace fencelock::service
