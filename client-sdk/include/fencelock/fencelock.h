// The whole C++ SDK in one include: the client (client.h), leases (lease.h), renewal
// (lease_keeper.h: LeaseKeeper, with_lease), scoped locks (lock_guard.h) and guarded writes to a
// fenced SQLite or PostgreSQL table (fenced_table.h; link fencelock::fenced_table to use them).
#pragma once

#include "fencelock/client.h"
#include "fencelock/fenced_table.h"
#include "fencelock/lease.h"
#include "fencelock/lease_keeper.h"
#include "fencelock/lock_guard.h"
#include "fencelock/result.h"
