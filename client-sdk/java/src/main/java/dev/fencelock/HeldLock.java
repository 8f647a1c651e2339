package dev.fencelock;

import java.time.Duration;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * One lock of a listing (GET /v1/locks): held on a majority of lock nodes, by the lease whose
 * fencing token is `token` (empty when the listing cannot tell it) and whose holder sent `owner`
 * (empty when none was sent), for `remaining` more.
 */
public record HeldLock(String name, OptionalLong token, Optional<String> owner, Duration remaining) {}
