package dev.fencelock;

/**
 * One semaphore of a listing (FencelockClient.listSemaphores): a permit held on a majority of lock
 * nodes, and the counts semaphoreStatus would have given when the page was made — the live permit
 * count and how many permits are held.
 */
public record ListedSemaphore(String name, int permits, int held) {}
