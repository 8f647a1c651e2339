package dev.fencelock;

import java.util.List;
import java.util.Optional;

/**
 * One read/write lock of a listing (FencelockClient.listRwlocks): a grant held on a majority of
 * lock nodes, and what rwlockStatus would have said when the page was made — the mode it is held
 * in (READ or WRITE), its grants by token, and whether a writer waits.
 */
public record ListedRwLock(String name, Optional<Lease.Kind> mode, List<RwLockStatus.Holder> holders,
    boolean writerWaiting) {
  public ListedRwLock {
    holders = List.copyOf(holders);
  }
}
