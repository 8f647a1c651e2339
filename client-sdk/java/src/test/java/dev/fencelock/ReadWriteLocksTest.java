package dev.fencelock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

@EnabledIfEnvironmentVariable(named = "FENCELOCK_ENDPOINT", matches = ".+")
class ReadWriteLocksTest {
  private static final Pattern kLeaseString = Pattern.compile("([0-9]+)\\.[0-9a-f]+\\.([rw])");

  FencelockClient client;
  String name;

  @BeforeEach
  void setUp() throws Exception {
    client = Support.client();
    name = Support.uniqueName("java-rw");
  }

  @AfterEach
  void tearDown() {
    client.close();
  }

  /** The mode letter a grant's lease string `<token>.<proof>.r|w` is bound to, checked against its token. */
  private static String modeOf(Lease lease) {
    Matcher parts = kLeaseString.matcher(lease.leaseString());
    assertTrue(parts.matches(), "a read/write lease string is <token>.<proof>.r or .w");
    assertEquals(lease.token(), Long.parseLong(parts.group(1)));
    return parts.group(2);
  }

  @Test
  @DisplayName("readers share a read/write lock with distinct tokens, and a writer refused meanwhile comes after them with a higher token")
  void readersThenAWriter() throws Exception {
    Lease first = Support.patiently(() -> client.acquireRead(name, Duration.ofSeconds(5), Duration.ZERO, "java-reader-1"));
    Lease second = Support.patiently(() -> client.acquireRead(name, Duration.ofSeconds(5), Duration.ZERO, "java-reader-2"));
    assertEquals(Lease.Kind.READ, first.kind());
    assertEquals("r", modeOf(first));
    assertEquals("r", modeOf(second));
    assertNotEquals(first.token(), second.token());
    RwLockStatus status = client.rwlockStatus(name);
    assertEquals(Optional.of(Lease.Kind.READ), status.mode());
    assertFalse(status.writerWaiting());
    assertEquals(Map.of(first.token(), Optional.of("java-reader-1"), second.token(), Optional.of("java-reader-2")),
        status.holders().stream().collect(Collectors.toMap(RwLockStatus.Holder::token, RwLockStatus.Holder::owner)));
    for (RwLockStatus.Holder holder : status.holders()) {
      assertTrue(holder.remaining().compareTo(Duration.ZERO) > 0 && holder.remaining().compareTo(Duration.ofSeconds(5)) <= 0);
    }
    FencelockException e = assertThrows(FencelockException.class,
        () -> Support.patiently(() -> client.acquireWrite(name, Duration.ofSeconds(1), Duration.ZERO)));
    assertEquals(FencelockException.LOCKED, e.code());
    long before = first.deadlineNanos();
    client.extend(first, Duration.ofSeconds(8));
    assertTrue(first.deadlineNanos() - before > 1_000_000_000L);
    assertTrue(first.release());
    assertTrue(second.release());

    Lease writer = Support.patiently(() -> client.acquireWrite(name, Duration.ofSeconds(5), Duration.ZERO, "java-writer"));
    assertEquals(Lease.Kind.WRITE, writer.kind());
    assertEquals("w", modeOf(writer));
    assertTrue(writer.token() > first.token() && writer.token() > second.token());
    status = client.rwlockStatus(name);
    assertEquals(new RwLockStatus(Optional.of(Lease.Kind.WRITE), List.of(new RwLockStatus.Holder(writer.token(),
        Optional.of("java-writer"), status.holders().get(0).remaining())), false), status);
    e = assertThrows(FencelockException.class,
        () -> Support.patiently(() -> client.acquireRead(name, Duration.ofSeconds(1), Duration.ZERO)));
    assertEquals(FencelockException.LOCKED, e.code());
    writer.extend();
    assertTrue(writer.release());
    assertFalse(client.release(writer));
    assertEquals(new RwLockStatus(Optional.empty(), List.of(), false), client.rwlockStatus(name));
  }

  @Test
  @DisplayName("a waiting writer keeps new readers out until it is served")
  void waitingWriter() throws Exception {
    Lease reader = Support.patiently(() -> client.acquireRead(name, Duration.ofSeconds(10), Duration.ZERO));
    ExecutorService background = Executors.newSingleThreadExecutor();
    try {
      Future<Lease> waiting = background.submit(
          () -> Support.patiently(() -> client.acquireWrite(name, Duration.ofSeconds(5), Duration.ofSeconds(5))));
      assertTrue(Support.waitUntil(() -> {
        try {
          RwLockStatus status = client.rwlockStatus(name);
          return status.writerWaiting() && status.mode().equals(Optional.of(Lease.Kind.READ));
        } catch (FencelockException e) {
          return false;
        }
      }, Duration.ofSeconds(3)), "the status never showed the writer waiting");
      FencelockException e = assertThrows(FencelockException.class,
          () -> Support.patiently(() -> client.acquireRead(name, Duration.ofSeconds(1), Duration.ZERO)));
      assertEquals(FencelockException.LOCKED, e.code());
      reader.close();
      try (Lease writer = waiting.get(5, TimeUnit.SECONDS)) {
        assertTrue(writer.token() > reader.token());
      }
      Support.patiently(() -> client.acquireRead(name, Duration.ofSeconds(1), Duration.ZERO)).close();
    } finally {
      background.shutdownNow();
    }
  }
}
