package dev.fencelock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

@EnabledIfEnvironmentVariable(named = "JDBC_URL", matches = ".+")
class FencedTableTest {
  Connection conn;
  String table;

  @BeforeEach
  void setUp() throws Exception {
    conn = DriverManager.getConnection(Support.JDBC_URL);
    table = "acct_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    try (Statement s = conn.createStatement()) {
      s.execute("CREATE TABLE " + table + " (id text PRIMARY KEY, balance bigint NOT NULL DEFAULT 0,"
          + " current_token bigint NOT NULL DEFAULT 0)");
      s.execute("INSERT INTO " + table + " (id, balance) VALUES ('alice', 100)");
    }
  }

  @AfterEach
  void tearDown() throws Exception {
    conn.setAutoCommit(true);
    try (Statement s = conn.createStatement()) {
      s.execute("DROP TABLE IF EXISTS " + table);
    }
    conn.close();
  }

  private long balance(String id) throws Exception {
    try (Connection other = DriverManager.getConnection(Support.JDBC_URL);
        Statement s = other.createStatement();
        ResultSet rs = s.executeQuery("SELECT balance FROM " + table + " WHERE id = '" + id + "'")) {
      return rs.next() ? rs.getLong(1) : -1;
    }
  }

  @Test
  @DisplayName("a write with a newer token is applied and committed; an older or equal one is refused as stale")
  void appliedAndStale() throws Exception {
    FencedTable accounts = FencedTable.open(conn, table);
    FencedTable.WriteResult written = accounts.update("alice", "balance = balance + ?", List.of(20), 34,
        FencedTable.TokenRule.STRICTLY_NEWER, FencedTable.Commit.OWN_TRANSACTION);
    assertEquals(new FencedTable.WriteResult(FencedTable.Outcome.APPLIED, 34), written);
    assertEquals(120, balance("alice"), "committed: another connection sees it");
    assertEquals(new FencedTable.WriteResult(FencedTable.Outcome.STALE, 34),
        accounts.update("alice", Map.of("balance", 1_000_000L), 33));
    assertEquals(FencedTable.Outcome.STALE, accounts.update("alice", Map.of("balance", 1L), 34).outcome());
    assertEquals(FencedTable.Outcome.APPLIED, accounts.update("alice", Map.of("balance", 5L), 34,
        FencedTable.TokenRule.NEWER_OR_SAME, FencedTable.Commit.OWN_TRANSACTION).outcome());
    assertEquals(new FencedTable.WriteResult(FencedTable.Outcome.NO_SUCH_ROW, 0),
        accounts.update("nobody", Map.of("balance", 1L), 99));
    assertEquals(5, balance("alice"));
    assertTrue(conn.getAutoCommit(), "autocommit is restored");
  }

  @Test
  @DisplayName("the largest token fits, and is stored exactly")
  void largestToken() throws Exception {
    FencedTable accounts = FencedTable.open(conn, table);
    assertTrue(accounts.update("alice", Map.of("balance", 1L), Long.MAX_VALUE).applied());
    assertEquals(OptionalLong.of(Long.MAX_VALUE), accounts.currentToken("alice"));
    assertEquals(FencelockException.INVALID_REQUEST, assertThrows(FencelockException.class,
        () -> accounts.update("alice", Map.of("balance", 1L), 0)).code());
  }

  @Test
  @DisplayName("a fenced read raises the token, so that an older holder's later write is refused")
  void fencedRead() throws Exception {
    FencedTable accounts = FencedTable.open(conn, table);
    assertTrue(accounts.canHoldPlaceholder());
    assertTrue(accounts.fenceRead("alice", 33).applied());
    assertTrue(accounts.fenceRead("alice", 34).applied());
    assertEquals(FencedTable.Outcome.STALE, accounts.update("alice", Map.of("balance", 110L), 33,
        FencedTable.TokenRule.NEWER_OR_SAME, FencedTable.Commit.OWN_TRANSACTION).outcome());
    assertTrue(accounts.update("alice", Map.of("balance", 120L), 34,
        FencedTable.TokenRule.NEWER_OR_SAME, FencedTable.Commit.OWN_TRANSACTION).applied());
    // A missing row gets a placeholder: an older token cannot create it afterwards.
    assertTrue(accounts.fenceRead("bob", 50).applied());
    assertEquals(OptionalLong.of(50), accounts.currentToken("bob"));
    assertEquals(FencedTable.Outcome.STALE, accounts.fenceRead("bob", 49).outcome());
    assertEquals(120, balance("alice"));
  }

  @Test
  @DisplayName("autocommit off is refused unless the caller commits, and then the write lands at its commit only")
  void callerCommits() throws Exception {
    FencedTable accounts = FencedTable.open(conn, table);
    conn.setAutoCommit(false);
    assertEquals(FencelockException.INVALID_REQUEST, assertThrows(FencelockException.class,
        () -> accounts.update("alice", Map.of("balance", 1L), 40)).code());
    assertTrue(accounts.update("alice", Map.of("balance", 1L), 40, FencedTable.TokenRule.STRICTLY_NEWER,
        FencedTable.Commit.BY_CALLER).applied());
    conn.rollback();
    assertEquals(100, balance("alice"), "rolled back with the caller's transaction");
    assertTrue(accounts.update("alice", Map.of("balance", 2L), 41, FencedTable.TokenRule.STRICTLY_NEWER,
        FencedTable.Commit.BY_CALLER).applied());
    conn.commit();
    assertEquals(2, balance("alice"));
  }

  @Test
  @DisplayName("writers racing on their own connections, a missing row included, never see a token go back")
  void racingWriters() throws Exception {
    List<Thread> threads = new java.util.ArrayList<>();
    List<Throwable> errors = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
    List<Long> applied = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
    for (int t = 0; t < 6; ++t) {
      final int first = t;
      Thread thread = new Thread(() -> {
        try (Connection own = DriverManager.getConnection(Support.JDBC_URL)) {
          FencedTable accounts = FencedTable.open(own, table);
          for (long token = 100 + first; token < 160; token += 6) {
            FencedTable.WriteResult fenced = accounts.fenceRead("carol", token);
            if (fenced.applied() && accounts.update("carol", Map.of("balance", token), token,
                FencedTable.TokenRule.NEWER_OR_SAME, FencedTable.Commit.OWN_TRANSACTION).applied()) {
              applied.add(token);
            } else if (!fenced.applied()) {
              assertTrue(fenced.currentToken() > token, "stale means a newer token is on the row");
            }
          }
        } catch (Throwable e) {
          errors.add(e);
        }
      });
      threads.add(thread);
      thread.start();
    }
    for (Thread thread : threads) {
      thread.join(60000);
    }
    assertEquals(List.of(), errors);
    long last = applied.stream().mapToLong(Long::longValue).max().orElseThrow();
    assertEquals(OptionalLong.of(last), FencedTable.open(conn, table).currentToken("carol"));
    assertEquals(last, balance("carol"));
  }

  @Test
  @DisplayName("a failed call writes nothing and restores autocommit")
  void failedCall() throws Exception {
    FencedTable accounts = FencedTable.open(conn, table);
    FencelockException e = assertThrows(FencelockException.class,
        () -> accounts.update("alice", Map.of("balance", new Object()), 60));
    assertTrue(e.getCause() instanceof java.sql.SQLException, String.valueOf(e.getCause()));
    assertEquals(FencelockException.INVALID_REQUEST, assertThrows(FencelockException.class,
        () -> accounts.update("alice", "balance = ? + ?", List.of("x", 1), 61,
            FencedTable.TokenRule.STRICTLY_NEWER, FencedTable.Commit.OWN_TRANSACTION)).code());
    assertTrue(conn.getAutoCommit());
    assertEquals(100, balance("alice"));
    assertEquals(OptionalLong.of(0), accounts.currentToken("alice"));
  }

  @Test
  @DisplayName("the schema check names what is wrong")
  void schema() throws Exception {
    try (Statement s = conn.createStatement()) {
      s.execute("CREATE TABLE " + table + "_int (id text PRIMARY KEY, current_token integer NOT NULL DEFAULT 0)");
      s.execute("CREATE TABLE " + table + "_nokey (id text, current_token bigint NOT NULL DEFAULT 0)");
    }
    try {
      for (String[] bad : new String[][] {{"no_such_table_xyz", "no table"}, {table + "_int", "not bigint"},
          {table + "_nokey", "not unique"}, {"bad name", "identifier"}}) {
        FencelockException e = assertThrows(FencelockException.class, () -> FencedTable.open(conn, bad[0]));
        assertEquals(FencelockException.INVALID_REQUEST, e.code());
        assertTrue(e.getMessage().contains(bad[1]), e.getMessage());
      }
      FencedTable accounts = FencedTable.open(conn, table);
      assertEquals(FencelockException.INVALID_REQUEST, assertThrows(FencelockException.class,
          () -> accounts.update("alice", "balance = 1; DROP TABLE x", List.of(), 50,
              FencedTable.TokenRule.STRICTLY_NEWER, FencedTable.Commit.OWN_TRANSACTION)).code());
      assertEquals(FencelockException.INVALID_REQUEST, assertThrows(FencelockException.class,
          () -> accounts.update("alice", Map.of("current_token", 1L), 50)).code());
      assertFalse(accounts.currentToken("alice").isEmpty());
    } finally {
      try (Statement s = conn.createStatement()) {
        s.execute("DROP TABLE " + table + "_int");
        s.execute("DROP TABLE " + table + "_nokey");
      }
    }
  }
}
