package dev.fencelock;

import java.util.List;
import java.util.Optional;

/**
 * One page of the read/write lock listing (FencelockClient.listRwlocks): its read/write locks, and
 * `next`, the cursor of the following page — empty once the listing is complete.
 */
public record RwLockListing(List<ListedRwLock> rwlocks, Optional<String> next) {}
