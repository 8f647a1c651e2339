package dev.fencelock;

import java.util.List;
import java.util.Optional;

/**
 * One page of a listing (FencelockClient.listLocks): its locks, and `next`, the cursor of the
 * following page — empty once the listing is complete.
 */
public record LockListing(List<HeldLock> locks, Optional<String> next) {}
