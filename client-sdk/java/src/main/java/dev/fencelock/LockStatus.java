package dev.fencelock;

import java.time.Duration;
import java.util.Optional;

/**
 * What GET /v1/locks/{name} says: whether one lease holds the lock on a majority of nodes, for
 * how long (empty when not held), and the name's current token — at or above every token handed
 * out for it. Never the lease.
 */
public record LockStatus(boolean held, Optional<Duration> remaining, long lastToken) {}
