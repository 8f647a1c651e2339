#include "redis/node_reply.h"

#include <hiredis/hiredis.h>

#include <string_view>

namespace fencelock::storage {

bool NodeReply::is_error_prefix(const char* prefix) const {
  return kind == Kind::kError && std::string_view(text).starts_with(prefix);
}

NodeReply NodeReply::from_hiredis(const redisReply* reply) {
  NodeReply out;
  switch (reply->type) {
    case REDIS_REPLY_STATUS:
      out.kind = NodeReply::Kind::kStatus;
      break;
    case REDIS_REPLY_ERROR:
      out.kind = NodeReply::Kind::kError;
      break;
    case REDIS_REPLY_INTEGER:
      out.kind = NodeReply::Kind::kInteger;
      break;
    case REDIS_REPLY_NIL:
      out.kind = NodeReply::Kind::kNil;
      break;
    case REDIS_REPLY_STRING:
      out.kind = NodeReply::Kind::kString;
      break;
    case REDIS_REPLY_ARRAY:
      out.kind = NodeReply::Kind::kArray;
      break;
    default:
      out.kind = NodeReply::Kind::kError;
      out.text = "unexpected reply type";
      return out;
  }
  out.integer = reply->integer;
  if (reply->str != nullptr && reply->type != REDIS_REPLY_INTEGER)
    out.text.assign(reply->str, reply->len);
  for (std::size_t i = 0; i < reply->elements; ++i)
    out.elements.push_back(from_hiredis(reply->element[i]));
  return out;
}

NodeReply NodeReply::failure(Kind kind, std::string why) {
  NodeReply reply;
  reply.kind = kind;
  reply.text = std::move(why);
  return reply;
}

}  // namespace fencelock::storage
