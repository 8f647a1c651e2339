package dev.fencelock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

@EnabledIfEnvironmentVariable(named = "FENCELOCK_ENDPOINT", matches = ".+")
class SetsAndSemaphoresTest {
  FencelockClient client;
  String prefix;

  @BeforeEach
  void setUp() throws Exception {
    client = Support.client();
    prefix = Support.uniqueName("java-set");
  }

  @AfterEach
  void tearDown() {
    client.close();
  }

  @Test
  @DisplayName("a lock set takes all of its names or none, with a token per name")
  void allOrNothing() throws Exception {
    String a = prefix + "-a";
    String b = prefix + "-b";
    String c = prefix + "-c";
    Lease lease = Support.patiently(() -> client.acquireSet(List.of(b, a), Duration.ofSeconds(5), Duration.ZERO));
    assertEquals(Lease.Kind.SET, lease.kind());
    assertEquals(List.of(a, b), lease.names(), "sorted");
    assertEquals(0, lease.token());
    for (String n : List.of(a, b)) {
      assertTrue(client.status(n).held());
      assertEquals(client.currentToken(n), lease.tokenOf(n));
    }
    FencelockException e = assertThrows(FencelockException.class,
        () -> Support.patiently(() -> client.acquireSet(List.of(c, b), Duration.ofSeconds(5), Duration.ZERO)));
    assertEquals(FencelockException.LOCKED, e.code());
    assertFalse(client.status(c).held(), "the refused set took nothing");
    e = assertThrows(FencelockException.class,
        () -> Support.patiently(() -> client.acquire(a, Duration.ofSeconds(5), Duration.ZERO)));
    assertEquals(FencelockException.LOCKED, e.code());
    long before = lease.deadlineNanos();
    client.extend(lease, Duration.ofSeconds(10));
    assertTrue(lease.deadlineNanos() - before > 3_000_000_000L);
    assertTrue(lease.release());
    assertFalse(client.release(lease));
    for (String n : List.of(a, b)) {
      assertFalse(client.status(n).held());
    }
  }

  @Test
  @DisplayName("a semaphore grants at most its permits, on distinct slots, and refuses another count")
  void semaphore() throws Exception {
    String name = prefix + "-pool";
    Lease first = Support.patiently(() -> client.acquirePermit(name, 2, Duration.ofSeconds(5), Duration.ZERO));
    Lease second = Support.patiently(() -> client.acquirePermit(name, 2, Duration.ofSeconds(5), Duration.ZERO));
    assertEquals(Lease.Kind.PERMIT, first.kind());
    assertEquals(2, first.permits());
    assertNotEquals(first.slot(), second.slot());
    assertTrue(second.token() > first.token());
    assertEquals(new SemaphoreStatus(2, 2), client.semaphoreStatus(name));
    FencelockException e = assertThrows(FencelockException.class,
        () -> Support.patiently(() -> client.acquirePermit(name, 2, Duration.ofSeconds(1), Duration.ZERO)));
    assertEquals(FencelockException.LOCKED, e.code());
    e = assertThrows(FencelockException.class,
        () -> Support.patiently(() -> client.acquirePermit(name, 3, Duration.ofSeconds(1), Duration.ZERO)));
    assertEquals(FencelockException.PERMITS_MISMATCH, e.code());
    assertEquals(2, e.permits().orElseThrow());
    client.extend(first, Duration.ofSeconds(5));
    assertTrue(first.release());
    // A waiting permit gets the slot the release freed.
    try (Lease third = Support.patiently(() -> client.permit(name, 2, Duration.ofSeconds(5), Duration.ofSeconds(2)))) {
      assertEquals(first.slot(), third.slot());
    }
    second.close();
    assertEquals(0, client.semaphoreStatus(name).held());
  }
}
