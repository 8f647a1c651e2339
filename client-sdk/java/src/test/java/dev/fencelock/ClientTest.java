package dev.fencelock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

class ClientTest {
  private static String code(Executable call) {
    return assertThrows(FencelockException.class, call::run).code();
  }

  private static String requestIdOf(String body) throws Exception {
    @SuppressWarnings("unchecked")
    Map<String, Object> fields = (Map<String, Object>) Json.parse(body);
    return (String) fields.get("request_id");
  }

  interface Executable {
    void run() throws Exception;
  }

  interface GrantCall {
    Lease run(FencelockClient client) throws Exception;
  }

  @Nested
  class WithoutService {
    @Test
    @DisplayName("bad names, ttls, sets and permit counts are refused before anything is sent")
    void badArgumentsAreRefused() throws Exception {
      FencelockClient client = FencelockClient.builder().endpoints("http://127.0.0.1:" + Support.closedPort()).build();
      for (String bad : new String[] {"", ".", "..", "a/b", "a b", "x".repeat(201), "é", null}) {
        assertEquals("invalid_request", code(() -> client.acquire(bad, Duration.ofSeconds(1), Duration.ZERO)), bad);
      }
      assertEquals("invalid_request", code(() -> client.acquire("ok", Duration.ZERO, Duration.ZERO)));
      assertEquals("invalid_request", code(() -> client.acquire("ok", Duration.ofSeconds(1), Duration.ofSeconds(-1))));
      assertEquals("invalid_request", code(() -> client.acquireSet(List.of(), Duration.ofSeconds(1), Duration.ZERO)));
      assertEquals("invalid_request", code(() -> client.acquireSet(List.of("a", "a"), Duration.ofSeconds(1), Duration.ZERO)));
      assertEquals("invalid_request", code(() -> client.acquirePermit("ok", 65, Duration.ofSeconds(1), Duration.ZERO)));
      assertEquals("invalid_request", code(() -> client.acquirePermit("ok", 0, Duration.ofSeconds(1), Duration.ZERO)));
      assertEquals("invalid_request", code(() -> client.acquireRead("a/b", Duration.ofSeconds(1), Duration.ZERO)));
      assertEquals("invalid_request", code(() -> client.acquireWrite("ok", Duration.ZERO, Duration.ZERO)));
      assertEquals("invalid_request", code(() -> client.rwlockStatus("..")));
    }

    @Test
    @DisplayName("bad options are refused, naming the option")
    void badOptions() {
      assertEquals("invalid_request", code(() -> FencelockClient.builder().endpoints(List.of()).build()));
      assertEquals("invalid_request", code(() -> FencelockClient.builder().endpoints("ftp://x:1").build()));
      assertEquals("invalid_request", code(() -> FencelockClient.builder().endpoints("http://h:1/path").build()));
      assertEquals("invalid_request", code(() -> FencelockClient.builder().endpoints("http://h:99999").build()));
      assertEquals("invalid_request", code(() -> FencelockClient.builder().requestTimeout(Duration.ZERO).build()));
      assertEquals("invalid_request", code(() -> FencelockClient.builder().maxRetries(11).build()));
      assertEquals("invalid_request", code(() -> FencelockClient.builder().apiKey("has space").build()));
      assertEquals("invalid_request", code(() -> FencelockClient.builder().endpoints("http://h:1")
          .caFile(java.nio.file.Path.of("/nonexistent.pem")).build()));
    }

    @Test
    @DisplayName("the client reads the CLI's variables, and keeps the API key out of toString")
    void environment() throws Exception {
      FencelockClient client = FencelockClient.builder().fromEnvironment(Map.of(
          "FENCELOCK_ENDPOINT", "http://127.0.0.1:1, http://127.0.0.1:2",
          "FENCELOCK_API_KEY", "s3cret-key")).build();
      assertEquals("FencelockClient(endpoints=[http://127.0.0.1:1/, http://127.0.0.1:2/], apiKey=***)", client.toString());
      assertEquals("FencelockClient(endpoints=[http://127.0.0.1:8080/])",
          FencelockClient.builder().fromEnvironment(Map.of()).build().toString());
    }

    @Test
    @DisplayName("no endpoint reachable is a transport error, for safe calls and acquires alike")
    void transport() throws Exception {
      FencelockClient client = FencelockClient.builder().endpoints("http://127.0.0.1:" + Support.closedPort(),
          "http://127.0.0.1:" + Support.closedPort()).retryBackoff(Duration.ofMillis(1)).build();
      assertEquals("transport", code(() -> client.status("x")));
      assertEquals("transport", code(() -> client.acquire("x", Duration.ofSeconds(1), Duration.ZERO)));
    }

    @Test
    @DisplayName("tokens up to 2^63 - 1 arrive exactly; a token beyond 64 bits is an internal error, not a rounded one")
    void bigTokens() throws Exception {
      AtomicReference<String> answer = new AtomicReference<>();
      HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 8);
      server.createContext("/", exchange -> {
        byte[] body = answer.get().getBytes(StandardCharsets.UTF_8);
        exchange.sendResponseHeaders(200, body.length);
        exchange.getResponseBody().write(body);
        exchange.close();
      });
      server.start();
      try {
        FencelockClient client = FencelockClient.builder()
            .endpoints("http://127.0.0.1:" + server.getAddress().getPort()).build();
        for (long token : new long[] {9007199254740993L, Long.MAX_VALUE}) {
          answer.set("{\"name\":\"n\",\"lease\":\"" + token + ".ab\",\"token\":" + token
              + ",\"ttl_ms\":1000,\"validity_ms\":990,\"waited_ms\":0}");
          Lease lease = client.acquire("n", Duration.ofSeconds(1), Duration.ZERO);
          assertEquals(token, lease.token());
          answer.set("{\"name\":\"n\",\"token\":" + token + "}");
          assertEquals(token, client.currentToken("n"));
        }
        answer.set("{\"name\":\"n\",\"token\":9223372036854775808}");
        assertEquals("internal", code(() -> client.currentToken("n")));
        answer.set("{\"name\":\"n\",\"token\":1.0}");
        assertEquals("internal", code(() -> client.currentToken("n")));
      } finally {
        server.stop(0);
      }
    }

    @Test
    @DisplayName("a status reads the holder's token and owner, or nulls; an impossible one is an internal error")
    void statusHolder() throws Exception {
      AtomicReference<String> fields = new AtomicReference<>();
      HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 8);
      server.createContext("/", exchange -> {
        byte[] body = ("{\"name\":\"n\",\"held\":true,\"remaining_ms\":900,\"last_token\":9," + fields.get() + "}")
            .getBytes(StandardCharsets.UTF_8);
        exchange.sendResponseHeaders(200, body.length);
        exchange.getResponseBody().write(body);
        exchange.close();
      });
      server.start();
      try {
        FencelockClient client = FencelockClient.builder()
            .endpoints("http://127.0.0.1:" + server.getAddress().getPort()).build();
        fields.set("\"token\":9223372036854775807,\"owner\":\"billing-7\"");
        LockStatus status = client.status("n");
        assertEquals(Long.MAX_VALUE, status.token().getAsLong());
        assertEquals("billing-7", status.owner().orElseThrow());
        fields.set("\"token\":null,\"owner\":null");
        status = client.status("n");
        assertTrue(status.token().isEmpty() && status.owner().isEmpty());
        for (String bad : List.of("\"token\":0", "\"token\":-1", "\"token\":\"9\"", "\"token\":9223372036854775808",
            "\"owner\":7")) {
          fields.set(bad);
          assertEquals("internal", code(() -> client.status("n")), bad);
        }
      } finally {
        server.stop(0);
      }
    }

    @Test
    @DisplayName("a revoke that may have reached fencelockd is not sent again")
    void revokeNotRetried() throws Exception {
      java.util.concurrent.atomic.AtomicInteger requests = new java.util.concurrent.atomic.AtomicInteger();
      try (java.net.ServerSocket listener = new java.net.ServerSocket(0, 16, java.net.InetAddress.getLoopbackAddress())) {
        Thread server = new Thread(() -> {
          while (!listener.isClosed()) {
            try (java.net.Socket connection = listener.accept()) {
              connection.setSoTimeout(2000);
              if (connection.getInputStream().read(new byte[65536]) > 0) {
                requests.incrementAndGet();  // read, then closed unanswered: outcome unknown
              }
            } catch (java.io.IOException closed) {
              // the listener closed: the test is over
            }
          }
        });
        server.setDaemon(true);
        server.start();
        FencelockClient client = FencelockClient.builder()
            .endpoints("http://127.0.0.1:" + listener.getLocalPort(), "http://127.0.0.1:" + listener.getLocalPort())
            .retryBackoff(Duration.ofMillis(1)).build();
        assertEquals("transport", code(() -> client.revoke("x", Duration.ofSeconds(1))));
        assertEquals(1, requests.get(), "a second revoke would revoke the first one's grant");
      }
    }

    @Test
    @DisplayName("an answer over 1 MiB, or one whose body stops coming, ends as transport within the request's timeout")
    void hostileAnswers() throws Exception {
      HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 8);
      server.createContext("/v1/locks/huge", exchange -> {
        exchange.sendResponseHeaders(200, 0);  // chunked, without end
        byte[] spaces = new byte[64 * 1024];
        java.util.Arrays.fill(spaces, (byte) ' ');
        try {
          for (int i = 0; i < 64 * 1024; ++i) {  // 4 GiB unless the client stops reading
            exchange.getResponseBody().write(spaces);
          }
        } catch (java.io.IOException closed) {
          // the client gave up: what it should do
        }
        exchange.close();
      });
      server.createContext("/v1/locks/stalled", exchange -> {
        exchange.sendResponseHeaders(200, 100);
        exchange.getResponseBody().write('{');
        exchange.getResponseBody().flush();
        try {
          Thread.sleep(20_000);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        exchange.close();
      });
      server.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
      server.start();
      try {
        // One attempt: an acquire whose answer was lost would be asked again.
        FencelockClient client = FencelockClient.builder()
            .endpoints("http://127.0.0.1:" + server.getAddress().getPort())
            .requestTimeout(Duration.ofMillis(500)).maxRetries(0).build();
        for (String name : List.of("huge", "stalled")) {
          long started = System.nanoTime();
          assertEquals("transport", code(() -> client.acquire(name, Duration.ofSeconds(1), Duration.ZERO)), name);
          long tookMs = (System.nanoTime() - started) / 1_000_000;
          assertTrue(tookMs < 5_000, name + " took " + tookMs + " ms");
        }
      } finally {
        server.stop(0);
      }
    }

    @Test
    @DisplayName("an acquire whose answer was lost is asked again with the same request id")
    void lostAnswerAskedAgain() throws Exception {
      for (String given : java.util.Arrays.asList(null, "job-7:attempt/1")) {
        try (Support.RecordingServer server = new Support.RecordingServer(null, Support.REPEATED_GRANT)) {
          FencelockClient client = FencelockClient.builder().endpoints(server.url)
              .retryBackoff(Duration.ofMillis(1)).requestTimeout(Duration.ofSeconds(2)).build();
          Lease lease = client.acquire("x", Duration.ofSeconds(10), Duration.ZERO, null, given);
          assertEquals(5, lease.token());
          assertEquals("5.repeated", lease.leaseString());
          assertEquals(2, server.bodies.size());
          String first = requestIdOf(server.bodies.get(0));
          assertEquals(first, requestIdOf(server.bodies.get(1)));
          assertTrue(given == null ? first.matches("[0-9a-f]{32}") : first.equals(given), first);
        }
      }
    }

    @Test
    @DisplayName("each acquire call names a request of its own")
    void requestIdPerCall() throws Exception {
      try (Support.RecordingServer server = new Support.RecordingServer(Support.REPEATED_GRANT)) {
        FencelockClient client = FencelockClient.builder().endpoints(server.url).build();
        client.acquire("x", Duration.ofSeconds(10), Duration.ZERO);
        client.acquire("x", Duration.ofSeconds(10), Duration.ZERO);
        assertNotEquals(requestIdOf(server.bodies.get(0)), requestIdOf(server.bodies.get(1)));
      }
    }

    @Test
    @DisplayName("a lock set, a permit, a read/write grant or a revoke whose answer was lost is not asked again, nor an acquire answered 503")
    void otherGrantsNotAskedAgain() throws Exception {
      Map<String, GrantCall> grants = Map.of(
          "set", c -> c.acquireSet(List.of("a", "b"), Duration.ofSeconds(1), Duration.ZERO),
          "permit", c -> c.acquirePermit("s", 3, Duration.ofSeconds(1), Duration.ZERO),
          "read", c -> c.acquireRead("r", Duration.ofSeconds(1), Duration.ZERO),
          "write", c -> c.acquireWrite("r", Duration.ofSeconds(1), Duration.ZERO),
          "revoke", c -> c.revoke("x", Duration.ofSeconds(1)));
      for (Map.Entry<String, GrantCall> grant : grants.entrySet()) {
        try (Support.RecordingServer server = new Support.RecordingServer((String) null)) {
          FencelockClient client = FencelockClient.builder().endpoints(server.url)
              .retryBackoff(Duration.ofMillis(1)).requestTimeout(Duration.ofSeconds(2)).build();
          assertEquals("transport", code(() -> grant.getValue().run(client)), grant.getKey());
          assertEquals(1, server.bodies.size(), grant.getKey());
          assertFalse(server.bodies.get(0).contains("request_id"), grant.getKey());
        }
      }
      try (Support.RecordingServer server = new Support.RecordingServer(Support.httpAnswer(503,
          "{\"error\":{\"code\":\"unavailable\",\"message\":\"too few lock nodes\"}}"))) {
        FencelockClient client = FencelockClient.builder().endpoints(server.url).retryBackoff(Duration.ofMillis(1)).build();
        assertEquals("unavailable", code(() -> client.acquire("x", Duration.ofSeconds(1), Duration.ZERO)));
        assertEquals(1, server.bodies.size());
      }
    }

    @Test
    @DisplayName("a bad request id is refused before anything is sent")
    void badRequestId() throws Exception {
      FencelockClient client = FencelockClient.builder().endpoints("http://127.0.0.1:" + Support.closedPort()).build();
      for (String bad : new String[] {"", "has space", "x".repeat(65), "é", "tab\t"}) {
        assertEquals("invalid_request",
            code(() -> client.acquire("ok", Duration.ofSeconds(1), Duration.ZERO, null, bad)), bad);
      }
    }

    @Test
    @DisplayName("a listing page is asked for with its query values encoded, and read with exact tokens and empty owners")
    void listingPage() throws Exception {
      try (Support.RecordingServer server = new Support.RecordingServer(Support.httpAnswer(200,
          "{\"locks\":[{\"name\":\"inv-1\",\"token\":9223372036854775807,\"owner\":\"billing-7\",\"remaining_ms\":2500},"
          + "{\"name\":\"inv-2\",\"token\":null,\"owner\":null,\"remaining_ms\":0}],\"next\":\"2-1536-0\"}"),
          Support.httpAnswer(200, "{\"locks\":[],\"next\":null}"))) {
        FencelockClient client = FencelockClient.builder().endpoints(server.url).build();
        LockListing page = client.listLocks("inv-", 2, "1-0+x");
        assertEquals(new LockListing(List.of(
            new HeldLock("inv-1", java.util.OptionalLong.of(Long.MAX_VALUE), java.util.Optional.of("billing-7"),
                Duration.ofMillis(2500)),
            new HeldLock("inv-2", java.util.OptionalLong.empty(), java.util.Optional.empty(), Duration.ZERO)),
            java.util.Optional.of("2-1536-0")), page);
        assertEquals(new LockListing(List.of(), java.util.Optional.empty()), client.listLocks(null, 100, null));
        assertEquals(List.of("/v1/locks?limit=2&prefix=inv-&cursor=1-0%2Bx", "/v1/locks?limit=100"), server.targets);
        assertEquals("invalid_request", code(() -> client.listLocks("", 0, null)));
        assertEquals("invalid_request", code(() -> client.listLocks("", 1001, null)));
      }
    }

    @Test
    @DisplayName("a watch is asked for with its token and wait, read with changed and no lastToken, and refused before sending when bad")
    void watchAsked() throws Exception {
      try (Support.RecordingServer server = new Support.RecordingServer(Support.httpAnswer(200,
          "{\"name\":\"inv-1\",\"changed\":false,\"held\":true,\"remaining_ms\":2500,"
          + "\"token\":9223372036854775807,\"owner\":\"billing-7\"}"))) {
        FencelockClient client = FencelockClient.builder().endpoints(server.url).build();
        assertEquals("invalid_request", code(() -> client.watch("a/b", 1, Duration.ofSeconds(1))));
        assertEquals("invalid_request", code(() -> client.watch(null, 1)));
        assertEquals("invalid_request", code(() -> client.watch("ok", -1, Duration.ofSeconds(1))));
        assertEquals("invalid_request", code(() -> client.watch("ok", 1, Duration.ofSeconds(-1))));
        assertEquals("invalid_request", code(() -> client.watch("ok", 1, Duration.ofSeconds(3601))));
        assertEquals("invalid_request", code(() -> client.watch("ok", 1, null)));
        assertEquals(List.of(), server.targets);
        LockStatus watched = client.watch("inv-1", Long.MAX_VALUE, Duration.ofMillis(1500));
        assertEquals(new LockStatus(true, java.util.Optional.of(Duration.ofMillis(2500)), 0,
            java.util.OptionalLong.of(Long.MAX_VALUE), java.util.Optional.of("billing-7"), false), watched);
        client.watch("inv-1", 7);
        assertEquals(List.of("/v1/locks/inv-1?after_token=9223372036854775807&wait_ms=1500",
            "/v1/locks/inv-1?after_token=7&wait_ms=30000"), server.targets);
      }
      try (Support.RecordingServer server = new Support.RecordingServer(Support.httpAnswer(200, "{\"held\":true}"))) {
        FencelockClient client = FencelockClient.builder().endpoints(server.url).build();
        assertEquals("internal", code(() -> client.watch("x", 1, Duration.ZERO)), "an answer without changed");
      }
    }

    /** A read/write lock's grant in `mode`, its lease string `7.0a1b.r` or `.w`. */
    private String rwGrant(String mode) {
      return Support.httpAnswer(200, "{\"name\":\"x\",\"mode\":\"" + mode + "\",\"lease\":\"7.0a1b."
          + mode.charAt(0) + "\",\"token\":7,\"ttl_ms\":10000,\"validity_ms\":9000,\"waited_ms\":0}");
    }

    @Test
    @DisplayName("a read/write grant asks for its mode, and its lease string goes back to its own path to extend and release")
    void rwLeaseStringRoundTrip() throws Exception {
      for (String mode : List.of("read", "write")) {
        try (Support.RecordingServer server = new Support.RecordingServer(rwGrant(mode), rwGrant(mode),
            Support.httpAnswer(200, "{\"released\":true}"))) {
          FencelockClient client = FencelockClient.builder().endpoints(server.url).build();
          Lease lease = mode.equals("read")
              ? client.acquireRead("x", Duration.ofSeconds(10), Duration.ofSeconds(1), "o")
              : client.acquireWrite("x", Duration.ofSeconds(10), Duration.ofSeconds(1), "o");
          assertEquals(mode.equals("read") ? Lease.Kind.READ : Lease.Kind.WRITE, lease.kind());
          assertEquals(7, lease.token());
          client.extend(lease, Duration.ofSeconds(20));
          assertTrue(lease.release());
          assertEquals(List.of("POST", "POST", "DELETE"), server.methods, mode);
          assertEquals(List.of("/v1/rwlocks/x", "/v1/rwlocks/x/extend", "/v1/rwlocks/x"), server.targets, mode);
          assertEquals(Map.of("mode", mode, "ttl_ms", 10000L, "wait_ms", 1000L, "owner", "o"),
              Json.parse(server.bodies.get(0)), mode);
          assertEquals(Map.of("lease", lease.leaseString(), "ttl_ms", 20000L), Json.parse(server.bodies.get(1)), mode);
          assertEquals(Map.of("lease", lease.leaseString()), Json.parse(server.bodies.get(2)), mode);
        }
      }
    }

    @Test
    @DisplayName("a read/write grant of another mode than the one asked for is released and refused")
    void rwModeMismatch() throws Exception {
      try (Support.RecordingServer server = new Support.RecordingServer(rwGrant("write"),
          Support.httpAnswer(200, "{\"released\":true}"))) {
        FencelockClient client = FencelockClient.builder().endpoints(server.url).build();
        assertEquals("internal", code(() -> client.acquireRead("x", Duration.ofSeconds(1), Duration.ZERO)));
        assertEquals(List.of("POST", "DELETE"), server.methods);
        assertEquals(Map.of("lease", "7.0a1b.w"), Json.parse(server.bodies.get(1)));
      }
    }

    @Test
    @DisplayName("a read/write lock's status reads its mode, holders and waiting writer; an impossible one is an internal error")
    void rwStatus() throws Exception {
      try (Support.RecordingServer server = new Support.RecordingServer(Support.httpAnswer(200,
          "{\"name\":\"x\",\"mode\":\"read\",\"holders\":[{\"token\":9223372036854775807,\"owner\":\"a\",\"remaining_ms\":900},"
          + "{\"token\":8,\"owner\":null,\"remaining_ms\":0}],\"writer_waiting\":true}"),
          Support.httpAnswer(200, "{\"name\":\"x\",\"mode\":null,\"holders\":[],\"writer_waiting\":false}"))) {
        FencelockClient client = FencelockClient.builder().endpoints(server.url).build();
        assertEquals(new RwLockStatus(java.util.Optional.of(Lease.Kind.READ), List.of(
            new RwLockStatus.Holder(Long.MAX_VALUE, java.util.Optional.of("a"), Duration.ofMillis(900)),
            new RwLockStatus.Holder(8, java.util.Optional.empty(), Duration.ZERO)), true), client.rwlockStatus("x"));
        assertEquals(new RwLockStatus(java.util.Optional.empty(), List.of(), false), client.rwlockStatus("x"));
        assertEquals(List.of("/v1/rwlocks/x", "/v1/rwlocks/x"), server.targets);
      }
      for (String bad : List.of("{\"mode\":null,\"writer_waiting\":false}", "{\"mode\":null,\"holders\":[]}",
          "{\"mode\":\"exclusive\",\"holders\":[],\"writer_waiting\":false}",
          "{\"mode\":\"read\",\"holders\":[{\"token\":0,\"remaining_ms\":1}],\"writer_waiting\":false}",
          "{\"mode\":\"read\",\"holders\":[{\"token\":3}],\"writer_waiting\":false}",
          "{\"mode\":\"read\",\"holders\":[{\"token\":3,\"owner\":7,\"remaining_ms\":1}],\"writer_waiting\":false}")) {
        try (Support.RecordingServer server = new Support.RecordingServer(Support.httpAnswer(200, bad))) {
          FencelockClient client = FencelockClient.builder().endpoints(server.url).build();
          assertEquals("internal", code(() -> client.rwlockStatus("x")), bad);
        }
      }
    }

    @Test
    @DisplayName("the lease string stays out of toString")
    void secret() throws Exception {
      Lease lease = new Lease(FencelockClient.builder().build(), Lease.Kind.LOCK, List.of("n"),
          Map.of("n", 7L), 7, 0, 0, "7.topsecretproof", Duration.ofSeconds(1), System.nanoTime() + 1_000_000_000L);
      assertFalse(lease.toString().contains("topsecretproof"));
      assertTrue(lease.toString().contains("token=7"));
    }
  }

  @Nested
  @EnabledIfEnvironmentVariable(named = "FENCELOCK_ENDPOINT", matches = ".+")
  class AgainstTheService {
    FencelockClient client;
    String name;

    @BeforeEach
    void setUp() throws Exception {
      client = Support.client();
      name = Support.uniqueName("java-client");
    }

    @AfterEach
    void tearDown() {
      client.close();
    }

    @Test
    @DisplayName("acquire, status, extend, release and tokens")
    void lifecycle() throws Exception {
      long before = System.nanoTime();
      Lease lease = Support.patiently(() -> client.acquire(name, Duration.ofSeconds(2), Duration.ZERO, "java-tests"));
      long after = System.nanoTime();
      assertTrue(lease.token() > 0);
      assertEquals(Duration.ofSeconds(2), lease.ttl());
      assertTrue(lease.deadlineNanos() - (after + 2_000_000_000L) <= 0, "conservative deadline");
      assertTrue(lease.deadlineNanos() - (before + 1_500_000_000L) > 0);
      assertTrue(lease.isValid());
      lease.check();
      LockStatus status = client.status(name);
      assertTrue(status.held());
      assertTrue(status.remaining().orElseThrow().compareTo(Duration.ofSeconds(2)) <= 0);
      assertEquals(lease.token(), status.lastToken());
      assertEquals(lease.token(), status.token().getAsLong());
      assertEquals("java-tests", status.owner().orElseThrow());
      assertEquals(lease.token(), client.currentToken(name));
      long oldDeadline = lease.deadlineNanos();
      client.extend(lease, Duration.ofSeconds(5));
      assertEquals(Duration.ofSeconds(5), lease.ttl());
      assertTrue(lease.deadlineNanos() - oldDeadline > 2_000_000_000L);
      assertTrue(lease.release());
      assertFalse(lease.release(), "a second release asks nothing");
      assertFalse(client.release(lease), "release is idempotent");
      assertFalse(client.status(name).held());
      assertTrue(client.status(name).remaining().isEmpty());
      assertTrue(client.status(name).token().isEmpty());
      assertTrue(client.status(name).owner().isEmpty());
      long drawn = client.nextToken(name);
      assertTrue(drawn > lease.token());
      assertEquals(drawn, client.currentToken(name));
      try (Lease next = Support.patiently(() -> client.acquire(name, Duration.ofSeconds(1), Duration.ZERO))) {
        assertTrue(next.token() > drawn);
      }
      assertFalse(client.status(name).held(), "close released it");
    }

    @Test
    @DisplayName("revoke takes a held lock with a newer token: the old lease is not held, status shows the revoker")
    void revokeHeld() throws Exception {
      Lease stuck = Support.patiently(() -> client.acquire(name, Duration.ofSeconds(30), Duration.ZERO, "stuck-job"));
      try (Lease revoker = Support.patiently(() -> client.revoke(name, Duration.ofSeconds(5), "ops-oncall"))) {
        assertTrue(revoker.token() > stuck.token());
        assertEquals(Lease.Kind.LOCK, revoker.kind());
        assertEquals(name, revoker.name());
        assertEquals(Duration.ofSeconds(5), revoker.ttl());
        assertTrue(revoker.isValid());
        assertTrue(revoker.deadlineNanos() - (System.nanoTime() + 5_000_000_000L) <= 0, "conservative deadline");
        FencelockException e = assertThrows(FencelockException.class, () -> client.extend(stuck, Duration.ofSeconds(30)));
        assertEquals(FencelockException.NOT_HELD, e.code());
        assertFalse(client.release(stuck));
        LockStatus status = client.status(name);
        assertTrue(status.held());
        assertEquals(revoker.token(), status.token().getAsLong());
        assertEquals("ops-oncall", status.owner().orElseThrow());
        client.extend(revoker, Duration.ofSeconds(10));  // a lease like any other
        assertEquals(Duration.ofSeconds(10), revoker.ttl());
      }
      assertFalse(client.status(name).held(), "close released the revoker's lease");
    }

    @Test
    @DisplayName("revoke of a free lock takes it")
    void revokeFree() throws Exception {
      long before = client.currentToken(name);
      try (Lease lease = client.keep(Support.patiently(() -> client.revoke(name, Duration.ofSeconds(5))),
          RenewOptions.defaults())) {
        assertTrue(lease.token() > before);
        LockStatus status = client.status(name);
        assertTrue(status.held());
        assertEquals(lease.token(), status.token().getAsLong());
        assertTrue(status.owner().isEmpty());
        assertEquals(FencelockException.LOCKED, code(() -> client.acquire(name, Duration.ofSeconds(1), Duration.ZERO)));
      }
      assertFalse(client.status(name).held());
    }

    @Test
    @DisplayName("a held lock is refused as locked, with retry_after and the request id")
    void locked() throws Exception {
      try (Lease holder = Support.patiently(() -> client.acquire(name, Duration.ofSeconds(5), Duration.ZERO))) {
        FencelockException e = assertThrows(FencelockException.class,
            () -> Support.patiently(() -> client.acquire(name, Duration.ofSeconds(1), Duration.ZERO)));
        assertEquals(FencelockException.LOCKED, e.code());
        assertEquals(409, e.httpStatus());
        assertTrue(e.retryAfter().orElseThrow().compareTo(Duration.ofMillis(5001)) <= 0);
        assertTrue(e.requestId().orElseThrow().matches("[0-9a-f]{16}"));
        assertFalse(e.getMessage().contains(holder.leaseString()));
      }
    }

    @Test
    @DisplayName("a waiting acquire gets the lock when it is released, and its deadline counts the wait")
    void waits() throws Exception {
      Lease first = Support.patiently(() -> client.acquire(name, Duration.ofSeconds(10), Duration.ZERO));
      Thread releaser = new Thread(() -> {
        try {
          Thread.sleep(300);
          first.close();
        } catch (InterruptedException ignored) {
          Thread.currentThread().interrupt();
        }
      });
      releaser.start();
      long started = System.nanoTime();
      try (Lease second = Support.patiently(() -> client.acquire(name, Duration.ofSeconds(2), Duration.ofSeconds(5)))) {
        assertTrue(System.nanoTime() - started < 4_000_000_000L);
        assertTrue(second.token() > first.token());
        assertTrue(second.deadlineNanos() - (System.nanoTime() + 2_000_000_000L) <= 0);
      } finally {
        releaser.join(5000);
      }
    }

    @Test
    @DisplayName("a watch of a held lock is woken when another client releases it")
    void watchWoken() throws Exception {
      Lease held = Support.patiently(() -> client.acquire(name, Duration.ofSeconds(30), Duration.ZERO));
      try (FencelockClient other = Support.client()) {
        Thread releaser = new Thread(() -> {
          try {
            Thread.sleep(500);
            other.release(held);
          } catch (InterruptedException ignored) {
            Thread.currentThread().interrupt();
          } catch (FencelockException e) {
            throw new AssertionError(e);
          }
        });
        releaser.start();
        long started = System.nanoTime();
        try {
          LockStatus watched = client.watch(name, held.token(), Duration.ofSeconds(20));
          assertTrue(System.nanoTime() - started < 5_000_000_000L, "woken by the release, not by the wait");
          assertTrue(watched.changed());
          assertFalse(watched.held());
          assertTrue(watched.token().isEmpty() && watched.remaining().isEmpty() && watched.owner().isEmpty());
        } finally {
          releaser.join(5000);
        }
      }
    }

    @Test
    @DisplayName("a watch whose wait runs out answers the lock unchanged, however short the request timeout")
    void watchUnchanged() throws Exception {
      try (Lease held = Support.patiently(() -> client.acquire(name, Duration.ofSeconds(30), Duration.ZERO, "java-watch"));
          FencelockClient quick = FencelockClient.builder().endpoints(Support.ENDPOINT)
              .requestTimeout(Duration.ofMillis(500)).build()) {
        long started = System.nanoTime();
        LockStatus watched = quick.watch(name, held.token(), Duration.ofMillis(1500));
        assertTrue(System.nanoTime() - started >= 1_400_000_000L, "the watch waited");
        assertFalse(watched.changed());
        assertTrue(watched.held());
        assertEquals(held.token(), watched.token().getAsLong());
        assertEquals("java-watch", watched.owner().orElseThrow());
        assertEquals(0, watched.lastToken());
      }
    }

    @Test
    @DisplayName("a watch of another token, or of a free lock, answers at once")
    void watchAtOnce() throws Exception {
      long started = System.nanoTime();
      LockStatus free = client.watch(name, 1, Duration.ofSeconds(20));
      assertTrue(free.changed() && !free.held() && free.token().isEmpty());
      try (Lease held = Support.patiently(() -> client.acquire(name, Duration.ofSeconds(30), Duration.ZERO))) {
        LockStatus other = client.watch(name, held.token() + 1, Duration.ofSeconds(20));
        assertTrue(other.changed() && other.held());
        assertEquals(held.token(), other.token().getAsLong());
      }
      assertTrue(System.nanoTime() - started < 5_000_000_000L);
    }

    @Test
    @DisplayName("extending an expired lease is not_held; the service refuses a ttl over its maximum")
    void notHeldAndInvalid() throws Exception {
      Lease lease = Support.patiently(() -> client.acquire(name, Duration.ofMillis(200), Duration.ZERO));
      Thread.sleep(400);
      FencelockException e = assertThrows(FencelockException.class, () -> client.extend(lease, Duration.ofSeconds(1)));
      assertEquals(FencelockException.NOT_HELD, e.code());
      assertFalse(client.release(lease));
      e = assertThrows(FencelockException.class, () -> client.acquire(name, Duration.ofSeconds(3601), Duration.ZERO));
      assertEquals(FencelockException.INVALID_REQUEST, e.code());
      assertEquals(400, e.httpStatus());
    }

    @Test
    @DisplayName("the same request id answers the same grant while it is held; another id is refused as locked")
    void sameRequestId() throws Exception {
      String first = Support.uniqueName("java-request");
      Lease lease = Support.patiently(() -> client.acquire(name, Duration.ofSeconds(5), Duration.ZERO, null, first));
      Lease again = Support.patiently(() -> client.acquire(name, Duration.ofSeconds(5), Duration.ZERO, null, first));
      assertEquals(lease.leaseString(), again.leaseString());
      assertEquals(lease.token(), again.token());
      assertEquals(FencelockException.LOCKED, code(() -> client.acquire(name, Duration.ofSeconds(5), Duration.ZERO, null,
          Support.uniqueName("java-request"))));
      assertTrue(again.release());
      try (Lease fresh = Support.patiently(() -> client.acquire(name, Duration.ofSeconds(5), Duration.ZERO, null, first))) {
        assertTrue(fresh.token() > lease.token(), "released: the same id is a new acquire");
      }
    }

    @Test
    @DisplayName("listLocks pages through the held locks of a prefix, with their tokens and owners")
    void listLocks() throws Exception {
      String prefix = name + ".";
      Map<String, List<Object>> held = new java.util.HashMap<>();
      List<Lease> leases = new java.util.ArrayList<>();
      try {
        for (int i = 0; i < 5; ++i) {
          String owner = i % 2 == 0 ? "java-owner-" + i : null;
          String each = prefix + i;
          Lease lease = Support.patiently(() -> client.acquire(each, Duration.ofSeconds(30), Duration.ZERO, owner));
          leases.add(lease);
          held.put(each, List.of(lease.token(), java.util.Optional.ofNullable(owner)));
        }
        leases.add(Support.patiently(() -> client.acquire(name + "-other", Duration.ofSeconds(30), Duration.ZERO)));
        Map<String, List<Object>> listed = new java.util.HashMap<>();
        String cursor = null;
        for (int pages = 0; pages < 100; ++pages) {
          LockListing page = client.listLocks(prefix, 2, cursor);
          for (HeldLock lock : page.locks()) {
            listed.put(lock.name(), List.of(lock.token().getAsLong(), lock.owner()));
            assertTrue(!lock.remaining().isNegative() && lock.remaining().compareTo(Duration.ofSeconds(30)) <= 0);
          }
          cursor = page.next().orElse(null);
          if (cursor == null) {
            break;
          }
        }
        assertEquals(null, cursor, "the listing ends");
        assertEquals(held, listed);
      } finally {
        for (Lease lease : leases) {
          lease.close();
        }
      }
    }

    @Test
    @DisplayName("the next endpoint answers when the first is a closed port")
    void failover() throws Exception {
      FencelockClient both = FencelockClient.builder()
          .endpoints("http://127.0.0.1:" + Support.closedPort(), Support.ENDPOINT)
          .retryBackoff(Duration.ofMillis(10)).build();
      Lease lease = Support.patiently(() -> both.acquire(name, Duration.ofSeconds(2), Duration.ZERO));
      assertTrue(both.status(name).held());
      both.extend(lease, Duration.ofSeconds(2));
      assertTrue(both.release(lease));
      FencelockClient again = FencelockClient.builder()
          .endpoints("http://127.0.0.1:" + Support.closedPort(), Support.ENDPOINT)
          .retryBackoff(Duration.ofMillis(10)).build();
      Lease revoker = Support.patiently(() -> again.revoke(name, Duration.ofSeconds(2)));  // not sent: retried
      assertTrue(again.release(revoker));
    }

    @Test
    @DisplayName("an interrupted waiting acquire ends as cancelled, and leaves no lock behind")
    void interrupted() throws Exception {
      Lease holder = Support.patiently(() -> client.acquire(name, Duration.ofSeconds(10), Duration.ZERO));
      AtomicReference<Object> outcome = new AtomicReference<>();
      Thread waiter = new Thread(() -> {
        try {
          outcome.set(client.acquire(name, Duration.ofSeconds(10), Duration.ofSeconds(8)));
        } catch (FencelockException e) {
          outcome.set(e.code() + (Thread.currentThread().isInterrupted() ? "+interrupted" : ""));
        }
      });
      waiter.start();
      Thread.sleep(300);
      waiter.interrupt();
      waiter.join(3000);
      assertFalse(waiter.isAlive(), "the acquire did not end when interrupted");
      assertEquals("cancelled+interrupted", outcome.get());
      Thread.sleep(200);  // fencelockd notices the closed connection and stops waiting
      assertTrue(holder.release());
      Thread.sleep(300);
      assertFalse(client.status(name).held(), "the cancelled acquire was granted after all");
    }

    @Test
    @DisplayName("an acquire interrupted at any moment leaves no lock behind: a grant that arrives anyway is released")
    void interruptedAnyTime() throws Exception {
      int rounds = 200;
      int granted = 0;
      for (int i = 0; i < rounds; ++i) {
        String each = name + "-" + i;
        AtomicReference<Object> outcome = new AtomicReference<>();
        Thread caller = new Thread(() -> {
          try {
            outcome.set(client.acquire(each, Duration.ofSeconds(30), Duration.ZERO));
          } catch (FencelockException e) {
            outcome.set(e);
          }
        });
        caller.start();
        long until = System.nanoTime() + java.util.concurrent.ThreadLocalRandom.current().nextLong(3_000_000);
        while (System.nanoTime() - until < 0) {
          Thread.onSpinWait();
        }
        caller.interrupt();
        caller.join(10_000);
        if (outcome.get() instanceof Lease) {
          ++granted;
          ((Lease) outcome.get()).close();
        }
      }
      List<String> held = new java.util.ArrayList<>();
      for (int i = 0; i < rounds; ++i) {
        String each = name + "-" + i;
        if (!Support.waitUntil(() -> {
          try {
            return !client.status(each).held();
          } catch (FencelockException e) {
            return false;
          }
        }, Duration.ofSeconds(3))) {
          held.add(each);
        }
      }
      assertEquals(List.of(), held, "held after their acquires were interrupted (" + granted + " returned a lease)");
    }

    @Test
    @DisplayName("a lease closed on an interrupted thread is released, and the interrupt status stays set")
    void closedWhileInterrupted() throws Exception {
      AtomicReference<Object> outcome = new AtomicReference<>();
      Thread worker = new Thread(() -> {
        try (Lease lease = client.lock(name, Duration.ofSeconds(30), Duration.ZERO)) {
          lease.check();
          Thread.currentThread().interrupt();  // as Future.cancel(true) during the work would
        } catch (FencelockException e) {
          outcome.set(e);
        }
        if (outcome.get() == null) {
          outcome.set(Thread.currentThread().isInterrupted());
        }
      });
      worker.start();
      worker.join(10_000);
      assertEquals(Boolean.TRUE, outcome.get());
      assertFalse(client.status(name).held(), "the lock stayed held until its ttl");
    }

    @Test
    @DisplayName("a connection idle past idleReuseLimit is not used for an acquire")
    void idleConnections() throws Exception {
      try (Support.OwnFencelockd own = new Support.OwnFencelockd(Support.SPARE_PORT_BASE + 4,
          List.of("--idle-timeout", "1s"))) {
        FencelockClient fresh = FencelockClient.builder().endpoints("http://127.0.0.1:" + own.port)
            .maxRetries(0).idleReuseLimit(Duration.ofMillis(500)).build();
        assertEquals(FencelockException.UNAVAILABLE, code(() -> fresh.status(name)));
        Thread.sleep(1500);  // fencelockd closes the idle keep-alive connection
        // Were the closed connection used, the acquire would be maybe-delivered: transport.
        assertEquals(FencelockException.UNAVAILABLE, code(() -> fresh.acquire(name, Duration.ofSeconds(1), Duration.ZERO)));
      }
    }

    @Test
    @DisplayName("one client serves many threads")
    void threads() throws Exception {
      List<Thread> threads = new java.util.ArrayList<>();
      List<Throwable> errors = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
      for (int i = 0; i < 6; ++i) {
        String each = name + "-" + i;
        Thread t = new Thread(() -> {
          try {
            for (int j = 0; j < 4; ++j) {
              try (Lease lease = Support.patiently(() -> client.acquire(each, Duration.ofSeconds(2), Duration.ofSeconds(2)))) {
                assertNotEquals(0, lease.token());
              }
            }
            assertTrue(client.currentToken(each) >= 4);
          } catch (Throwable e) {
            errors.add(e);
          }
        });
        threads.add(t);
        t.start();
      }
      for (Thread t : threads) {
        t.join(30000);
      }
      assertEquals(List.of(), errors);
    }
  }
}
