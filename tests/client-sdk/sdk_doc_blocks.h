// The C++ blocks of docs/sdk.md's "Fencing your database", compiled as written into functions
// (sdk_doc_blocks.py generates their definitions) for fenced_table_docs_test.cpp to run.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fencelock/fenced_table.h"

namespace fencelock::testing {

// One block, in the order of the page: a whole program (its main() renamed, returning its exit
// status) or a fragment run with the database, the table and a token.
struct SdkDocBlock {
  const char* where;  // "docs/sdk.md:LINE"
  int (*program)();
  void (*fragment)(sqlite3* db, Result<FencedTable>& accounts, std::uint64_t token);
};

std::vector<SdkDocBlock> sdk_doc_blocks();

// What the blocks take as given, defined by the test: the address of the test's PostgreSQL for
// the page's "postgresql://app@127.0.0.1:5432/bank", the path of the test's file for its
// "bank.db", and the reader's own SELECT of a balance.
std::string sdk_docs_postgres_url();
std::string sdk_docs_sqlite_file();
std::int64_t read_balance(sqlite3* db, const char* key);

}  // namespace fencelock::testing
