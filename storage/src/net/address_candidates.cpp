#include "net/address_candidates.h"

#include <utility>

namespace fencelock::storage {

AddressCandidates::AddressCandidates(NodeAddress address) : address_(std::move(address)) {}

std::optional<std::string> AddressCandidates::next() {
  if (exhausted() && address_.is_literal()) {
    addresses_ = {address_.host};  // exactly as written: no resolver, no extra hop
    next_ = 0;
  }
  if (exhausted()) return std::nullopt;
  return addresses_[next_++];
}

void AddressCandidates::assign(const AddressResolver::Endpoints& endpoints) {
  addresses_.clear();
  for (const auto& endpoint : endpoints) addresses_.push_back(endpoint.address().to_string());
  next_ = 0;
}

void AddressCandidates::forget() {
  addresses_.clear();
  next_ = 0;
}

}  // namespace fencelock::storage
