/*
 * A web backend that guards a PostgreSQL read-modify-write with a fencelock lease
 * (com.sun.net.httpserver, the fencelock Java client, JDBC).
 *
 *   POST /accounts/<id>/deposit  {"amount": 25}  ->  200 {"account": "<id>", "balance": 125, "token": 17}
 *   GET  /accounts/<id>                          ->  200 {"account": "<id>", "balance": 125}
 *   GET  /healthz                                ->  200 {"status": "ok"}
 *
 * A deposit takes lock "account-<id>" (renewed while it runs, released at the end), fences its
 * read of the row with the lease's token, writes the new balance guarded by the same token, and
 * answers 200 only once that write committed. If this process pauses long enough for the lease
 * to expire and another request takes the lock, the late write is refused by PostgreSQL (the row
 * already carries a newer token) and the caller gets 409 instead of a lost update.
 *
 * Configuration: FENCELOCK_ENDPOINT (comma-separated), FENCELOCK_API_KEY, FENCELOCK_CACERT as the
 * CLI reads them; JDBC_URL (jdbc:postgresql://HOST:PORT/DB?user=NAME); --listen HOST:PORT (default
 * 127.0.0.1:8000); --init-db creates the table.
 */
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.fencelock.FencedTable;
import dev.fencelock.FencelockClient;
import dev.fencelock.FencelockException;
import dev.fencelock.Lease;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Executors;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public final class DepositServer {
  static final String SCHEMA = "CREATE TABLE IF NOT EXISTS accounts ("
      + " id text PRIMARY KEY,"
      + " balance bigint NOT NULL DEFAULT 0,"  // a default: a fenced read may leave a placeholder row
      + " current_token bigint NOT NULL DEFAULT 0)";
  private static final Pattern ACCOUNT = Pattern.compile("/accounts/([A-Za-z0-9_-]{1,64})(/deposit)?");
  private static final Pattern AMOUNT = Pattern.compile("\\{\\s*\"amount\"\\s*:\\s*([1-9][0-9]{0,11})\\s*\\}");
  private static final int CONNECTIONS = 8;

  /** A deposit that cannot complete because this handler's lease is over. */
  private static final class Refused extends Exception {
    private static final long serialVersionUID = 1L;

    Refused(String message) {
      super(message);
    }
  }

  /** One JDBC connection (autocommit on) and the fenced table on it. */
  private record Db(Connection conn, FencedTable accounts) {}

  private final FencelockClient client;
  private final BlockingQueue<Db> pool = new ArrayBlockingQueue<>(CONNECTIONS);

  DepositServer(FencelockClient client, String jdbcUrl) throws SQLException, FencelockException {
    this.client = client;
    for (int i = 0; i < CONNECTIONS; ++i) {
      Connection conn = DriverManager.getConnection(jdbcUrl);
      pool.add(new Db(conn, FencedTable.open(conn, "accounts")));  // checks the schema once
    }
  }

  private String deposit(String account, long amount) throws Exception {
    Db db = pool.take();
    try (Lease lease = client.lock("account-" + account, Duration.ofSeconds(10), Duration.ofSeconds(5))) {
      // Fence the read: from now on an older holder's write to this row is refused.
      if (!db.accounts().fenceRead(account, lease.token()).applied()) {
        throw new Refused("a newer lease already touched this account; retry");
      }
      long balance = balanceOf(db.conn(), account) + amount;
      lease.check();  // lost already? don't bother writing (the token would stop it anyway)
      FencedTable.WriteResult written = db.accounts().update(account, Map.of("balance", balance),
          lease.token(), FencedTable.TokenRule.NEWER_OR_SAME, FencedTable.Commit.OWN_TRANSACTION);
      if (!written.applied()) {
        throw new Refused("the lease was lost before the write; nothing changed");
      }
      return "{\"account\":\"" + account + "\",\"balance\":" + balance + ",\"token\":" + lease.token() + "}";
    } finally {
      pool.put(db);
    }
  }

  private static long balanceOf(Connection conn, String account) throws SQLException {
    try (PreparedStatement select = conn.prepareStatement("SELECT balance FROM accounts WHERE id = ?")) {
      select.setString(1, account);
      try (ResultSet row = select.executeQuery()) {
        return row.next() ? row.getLong(1) : 0;
      }
    }
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      String path = exchange.getRequestURI().getRawPath();
      String method = exchange.getRequestMethod();
      if (path.equals("/healthz") && method.equals("GET")) {
        answer(exchange, 200, "{\"status\":\"ok\"}", null);
        return;
      }
      Matcher match = ACCOUNT.matcher(path);
      if (!match.matches()) {
        answer(exchange, 404, "{\"error\":\"no such path\"}", null);
        return;
      }
      String account = match.group(1);
      if (match.group(2) == null) {
        if (!method.equals("GET")) {
          answer(exchange, 405, "{\"error\":\"GET only\"}", null);
          return;
        }
        Db db = pool.take();
        try {
          answer(exchange, 200, "{\"account\":\"" + account + "\",\"balance\":" + balanceOf(db.conn(), account) + "}", null);
        } finally {
          pool.put(db);
        }
        return;
      }
      if (!method.equals("POST")) {
        answer(exchange, 405, "{\"error\":\"POST only\"}", null);
        return;
      }
      Matcher amount = AMOUNT.matcher(readBody(exchange.getRequestBody()));
      if (!amount.matches()) {
        answer(exchange, 400, "{\"error\":\"want a JSON body {\\\"amount\\\": N}, N from 1 to 999999999999\"}", null);
        return;
      }
      try {
        answer(exchange, 200, deposit(account, Long.parseLong(amount.group(1))), null);
      } catch (FencelockException e) {
        switch (e.code()) {
          case FencelockException.LOCKED -> answer(exchange, 409, "{\"error\":\"the account is busy; retry\"}",
              String.valueOf(Math.max(1, e.retryAfter().orElse(Duration.ofSeconds(1)).toSeconds())));
          case FencelockException.LEASE_LOST -> answer(exchange, 409, "{\"error\":\"the lease was lost; nothing changed\"}", null);
          case FencelockException.UNAVAILABLE, FencelockException.TRANSPORT ->
              answer(exchange, 503, "{\"error\":\"the lock service or the database is unavailable; retry\"}", "1");
          default -> {
            System.err.println("deposit failed: " + e);
            answer(exchange, 500, "{\"error\":\"internal error\"}", null);
          }
        }
      } catch (Refused e) {
        answer(exchange, 409, "{\"error\":\"" + e.getMessage() + "\"}", null);
      }
    } catch (Exception e) {
      System.err.println("request failed: " + e);
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      try {
        answer(exchange, 500, "{\"error\":\"internal error\"}", null);
      } catch (IOException | RuntimeException alreadyAnswered) {
        // the head was sent already
      }
    }
  }

  private static String readBody(InputStream in) throws IOException {
    byte[] body = in.readNBytes(1025);
    return body.length > 1024 ? "" : new String(body, StandardCharsets.UTF_8);
  }

  private static void answer(HttpExchange exchange, int status, String body, String retryAfter)
      throws IOException {
    byte[] data = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", "application/json");
    if (retryAfter != null) {
      exchange.getResponseHeaders().set("Retry-After", retryAfter);
    }
    exchange.sendResponseHeaders(status, data.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(data);
    }
  }

  public static void main(String[] args) throws Exception {
    String listen = "127.0.0.1:8000";
    boolean initDb = false;
    for (int i = 0; i < args.length; ++i) {
      if (args[i].equals("--listen") && i + 1 < args.length) {
        listen = args[++i];
      } else if (args[i].equals("--init-db")) {
        initDb = true;
      } else {
        System.err.println("usage: DepositServer [--listen HOST:PORT] [--init-db]");
        System.exit(2);
      }
    }
    String jdbcUrl = System.getenv("JDBC_URL");
    if (initDb) {
      try (Connection conn = DriverManager.getConnection(jdbcUrl); Statement ddl = conn.createStatement()) {
        ddl.execute(SCHEMA);
      }
    }
    DepositServer app = new DepositServer(FencelockClient.fromEnvironment(), jdbcUrl);
    int colon = listen.lastIndexOf(':');
    HttpServer server = HttpServer.create(
        new InetSocketAddress(listen.substring(0, colon), Integer.parseInt(listen.substring(colon + 1))), 64);
    server.createContext("/", app::handle);
    server.setExecutor(Executors.newFixedThreadPool(CONNECTIONS));
    server.start();
    System.out.println("java-backend: listening on http://" + listen);
  }
}
