// The client side of TLS for every https:// endpoint of a Client: TLS 1.2+, the server's
// certificate checked against `ca_file` (or the system's trust store), the client's certificate
// when given. Blocking file I/O. Errors: kInvalidArgument naming the option and file.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>

#include "fencelock/client.h"

namespace fencelock {

Result<std::shared_ptr<boost::asio::ssl::context>> make_tls_context(const ClientOptions& options);

}  // namespace fencelock
