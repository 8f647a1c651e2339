#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "http/http_session.h"

using namespace fencelock::service;
namespace http = boost::beast::http;

namespace {

// What Beast's serializer writes for the same answer: the session's former way of writing it.
std::string as_beast_writes(const ApiResponse& answer, std::string_view request_id, bool keep) {
  http::response<http::string_body> response{static_cast<http::status>(answer.status), 11};
  response.set(http::field::server, "fencelockd");
  response.set(http::field::content_type, answer.content_type);
  response.set(http::field::cache_control, "no-store");
  response.set("X-Request-Id", request_id);
  if (!answer.allow.empty()) response.set(http::field::allow, answer.allow);
  if (answer.retry_after_s)
    response.set(http::field::retry_after, std::to_string(*answer.retry_after_s));
  if (answer.authenticate)
    response.set(http::field::www_authenticate, "Bearer realm=\"fencelock\"");
  response.keep_alive(keep);
  response.body() = answer.body;
  response.prepare_payload();
  std::ostringstream text;
  text << response;
  return text.str();
}

}  // namespace

TEST_CASE("an answer's head is what Beast's serializer wrote for it, byte for byte", "[service]") {
  ApiResponse answer;
  answer.body = R"({"name":"orders","released":true})";
  std::string head;
  SECTION("a 200, kept alive") {
    write_answer_head(head, answer, "4f1c2a9e0b7d3c11", true);
    CHECK(head + answer.body == as_beast_writes(answer, "4f1c2a9e0b7d3c11", true));
    CHECK(head.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  }
  SECTION("a 429 with Retry-After and an Allow, closing") {
    answer.status = 429;
    answer.retry_after_s = 3;
    answer.allow = "GET, POST, DELETE";
    write_answer_head(head, answer, "job-42/a", false);
    CHECK(head + answer.body == as_beast_writes(answer, "job-42/a", false));
    CHECK(head.find("Connection: close\r\n") != std::string::npos);
  }
  SECTION("a 401 asking for a Bearer key, an empty body, metrics' content type") {
    answer.status = 401;
    answer.authenticate = true;
    answer.body.clear();
    answer.content_type = "text/plain; version=0.0.4; charset=utf-8";
    write_answer_head(head, answer, "x", true);
    CHECK(head == as_beast_writes(answer, "x", true));
    CHECK(head.find("Content-Length: 0\r\n\r\n") != std::string::npos);
  }
  SECTION("every status the API answers with") {
    for (const unsigned status :
         {200U, 400U, 401U, 403U, 404U, 405U, 408U, 409U, 413U, 429U, 499U, 500U, 503U}) {
      INFO(status);
      answer.status = status;
      write_answer_head(head, answer, "r", true);
      CHECK(head + answer.body == as_beast_writes(answer, "r", true));
    }
  }
  SECTION("a head reused for a shorter answer holds only the new one") {
    answer.allow = std::string(500, 'a');
    write_answer_head(head, answer, "first", true);
    answer.allow.clear();
    write_answer_head(head, answer, "second", true);
    CHECK(head + answer.body == as_beast_writes(answer, "second", true));
  }
}
