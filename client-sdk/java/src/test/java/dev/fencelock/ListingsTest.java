package dev.fencelock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/**
 * The semaphore and read/write lock listings (GET /v1/semaphores, GET /v1/rwlocks): how a page is
 * asked for and read (against a recording server), and the pages of the live stack's fencelockd.
 */
class ListingsTest {
  static final String SEMAPHORE_PAGE = Support.httpAnswer(200,
      "{\"semaphores\":[{\"name\":\"pool-1\",\"permits\":3,\"held\":2},{\"name\":\"pool-2\",\"permits\":1,\"held\":1}],"
      + "\"next\":\"2-1536-0\"}");
  static final String RWLOCK_PAGE = Support.httpAnswer(200,
      "{\"rwlocks\":[{\"name\":\"doc-1\",\"mode\":\"read\",\"holders\":[{\"token\":9223372036854775807,"
      + "\"owner\":\"report-7\",\"remaining_ms\":2500},{\"token\":18,\"owner\":null,\"remaining_ms\":0}],"
      + "\"writer_waiting\":true},{\"name\":\"doc-2\",\"mode\":\"write\",\"holders\":[{\"token\":4,\"owner\":null,"
      + "\"remaining_ms\":1000}],\"writer_waiting\":false}],\"next\":null}");
  static final String UNAVAILABLE = Support.httpAnswer(503,
      "{\"error\":{\"code\":\"unavailable\",\"message\":\"too few lock nodes\"}}");
  static final List<ListedSemaphore> LISTED_SEMAPHORES =
      List.of(new ListedSemaphore("pool-1", 3, 2), new ListedSemaphore("pool-2", 1, 1));
  static final List<ListedRwLock> LISTED_RWLOCKS = List.of(
      new ListedRwLock("doc-1", Optional.of(Lease.Kind.READ), List.of(
          new RwLockStatus.Holder(Long.MAX_VALUE, Optional.of("report-7"), Duration.ofMillis(2500)),
          new RwLockStatus.Holder(18, Optional.empty(), Duration.ZERO)), true),
      new ListedRwLock("doc-2", Optional.of(Lease.Kind.WRITE), List.of(
          new RwLockStatus.Holder(4, Optional.empty(), Duration.ofSeconds(1))), false));

  private static String code(ClientTest.Executable call) {
    return assertThrows(FencelockException.class, call::run).code();
  }

  @Nested
  class WithoutService {
    @Test
    @DisplayName("a semaphore or read/write lock page is asked for with its query values encoded, and read")
    void pages() throws Exception {
      try (Support.RecordingServer server = new Support.RecordingServer(SEMAPHORE_PAGE, RWLOCK_PAGE)) {
        FencelockClient client = FencelockClient.builder().endpoints(server.url).build();
        assertEquals(new SemaphoreListing(LISTED_SEMAPHORES, Optional.of("2-1536-0")),
            client.listSemaphores("pool-", 2, "1-0+x"));
        assertEquals(new RwLockListing(LISTED_RWLOCKS, Optional.empty()), client.listRwlocks(null, 100, null));
        assertEquals(List.of("/v1/semaphores?limit=2&prefix=pool-&cursor=1-0%2Bx", "/v1/rwlocks?limit=100"),
            server.targets);
        for (int limit : new int[] {0, 1001}) {
          assertEquals("invalid_request", code(() -> client.listSemaphores("", limit, null)));
          assertEquals("invalid_request", code(() -> client.listRwlocks("", limit, null)));
        }
        assertEquals(2, server.targets.size(), "a bad limit is refused before anything is sent");
        client.close();
      }
    }

    @Test
    @DisplayName("a semaphore or read/write lock listing answered 503 is asked again")
    void askedAgain() throws Exception {
      try (Support.RecordingServer server =
          new Support.RecordingServer(UNAVAILABLE, SEMAPHORE_PAGE, UNAVAILABLE, RWLOCK_PAGE)) {
        FencelockClient client =
            FencelockClient.builder().endpoints(server.url).retryBackoff(Duration.ofMillis(1)).build();
        assertEquals(LISTED_SEMAPHORES, client.listSemaphores("", 100, null).semaphores());
        assertEquals(LISTED_RWLOCKS, client.listRwlocks("", 100, null).rwlocks());
        assertEquals(4, server.targets.size());
        client.close();
      }
    }
  }

  @Nested
  @EnabledIfEnvironmentVariable(named = "FENCELOCK_ENDPOINT", matches = ".+")
  class AgainstTheService {
    FencelockClient client;
    String prefix;
    final List<Lease> leases = new ArrayList<>();

    @BeforeEach
    void setUp() throws Exception {
      client = Support.client();
      prefix = Support.uniqueName("java-listing") + ".";
    }

    @AfterEach
    void tearDown() {
      leases.forEach(Lease::close);
      client.close();
    }

    /**
     * Two permits of a 3-permit semaphore and one of a 1-permit one under the prefix, and one
     * outside it: what the listing of the prefix shows, name → [permits, held].
     */
    Map<String, List<Integer>> holdSemaphores() throws Exception {
      for (int i = 0; i < 2; ++i) {
        leases.add(Support.patiently(() -> client.acquirePermit(prefix + "a", 3, Duration.ofSeconds(30), Duration.ZERO)));
      }
      leases.add(Support.patiently(() -> client.acquirePermit(prefix + "b", 1, Duration.ofSeconds(30), Duration.ZERO)));
      String other = prefix.substring(0, prefix.length() - 1) + "-other";
      leases.add(Support.patiently(() -> client.acquirePermit(other, 2, Duration.ofSeconds(30), Duration.ZERO)));
      return Map.of(prefix + "a", List.of(3, 2), prefix + "b", List.of(1, 1));
    }

    /**
     * Two read grants of one read/write lock and the write grant of another under the prefix, and
     * a read grant outside it: what the listing of the prefix shows, holders by token without their
     * time left.
     */
    Map<String, ListedRwLock> holdRwLocks() throws Exception {
      Lease first = Support.patiently(() -> client.acquireRead(prefix + "r", Duration.ofSeconds(30), Duration.ZERO, "java-reader"));
      leases.add(first);
      Lease second = Support.patiently(() -> client.acquireRead(prefix + "r", Duration.ofSeconds(30), Duration.ZERO));
      leases.add(second);
      Lease writer = Support.patiently(() -> client.acquireWrite(prefix + "w", Duration.ofSeconds(30), Duration.ZERO, "java-writer"));
      leases.add(writer);
      String other = prefix.substring(0, prefix.length() - 1) + "-other";
      leases.add(Support.patiently(() -> client.acquireRead(other, Duration.ofSeconds(30), Duration.ZERO)));
      return Map.of(
          prefix + "r", new ListedRwLock(prefix + "r", Optional.of(Lease.Kind.READ), List.of(
              new RwLockStatus.Holder(first.token(), Optional.of("java-reader"), Duration.ZERO),
              new RwLockStatus.Holder(second.token(), Optional.empty(), Duration.ZERO)), false),
          prefix + "w", new ListedRwLock(prefix + "w", Optional.of(Lease.Kind.WRITE), List.of(
              new RwLockStatus.Holder(writer.token(), Optional.of("java-writer"), Duration.ZERO)), false));
    }

    @Test
    @DisplayName("listSemaphores pages through the held semaphores of a prefix, one per page")
    void listSemaphores() throws Exception {
      Map<String, List<Integer>> held = holdSemaphores();
      Map<String, List<Integer>> listed = new HashMap<>();
      everySemaphore(prefix, 1).forEach(s -> listed.put(s.name(), List.of(s.permits(), s.held())));
      assertEquals(held, listed);
    }

    @Test
    @DisplayName("listRwlocks pages through the held read/write locks of a prefix, one per page")
    void listRwlocks() throws Exception {
      Map<String, ListedRwLock> held = holdRwLocks();
      Map<String, ListedRwLock> listed = new HashMap<>();
      for (ListedRwLock rwlock : everyRwLock(prefix, 1)) {
        assertTrue(rwlock.holders().stream().allMatch(h -> !h.remaining().isNegative()
            && h.remaining().compareTo(Duration.ofSeconds(30)) <= 0));
        listed.put(rwlock.name(), withoutTimeLeft(rwlock));
      }
      assertEquals(held, listed);
    }

    @Test
    @DisplayName("a prefix nothing is held under lists no semaphore and no read/write lock")
    void emptyListing() throws Exception {
      holdSemaphores();
      holdRwLocks();
      assertEquals(List.of(), everySemaphore(prefix + "none.", 100));
      assertEquals(List.of(), everyRwLock(prefix + "none.", 100));
    }

    /** Every semaphore listed under `under`, `limit` per page; fails after 100 pages. */
    private List<ListedSemaphore> everySemaphore(String under, int limit) throws FencelockException {
      List<ListedSemaphore> all = new ArrayList<>();
      String cursor = null;
      for (int pages = 0; pages < 100; ++pages) {
        SemaphoreListing page = client.listSemaphores(under, limit, cursor);
        all.addAll(page.semaphores());
        cursor = page.next().orElse(null);
        if (cursor == null) {
          return all;
        }
      }
      throw new AssertionError("the listing did not end within 100 pages");
    }

    /** Every read/write lock listed under `under`, `limit` per page; fails after 100 pages. */
    private List<ListedRwLock> everyRwLock(String under, int limit) throws FencelockException {
      List<ListedRwLock> all = new ArrayList<>();
      String cursor = null;
      for (int pages = 0; pages < 100; ++pages) {
        RwLockListing page = client.listRwlocks(under, limit, cursor);
        all.addAll(page.rwlocks());
        cursor = page.next().orElse(null);
        if (cursor == null) {
          return all;
        }
      }
      throw new AssertionError("the listing did not end within 100 pages");
    }

    private ListedRwLock withoutTimeLeft(ListedRwLock rwlock) {
      return new ListedRwLock(rwlock.name(), rwlock.mode(), rwlock.holders().stream()
          .map(h -> new RwLockStatus.Holder(h.token(), h.owner(), Duration.ZERO))
          .sorted(Comparator.comparingLong(RwLockStatus.Holder::token)).toList(), rwlock.writerWaiting());
    }
  }
}
