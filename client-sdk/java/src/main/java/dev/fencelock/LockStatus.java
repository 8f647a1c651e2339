package dev.fencelock;

import java.time.Duration;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * What GET /v1/locks/{name} says: whether one lease holds the lock on a majority of nodes, for
 * how long (empty when not held), the name's current token — at or above every token handed out
 * for it — and the holder's fencing token and owner (what it sent as `owner` when it acquired):
 * empty when not held, the owner also when none was sent. Never the lease.
 *
 * A watch's answer (FencelockClient.watch) has `changed` — the lock is no longer held with the
 * token watched; false: the wait ran out with it unchanged — and `lastToken` 0. A status's
 * `changed` is false.
 */
public record LockStatus(boolean held, Optional<Duration> remaining, long lastToken, OptionalLong token,
    Optional<String> owner, boolean changed) {
  /** A status (not a watch's answer): `changed` false. */
  public LockStatus(boolean held, Optional<Duration> remaining, long lastToken, OptionalLong token,
      Optional<String> owner) {
    this(held, remaining, lastToken, token, owner, false);
  }
}
