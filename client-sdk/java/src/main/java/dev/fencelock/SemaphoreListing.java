package dev.fencelock;

import java.util.List;
import java.util.Optional;

/**
 * One page of the semaphore listing (FencelockClient.listSemaphores): its semaphores, and `next`,
 * the cursor of the following page — empty once the listing is complete.
 */
public record SemaphoreListing(List<ListedSemaphore> semaphores, Optional<String> next) {}
