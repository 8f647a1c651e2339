// What scripts/check-docs.sh puts before a C++ fragment of the docs (a block marked
// <!-- cpp-fragment: PARAMS -->): the SDK's public headers, and declarations of the application
// code the examples call, so that everything else in a fragment is checked against the real SDK.
#pragma once

#include <fencelock/client.h>
#include <fencelock/fenced_table.h>
#include <fencelock/lease_keeper.h>
#include <fencelock/lock_guard.h>
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
