/*
 * Runs DepositServer against the live stack (client-sdk/java/test.sh sets FENCELOCK_ENDPOINT,
 * JDBC_URL, FENCELOCK_EXAMPLE_PORT and FENCELOCK_EXAMPLE_CLASSPATH): concurrent deposits lose
 * nothing, and the write of a holder whose lease ran out while it was paused is refused.
 */
package dev.fencelock.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.fencelock.FencedTable;
import dev.fencelock.FencelockClient;
import dev.fencelock.Lease;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

@EnabledIfEnvironmentVariable(named = "FENCELOCK_EXAMPLE_CLASSPATH", matches = ".+")
class DepositServerTest {
  private static final String BASE = "http://127.0.0.1:" + System.getenv("FENCELOCK_EXAMPLE_PORT");
  private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private static Process server;

  record Answer(int status, String body) {
    long number(String field) {
      Matcher m = Pattern.compile("\"" + field + "\":(\\d+)").matcher(body);
      assertTrue(m.find(), body);
      return Long.parseLong(m.group(1));
    }
  }

  static Answer call(String method, String path, String body) throws Exception {
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(BASE + path)).timeout(Duration.ofSeconds(20));
    request.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
    HttpResponse<String> response = HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
    return new Answer(response.statusCode(), response.body());
  }

  /** A deposit, tried again (at most 10 times) while the backend answers busy or unavailable. */
  static Answer deposit(String account, long amount) throws Exception {
    Answer answer = null;
    for (int i = 0; i < 10; ++i) {
      answer = call("POST", "/accounts/" + account + "/deposit", "{\"amount\": " + amount + "}");
      if (answer.status() != 409 && answer.status() != 503) {
        break;
      }
      Thread.sleep(100);
    }
    return answer;
  }

  @BeforeAll
  static void start() throws Exception {
    String java = Path(System.getProperty("java.home"), "bin", "java");
    server = new ProcessBuilder(java, "-cp", System.getenv("FENCELOCK_EXAMPLE_CLASSPATH"), "DepositServer",
        "--listen", BASE.substring("http://".length()), "--init-db").inheritIO().start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (System.nanoTime() - deadline < 0) {
      try {
        if (call("GET", "/healthz", null).status() == 200) {
          return;
        }
      } catch (java.io.IOException notYet) {
        Thread.sleep(100);
      }
    }
    stop();
    throw new IllegalStateException("the example did not start within 15 s");
  }

  private static String Path(String first, String... more) {
    return java.nio.file.Path.of(first, more).toString();
  }

  @AfterAll
  static void stop() throws Exception {
    if (server != null) {
      server.destroy();
      if (!server.waitFor(5, TimeUnit.SECONDS)) {
        server.destroyForcibly();
        server.waitFor(5, TimeUnit.SECONDS);
      }
    }
  }

  @Test
  @DisplayName("concurrent deposits lose no update, each under its own grant, and every 200 is committed")
  void concurrentDeposits() throws Exception {
    String account = "acct-" + UUID.randomUUID().toString().substring(0, 8);
    List<Answer> answers = Collections.synchronizedList(new ArrayList<>());
    List<Thread> threads = new ArrayList<>();
    long expected = 0;
    for (int t = 0; t < 6; ++t) {
      final int first = t;
      Thread thread = new Thread(() -> {
        for (int i = first; i < 30; i += 6) {
          try {
            answers.add(deposit(account, i % 7 + 1));
          } catch (Exception e) {
            answers.add(new Answer(-1, e.toString()));
          }
        }
      });
      threads.add(thread);
      thread.start();
    }
    for (int i = 0; i < 30; ++i) {
      expected += i % 7 + 1;
    }
    for (Thread thread : threads) {
      thread.join(60000);
    }
    HashSet<Long> tokens = new HashSet<>();
    for (Answer answer : answers) {
      assertEquals(200, answer.status(), answer.body());
      tokens.add(answer.number("token"));
    }
    assertEquals(30, tokens.size(), "each deposit had its own lease");
    assertEquals(expected, call("GET", "/accounts/" + account, null).number("balance"));
    try (Connection conn = DriverManager.getConnection(System.getenv("JDBC_URL"))) {
      assertEquals(expected, FencedTable.open(conn, "accounts").currentToken(account).isPresent()
          ? balance(conn, account) : -1);
    }
  }

  private static long balance(Connection conn, String account) throws Exception {
    try (var select = conn.prepareStatement("SELECT balance FROM accounts WHERE id = ?")) {
      select.setString(1, account);
      try (var row = select.executeQuery()) {
        return row.next() ? row.getLong(1) : -1;
      }
    }
  }

  @Test
  @DisplayName("the write of a holder paused past its lease is refused as stale")
  void staleWriteRefused() throws Exception {
    String account = "acct-" + UUID.randomUUID().toString().substring(0, 8);
    FencelockClient client = FencelockClient.builder().endpoints(System.getenv("FENCELOCK_ENDPOINT")).build();
    try (Connection conn = DriverManager.getConnection(System.getenv("JDBC_URL"))) {
      FencedTable accounts = FencedTable.open(conn, "accounts");
      Lease paused = null;
      for (int i = 0; i < 10 && paused == null; ++i) {
        try {
          paused = client.acquire("account-" + account, Duration.ofMillis(200), Duration.ZERO);
        } catch (dev.fencelock.FencelockException e) {
          Thread.sleep(100);
        }
      }
      assertTrue(paused != null);
      assertTrue(accounts.fenceRead(account, paused.token()).applied());
      Thread.sleep(400);  // the lease runs out while its holder "pauses"
      Answer newer = deposit(account, 7);
      assertEquals(200, newer.status(), newer.body());
      assertTrue(newer.number("token") > paused.token());
      FencedTable.WriteResult stale = accounts.update(account, Map.of("balance", 1_000_000L), paused.token(),
          FencedTable.TokenRule.NEWER_OR_SAME, FencedTable.Commit.OWN_TRANSACTION);
      assertEquals(FencedTable.Outcome.STALE, stale.outcome());
      assertEquals(newer.number("token"), stale.currentToken());
      assertEquals(7, call("GET", "/accounts/" + account, null).number("balance"));
    } finally {
      client.close();
    }
  }

  @Test
  @DisplayName("bad requests are refused")
  void badRequests() throws Exception {
    assertEquals(400, call("POST", "/accounts/a/deposit", "{\"amount\": 0}").status());
    assertEquals(400, call("POST", "/accounts/a/deposit", "{\"amount\": \"5\"}").status());
    assertEquals(404, call("POST", "/accounts/a%20b/deposit", "{\"amount\": 1}").status());
    assertEquals(404, call("GET", "/nothing", null).status());
    assertEquals(405, call("GET", "/accounts/a/deposit", null).status());
  }
}
