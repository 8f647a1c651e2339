#include "fencelock/storage/node_address.h"

#include <utility>

namespace fencelock::storage {

Result<NodeAddress> parse_node_address(std::string_view text) {
  auto parsed = parse_address(text);
  if (!parsed) return make_error(ErrorCode::kInvalidArgument, std::move(parsed).error());
  return std::move(parsed).value();
}

}  // namespace fencelock::storage
