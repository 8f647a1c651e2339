#include "net/address_candidates.h"

#include <boost/asio/ip/address.hpp>
#include <catch2/catch.hpp>

namespace fencelock::storage {
namespace {

AddressResolver::Endpoints endpoints_of(std::initializer_list<const char*> ips) {
  AddressResolver::Endpoints endpoints;
  for (const char* ip : ips) endpoints.emplace_back(boost::asio::ip::make_address(ip), 6379);
  return endpoints;
}

TEST_CASE("address candidates: a literal is always its own next address, never looked up",
          "[resolver]") {
  AddressCandidates candidates(NodeAddress{"127.0.0.2", 6379});
  for (int attempt = 0; attempt < 3; ++attempt) {
    REQUIRE(candidates.next() == std::optional<std::string>("127.0.0.2"));
    candidates.forget();
  }
}

TEST_CASE("address candidates: a name's addresses are tried in order, then looked up again",
          "[resolver]") {
  AddressCandidates candidates(NodeAddress{"redis-1", 6379});
  REQUIRE_FALSE(candidates.next().has_value());  // nothing yet: look the name up
  candidates.assign(endpoints_of({"10.0.0.1", "::1"}));
  REQUIRE_FALSE(candidates.exhausted());
  REQUIRE(candidates.next() == std::optional<std::string>("10.0.0.1"));
  REQUIRE(candidates.next() == std::optional<std::string>("::1"));
  REQUIRE(candidates.exhausted());
  REQUIRE_FALSE(candidates.next().has_value());

  candidates.assign(endpoints_of({"10.0.0.9"}));  // a fresh lookup starts from its first address
  candidates.forget();                            // ... unless the owner wants a new lookup
  REQUIRE_FALSE(candidates.next().has_value());
}

}  // namespace
}  // namespace fencelock::storage
