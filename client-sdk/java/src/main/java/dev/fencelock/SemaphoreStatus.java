package dev.fencelock;

/**
 * What GET /v1/semaphores/{name} says: the live semaphore's permit count (0 when no permit is
 * live) and how many permits are held on a majority of nodes.
 */
public record SemaphoreStatus(int permits, int held) {}
