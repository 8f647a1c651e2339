// The addresses a connection to one configured node address tries, in order: an IP literal
// exactly as written (never looked up), a name's addresses as its last lookup returned them. A
// lock node and its release subscriber each keep one, so both walk the same rule: try every
// address of a lookup before looking the name up again, and look it up again after a healthy
// connection is lost (its address may have changed).
//
// Not thread-safe: used on its owner's strand.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "fencelock/storage/node_address.h"
#include "net/address_resolver.h"

namespace fencelock::storage {

class AddressCandidates {
 public:
  explicit AddressCandidates(NodeAddress address);

  // The next address to connect to (an IP literal), or nullopt when the name must be looked up
  // first (then assign() the answer). A literal address always has a next one: itself.
  std::optional<std::string> next();

  // A lookup's answer, tried from its first endpoint on.
  void assign(const AddressResolver::Endpoints& endpoints);

  // Whether every address of the last lookup has been tried.
  bool exhausted() const { return next_ >= addresses_.size(); }

  // The next attempt looks the name up again.
  void forget();

 private:
  NodeAddress address_;
  std::vector<std::string> addresses_;  // IP literals, in the lookup's order
  std::size_t next_ = 0;
};

}  // namespace fencelock::storage
