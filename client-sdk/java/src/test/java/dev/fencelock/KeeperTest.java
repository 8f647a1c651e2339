package dev.fencelock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

@EnabledIfEnvironmentVariable(named = "FENCELOCK_ENDPOINT", matches = ".+")
class KeeperTest {
  FencelockClient client;
  String name;

  @BeforeEach
  void setUp() throws Exception {
    client = FencelockClient.builder().endpoints(Support.ENDPOINT).requestTimeout(Duration.ofMillis(500))
        .retryBackoff(Duration.ofMillis(10)).build();
    name = Support.uniqueName("java-keeper");
  }

  @AfterEach
  void tearDown() {
    client.close();
  }

  /** When the lost future completed, and the lease's deadline then. */
  private static CompletableFuture<long[]> lostAt(Lease lease) {
    return lease.lost().thenApply(why -> new long[] {System.nanoTime(), lease.deadlineNanos()});
  }

  @Test
  @DisplayName("the keeper renews past several ttls, and close releases")
  void renews() throws Exception {
    try (Lease lease = Support.patiently(() -> client.lock(name, Duration.ofMillis(1000), Duration.ZERO))) {
      long first = lease.deadlineNanos();
      Thread.sleep(2500);  // the ttl is 1 s: at 0.6 s a renewal came too late under CI's load
      assertFalse(lease.isLost());
      lease.check();
      assertTrue(lease.deadlineNanos() - first > 1_500_000_000L);
      assertTrue(client.status(name).held());
    }
    assertFalse(client.status(name).held(), "released at close");
  }

  @Test
  @DisplayName("the keeper renews read and write grants of read/write locks past several ttls")
  void renewsReadWriteGrants() throws Exception {
    try (Lease reader = Support.patiently(() -> client.readLock(name + "-read", Duration.ofMillis(1000), Duration.ZERO));
         Lease writer = Support.patiently(() -> client.writeLock(name + "-write", Duration.ofMillis(1000), Duration.ZERO))) {
      long[] first = {reader.deadlineNanos(), writer.deadlineNanos()};
      Thread.sleep(2200);  // more than two ttls
      for (Lease lease : new Lease[] {reader, writer}) {
        lease.check();
        assertEquals(lease.token(), client.rwlockStatus(lease.name()).holders().get(0).token());
      }
      assertTrue(reader.deadlineNanos() - first[0] > 1_000_000_000L);
      assertTrue(writer.deadlineNanos() - first[1] > 1_000_000_000L);
    }
  }

  @Test
  @DisplayName("a lease whose keys were deleted is declared lost before its deadline, with not_held as the cause")
  void deletedKeys() throws Exception {
    try (Lease lease = Support.patiently(() -> client.lock(name, Duration.ofSeconds(1), Duration.ZERO))) {
      CompletableFuture<long[]> when = lostAt(lease);
      Support.deleteLockKeys(name);
      FencelockException why = lease.lost().get(2, TimeUnit.SECONDS);
      long[] at = when.get(1, TimeUnit.SECONDS);
      assertTrue(at[0] - at[1] < 0, "signalled after the deadline");
      assertEquals(FencelockException.LEASE_LOST, why.code());
      assertEquals(FencelockException.NOT_HELD, ((FencelockException) why.getCause()).code());
      assertTrue(lease.isLost());
      assertFalse(lease.isValid());
      assertEquals(FencelockException.LEASE_LOST, assertThrows(FencelockException.class, lease::check).code());
      assertFalse(why.getMessage().contains(lease.leaseString()));
    }
  }

  @Test
  @DisplayName("a paused service is signalled before the deadline")
  void pausedService() throws Exception {
    try (Lease lease = Support.patiently(() -> client.lock(name, Duration.ofSeconds(1), Duration.ZERO))) {
      CompletableFuture<long[]> when = lostAt(lease);
      long pid = Support.stackFencelockdPid();
      Support.run(java.util.List.of("kill", "-STOP", String.valueOf(pid)));
      try {
        lease.lost().get(2, TimeUnit.SECONDS);
        long[] at = when.get(1, TimeUnit.SECONDS);
        assertTrue(at[0] - at[1] < 0, "signalled after the deadline");
      } finally {
        Support.run(java.util.List.of("kill", "-CONT", String.valueOf(pid)));
        // Its Redis commands timed out while it was stopped: wait until it grants again.
        Support.waitUntil(() -> {
          try {
            client.status(name);
            return true;
          } catch (FencelockException e) {
            return false;
          }
        }, Duration.ofSeconds(10));
      }
    }
  }

  @Test
  @DisplayName("a renewal bound ends in the lost signal before the deadline")
  void bound() throws Exception {
    // A margin of 250 ms: the signal is handed to a worker thread, which a loaded machine (the
    // test command runs two client suites at once) may start late.
    Lease lease = Support.patiently(() -> client.acquire(name, Duration.ofMillis(900), Duration.ZERO));
    client.keep(lease, RenewOptions.defaults().withMaxRenewals(2).withLostMargin(Duration.ofMillis(250)));
    try (lease) {
      CompletableFuture<long[]> when = lostAt(lease);
      FencelockException why = lease.lost().get(6, TimeUnit.SECONDS);
      long[] at = when.get(1, TimeUnit.SECONDS);
      assertTrue(at[0] - at[1] < 0);
      assertTrue(why.getMessage().contains("bound"), why.getMessage());
      assertNull(why.getCause());
    }
  }

  @Test
  @DisplayName("bad renew options are refused and a lease is kept once")
  void badOptions() throws Exception {
    try (Lease lease = Support.patiently(() -> client.acquire(name, Duration.ofSeconds(2), Duration.ZERO))) {
      assertEquals(FencelockException.INVALID_REQUEST, assertThrows(FencelockException.class,
          () -> client.keep(lease, RenewOptions.defaults().withRenewWhenLeft(0.99))).code());
      client.keep(lease, RenewOptions.defaults());
      assertEquals(FencelockException.INVALID_REQUEST, assertThrows(FencelockException.class,
          () -> client.keep(lease, RenewOptions.defaults())).code());
    }
  }
}
