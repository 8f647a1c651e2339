#include "node_reply.h"

#include <string_view>

namespace fencelock::storage {

bool NodeReply::is_error_prefix(const char* prefix) const {
  return kind == Kind::kError && std::string_view(text).starts_with(prefix);
}

NodeReply NodeReply::failure(Kind kind, std::string why) {
  NodeReply reply;
  reply.kind = kind;
  reply.text = std::move(why);
  return reply;
}

}  // namespace fencelock::storage
