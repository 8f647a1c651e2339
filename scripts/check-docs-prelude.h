// What scripts/check-docs.sh puts before a C++ fragment of the docs (a block marked
// <!-- cpp-fragment: PARAMS -->): the standard headers and declarations of the application code
// the examples call. No SDK header: a fragment includes what it uses, as a reader's file must.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

struct Batch {};
bool more_work();
Batch next_batch();
struct Store {
  void write(const Batch& batch, std::uint64_t token);
};
void write_invoice(int id, std::uint64_t token);
std::int64_t read_balance(sqlite3* db, const char* key);
