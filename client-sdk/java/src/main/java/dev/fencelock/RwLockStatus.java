package dev.fencelock;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * What GET /v1/rwlocks/{name} says: the mode the read/write lock is held in (READ or WRITE; empty
 * when free), its grants held on a majority of nodes, and whether a writer waits (new reads are
 * refused meanwhile). Never a lease.
 */
public record RwLockStatus(Optional<Lease.Kind> mode, List<Holder> holders, boolean writerWaiting) {
  /**
   * One grant: its fencing token, what its holder sent as `owner` (empty when none was sent), and
   * the time until fewer than a majority of nodes hold it.
   */
  public record Holder(long token, Optional<String> owner, Duration remaining) {}

  public RwLockStatus {
    holders = List.copyOf(holders);
  }
}
