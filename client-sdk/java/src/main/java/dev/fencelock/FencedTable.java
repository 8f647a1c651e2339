/*
 * Guarded (fenced) writes over JDBC: the resource side of fencing tokens.
 *
 * A lease can end while its holder is paused (a GC pause, a stalled VM) and the holder cannot
 * notice: it wakes up and writes as if it still held the lock. Only the storage can refuse that
 * write. A protected row remembers the newest token that touched it, and a write is applied only
 * if the row has not seen a newer token — the check and the write in ONE statement, so that no
 * other writer can come between them:
 *
 *   UPDATE t SET <assignments>, current_token = ? WHERE id = ? AND current_token < ?
 *
 * Same contract as the C++ FencedTable and fencelock.postgres (docs/sdk.md, "Fencing your
 * database"): a read-modify-write fences its read first (fenceRead raises the row's token,
 * inserting a placeholder row when the key has none and the table can hold one), and the write
 * after a fenced read uses NEWER_OR_SAME. Driver-agnostic: plain java.sql, the schema checked
 * through DatabaseMetaData, names quoted with the driver's quote string, every value a parameter;
 * tested on PostgreSQL 15 with Debian's PostgreSQL JDBC driver.
 *
 * APPLIED means committed. By default a call runs in a transaction of its own on a connection in
 * autocommit mode and commits it before it returns APPLIED; a failed commit is an error, never
 * APPLIED. A connection with autocommit off may have a transaction of the caller's open that this
 * call would not commit, so the call refuses (invalid_request) and touches nothing, unless it is
 * told Commit.BY_CALLER: it then joins the caller's transaction, APPLIED means applied in it, and
 * the write lands at the caller's commit or not at all. Serialization failures and deadlocks
 * (SQLSTATE 40001, 40P01) of a call's own transaction are retried up to 10 attempts, with a
 * random pause of up to 20 ms; in the caller's transaction they come back as unavailable at once.
 *
 * Errors (FencelockException): invalid_request (a bad name, token or assignment, a table that
 * fails the schema check, a violated constraint, autocommit off without BY_CALLER), unavailable
 * (serialization failure, deadlock, lock not available, lost connection: retry), internal (any
 * other database error). The SQLException is the cause.
 *
 * Thread safety: as the Connection's — one thread at a time.
 */
package dev.fencelock;

import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.regex.Pattern;

/** Guarded writes to one table through one JDBC Connection (borrowed, not closed). */
public final class FencedTable {
  /** Which stored tokens a guarded statement may overwrite. Tokens are unique per grant. */
  public enum TokenRule {
    /** stored &lt; token: each lease writes a row once. The default for update. */
    STRICTLY_NEWER("<"),
    /** stored &lt;= token: the same lease may touch the row again (after a fenced read). */
    NEWER_OR_SAME("<=");

    final String operator;

    TokenRule(String operator) {
      this.operator = operator;
    }
  }

  /** Who commits the write. */
  public enum Commit {
    /** A transaction of the call's own, committed before it returns (autocommit connections). */
    OWN_TRANSACTION,
    /** The caller's transaction: APPLIED means applied in it; the caller commits. */
    BY_CALLER
  }

  public enum Outcome {
    /** The row now carries the caller's token (and its values). */
    APPLIED,
    /** Refused: the row carries a token the rule does not let go. Stop; do not retry with this token. */
    STALE,
    /** No row has this key; nothing was written. */
    NO_SUCH_ROW
  }

  /**
   * What a guarded call did, and the row's token after it: the caller's when APPLIED, the one
   * that won when STALE, 0 when NO_SUCH_ROW.
   */
  public record WriteResult(Outcome outcome, long currentToken) {
    public boolean applied() {
      return outcome == Outcome.APPLIED;
    }
  }

  public static final int MAX_ATTEMPTS = 10;
  private static final Pattern kIdentifier = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}");
  private static final String[] kForbidden = {";", "--", "/*", "'", "\"", "$", "\\"};

  private final Connection conn;
  private final String table;
  private final String keyColumn;
  private final String tokenColumn;
  private final String quotedTable;
  private final String quotedKey;
  private final String quotedToken;
  private final String quote;
  private final boolean canHoldPlaceholder;

  /** Signals a placeholder insert that lost a race to another inserter: the next attempt sees its row. */
  private static final class Raced extends Exception {
    private static final long serialVersionUID = 1L;
    final SQLException cause;

    Raced(SQLException cause) {
      super(cause.getMessage(), cause, false, false);
      this.cause = cause;
    }
  }

  private interface Work<T> {
    T run() throws SQLException, Raced;
  }

  private FencedTable(Connection conn, String table, String keyColumn, String tokenColumn,
      String quote, boolean canHoldPlaceholder) {
    this.conn = conn;
    this.table = table;
    this.keyColumn = keyColumn;
    this.tokenColumn = tokenColumn;
    this.quote = quote;
    this.quotedTable = quote + table + quote;
    this.quotedKey = quote + keyColumn + quote;
    this.quotedToken = quote + tokenColumn + quote;
    this.canHoldPlaceholder = canHoldPlaceholder;
  }

  /** open(conn, table, "id", "current_token"). */
  public static FencedTable open(Connection conn, String table) throws FencelockException {
    return open(conn, table, "id", "current_token");
  }

  /**
   * Checks the schema in the connection's current schema and returns the table. invalid_request
   * naming what is wrong: a bad name, no such table or column (names are matched exactly, as the
   * database stores them), a token column that is not BIGINT NOT NULL, a key column not unique on
   * its own (PRIMARY KEY or a single-column UNIQUE index without a predicate).
   */
  public static FencedTable open(Connection conn, String table, String keyColumn,
      String tokenColumn) throws FencelockException {
    checkIdentifier(table, "table");
    checkIdentifier(keyColumn, "key column");
    checkIdentifier(tokenColumn, "token column");
    if (keyColumn.equals(tokenColumn)) {
      throw invalid("the key and token columns are both " + keyColumn);
    }
    try {
      DatabaseMetaData meta = conn.getMetaData();
      String quote = meta.getIdentifierQuoteString();
      quote = quote == null || quote.isBlank() ? "" : quote.strip();
      String schema = currentSchema(conn);
      String catalog = conn.getCatalog();
      String escape = meta.getSearchStringEscape();
      String tablePattern = escape == null ? table : table.replace("_", escape + "_");
      String schemaPattern = schema == null || escape == null ? schema : schema.replace("_", escape + "_");
      Map<String, boolean[]> columns = new HashMap<>();  // name -> {bigint, notNull, hasDefault}
      try (ResultSet rs = meta.getColumns(catalog, schemaPattern, tablePattern, null)) {
        while (rs.next()) {
          if (!table.equals(rs.getString("TABLE_NAME"))) {
            continue;
          }
          boolean generated = "YES".equals(rs.getString("IS_AUTOINCREMENT"))
              || "YES".equals(rs.getString("IS_GENERATEDCOLUMN"));
          columns.put(rs.getString("COLUMN_NAME"), new boolean[] {
              rs.getInt("DATA_TYPE") == Types.BIGINT,
              rs.getInt("NULLABLE") == DatabaseMetaData.columnNoNulls,
              rs.getString("COLUMN_DEF") != null || generated});
        }
      }
      if (columns.isEmpty()) {
        throw invalid("no table named " + table + " in schema " + schema + " (names are case-sensitive)");
      }
      boolean[] token = columns.get(tokenColumn);
      if (token == null) {
        throw invalid("table " + table + " has no token column " + tokenColumn + ": add `"
            + tokenColumn + " bigint NOT NULL DEFAULT 0`");
      }
      if (!token[0]) {
        throw invalid("the token column " + table + "." + tokenColumn + " is not bigint");
      }
      if (!token[1]) {
        throw invalid("the token column " + table + "." + tokenColumn
            + " must be NOT NULL (a NULL token never compares, and the row could never be written)");
      }
      if (!columns.containsKey(keyColumn)) {
        throw invalid("table " + table + " has no column " + keyColumn);
      }
      if (!uniqueOnItsOwn(meta, catalog, schema, table, keyColumn)) {
        throw invalid("the key column " + table + "." + keyColumn + " is not unique on its own"
            + " (make it the PRIMARY KEY or give it a single-column UNIQUE constraint)");
      }
      boolean placeholder = true;
      for (Map.Entry<String, boolean[]> column : columns.entrySet()) {
        String name = column.getKey();
        if (!name.equals(keyColumn) && !name.equals(tokenColumn) && column.getValue()[1]
            && !column.getValue()[2]) {
          placeholder = false;
        }
      }
      return new FencedTable(conn, table, keyColumn, tokenColumn, quote, placeholder);
    } catch (SQLException e) {
      throw translate(e, "checking table " + table);
    }
  }

  /** The connection's current schema; null (every schema) for a driver older than JDBC 4.1. */
  private static String currentSchema(Connection conn) throws SQLException {
    try {
      return conn.getSchema();
    } catch (java.sql.SQLFeatureNotSupportedException | AbstractMethodError old) {
      return null;
    }
  }

  private static boolean uniqueOnItsOwn(DatabaseMetaData meta, String catalog, String schema,
      String table, String key) throws SQLException {
    List<String> primary = new ArrayList<>();
    try (ResultSet rs = meta.getPrimaryKeys(catalog, schema, table)) {
      while (rs.next()) {
        primary.add(rs.getString("COLUMN_NAME"));
      }
    }
    if (primary.equals(List.of(key))) {
      return true;
    }
    Map<String, Set<String>> indexes = new HashMap<>();
    Set<String> partial = new HashSet<>();
    try (ResultSet rs = meta.getIndexInfo(catalog, schema, table, true, true)) {
      while (rs.next()) {
        String index = rs.getString("INDEX_NAME");
        if (index == null || rs.getShort("TYPE") == DatabaseMetaData.tableIndexStatistic) {
          continue;
        }
        indexes.computeIfAbsent(index, k -> new HashSet<>()).add(rs.getString("COLUMN_NAME"));
        if (rs.getString("FILTER_CONDITION") != null) {
          partial.add(index);
        }
      }
    }
    for (Map.Entry<String, Set<String>> index : indexes.entrySet()) {
      if (index.getValue().equals(Set.of(key)) && !partial.contains(index.getKey())) {
        return true;
      }
    }
    return false;
  }

  public String table() {
    return table;
  }

  /** True when every column but the key and the token is nullable or has a default. */
  public boolean canHoldPlaceholder() {
    return canHoldPlaceholder;
  }

  // --- the calls -------------------------------------------------------------------------------

  /** update(key, values, token, STRICTLY_NEWER, OWN_TRANSACTION). */
  public WriteResult update(Object key, Map<String, ?> values, long token) throws FencelockException {
    return update(key, values, token, TokenRule.STRICTLY_NEWER, Commit.OWN_TRANSACTION);
  }

  /**
   * Sets `values` ({column: value}) on row `key` only if the row's token satisfies `rule`
   * against `token`, and sets the row's token to `token` in the same statement. Never inserts.
   * APPLIED (committed, or with BY_CALLER applied in the caller's transaction), STALE (with the
   * token that won) or NO_SUCH_ROW; errors as the file comment says (nothing is written then).
   */
  public WriteResult update(Object key, Map<String, ?> values, long token, TokenRule rule,
      Commit commit) throws FencelockException {
    if (values == null || values.isEmpty()) {
      throw invalid("values must name at least one column");
    }
    StringBuilder assignments = new StringBuilder();
    List<Object> params = new ArrayList<>();
    for (Map.Entry<String, ?> value : values.entrySet()) {
      String column = value.getKey();
      checkIdentifier(column, "column");
      if (column.equals(keyColumn) || column.equals(tokenColumn)) {
        throw invalid("values may not set " + column + ": the key and the token are the guard's");
      }
      assignments.append(assignments.length() == 0 ? "" : ", ")
          .append(quote).append(column).append(quote).append(" = ?");
      params.add(value.getValue());
    }
    return guardedUpdate(key, assignments.toString(), params, token, rule, commit);
  }

  /**
   * update with SQL assignments of your own, `?` for each of `params` in order:
   * {@code update("alice", "balance = balance + ?", List.of(20), token, rule, commit)}. The text
   * is SQL: keep it a constant in your code. Quotes, comments, ';', '$' and backslashes are
   * refused (pass values as parameters), and so is an assignment to the key or token column.
   */
  public WriteResult update(Object key, String assignments, List<?> params, long token,
      TokenRule rule, Commit commit) throws FencelockException {
    if (assignments == null || assignments.isBlank()) {
      throw invalid("the assignments are empty");
    }
    for (String bad : kForbidden) {
      if (assignments.contains(bad)) {
        throw invalid("assignments: quotes, comments, ';', '$' and '\\' are not allowed; pass values as parameters");
      }
    }
    long marks = assignments.chars().filter(c -> c == '?').count();
    if (marks != params.size()) {
      throw invalid("assignments: " + marks + " '?' for " + params.size() + " parameter(s)");
    }
    Pattern guarded = Pattern.compile("(^|,)\\s*(" + Pattern.quote(keyColumn) + "|"
        + Pattern.quote(tokenColumn) + ")\\s*=", Pattern.CASE_INSENSITIVE);
    if (guarded.matcher(assignments).find()) {
      throw invalid("assignments may not set " + keyColumn + " or " + tokenColumn + ": they are the guard's");
    }
    return guardedUpdate(key, assignments, new ArrayList<>(params), token, rule, commit);
  }

  private WriteResult guardedUpdate(Object key, String assignments, List<Object> params,
      long token, TokenRule rule, Commit commit) throws FencelockException {
    checkToken(token);
    String sql = "UPDATE " + quotedTable + " SET " + assignments + ", " + quotedToken + " = ? WHERE "
        + quotedKey + " = ? AND " + quotedToken + " " + rule.operator + " ?";
    return inTransaction(commit, "guarded update of " + table, () -> {
      try (PreparedStatement statement = conn.prepareStatement(sql)) {
        int i = 1;
        for (Object param : params) {
          statement.setObject(i++, param);
        }
        statement.setLong(i++, token);
        statement.setObject(i++, key);
        statement.setLong(i, token);
        if (statement.executeUpdate() == 1) {
          return new WriteResult(Outcome.APPLIED, token);
        }
      }
      return refused(key, token, rule);
    });
  }

  /** fenceRead(key, token, NEWER_OR_SAME, OWN_TRANSACTION). */
  public WriteResult fenceRead(Object key, long token) throws FencelockException {
    return fenceRead(key, token, TokenRule.NEWER_OR_SAME, Commit.OWN_TRANSACTION);
  }

  /**
   * Raises row `key`'s token to `token` (if `rule` allows) so that the caller's following read
   * counts as a touch by `token`: writes by older tokens are refused from then on. A key with no
   * row gets a placeholder row (key and token only) when the table can hold one, and
   * NO_SUCH_ROW, with nothing fenced, when it cannot. Then read the row yourself and write with
   * NEWER_OR_SAME. Transactions as for update.
   */
  public WriteResult fenceRead(Object key, long token, TokenRule rule, Commit commit)
      throws FencelockException {
    checkToken(token);
    String raise = "UPDATE " + quotedTable + " SET " + quotedToken + " = ? WHERE " + quotedKey
        + " = ? AND " + quotedToken + " " + rule.operator + " ?";
    String insert = "INSERT INTO " + quotedTable + " (" + quotedKey + ", " + quotedToken
        + ") VALUES (?, ?)";
    return inTransaction(commit, "fenced read of " + table, () -> {
      try (PreparedStatement statement = conn.prepareStatement(raise)) {
        statement.setLong(1, token);
        statement.setObject(2, key);
        statement.setLong(3, token);
        if (statement.executeUpdate() == 1) {
          return new WriteResult(Outcome.APPLIED, token);
        }
      }
      WriteResult refused = refused(key, token, rule);
      if (refused.outcome() != Outcome.NO_SUCH_ROW || !canHoldPlaceholder) {
        return refused;
      }
      try (PreparedStatement statement = conn.prepareStatement(insert)) {
        statement.setObject(1, key);
        statement.setLong(2, token);
        statement.executeUpdate();
      } catch (SQLException e) {
        if (e.getSQLState() != null && e.getSQLState().startsWith("23")) {
          throw new Raced(e);  // another writer created the row first
        }
        throw e;
      }
      return new WriteResult(Outcome.APPLIED, token);
    });
  }

  /** The token stored in row `key`, empty when there is no such row. Fences nothing. */
  public OptionalLong currentToken(Object key) throws FencelockException {
    try {
      return storedToken(key);
    } catch (SQLException e) {
      throw translate(e, "reading a token from " + table);
    }
  }

  // --- helpers ---------------------------------------------------------------------------------

  private WriteResult refused(Object key, long token, TokenRule rule) throws SQLException {
    OptionalLong stored = storedToken(key);
    if (stored.isEmpty()) {
      return new WriteResult(Outcome.NO_SUCH_ROW, 0);
    }
    long current = stored.getAsLong();
    boolean allowed = rule == TokenRule.STRICTLY_NEWER ? current < token : current <= token;
    // Allowed now: the row appeared or changed after our statement looked, which saw no row.
    return allowed ? new WriteResult(Outcome.NO_SUCH_ROW, 0) : new WriteResult(Outcome.STALE, current);
  }

  private OptionalLong storedToken(Object key) throws SQLException {
    try (PreparedStatement statement = conn.prepareStatement(
        "SELECT " + quotedToken + " FROM " + quotedTable + " WHERE " + quotedKey + " = ?")) {
      statement.setObject(1, key);
      try (ResultSet rs = statement.executeQuery()) {
        return rs.next() ? OptionalLong.of(rs.getLong(1)) : OptionalLong.empty();
      }
    }
  }

  private <T> T inTransaction(Commit commit, String doing, Work<T> work) throws FencelockException {
    try {
      if (commit == Commit.BY_CALLER) {
        try {
          return work.run();
        } catch (Raced raced) {
          throw new FencelockException(FencelockException.UNAVAILABLE, doing
              + ": another writer created the row meanwhile; roll back and retry", raced.cause);
        }
      }
      if (!conn.getAutoCommit()) {
        throw invalid(doing + ": the connection has autocommit off, so a transaction of yours may be"
            + " open and this call would not commit it — a write reported applied could still be"
            + " lost. Use a connection in autocommit mode, or pass Commit.BY_CALLER and commit yourself");
      }
      for (int attempt = 1; ; ++attempt) {
        conn.setAutoCommit(false);
        boolean committed = false;
        try {
          T result = work.run();
          conn.commit();  // the outcome is reported only after this succeeded
          committed = true;
          return result;
        } catch (SQLException | Raced e) {
          SQLException sql = e instanceof Raced ? ((Raced) e).cause : (SQLException) e;
          boolean retry = e instanceof Raced || "40001".equals(sql.getSQLState())
              || "40P01".equals(sql.getSQLState());
          if (!retry || attempt >= MAX_ATTEMPTS) {
            throw translate(sql, doing);
          }
        } finally {
          // Whatever ended the attempt, nothing of it may survive: setAutoCommit(true) would
          // commit a transaction still open.
          if (!committed) {
            rollbackQuietly();
          }
          conn.setAutoCommit(true);
        }
        try {
          Thread.sleep(ThreadLocalRandom.current().nextInt(21));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new FencelockException(FencelockException.CANCELLED, doing + ": interrupted; nothing was written");
        }
      }
    } catch (SQLException e) {
      throw translate(e, doing);
    }
  }

  private void rollbackQuietly() {
    try {
      conn.rollback();
    } catch (SQLException ignored) {
      // the connection is gone: so is the transaction
    }
  }

  private static FencelockException translate(SQLException e, String doing) {
    String state = e.getSQLState() == null ? "" : e.getSQLState();
    String code;
    if (state.equals("40001") || state.equals("40P01") || state.equals("55P03")
        || state.startsWith("08")) {
      code = FencelockException.UNAVAILABLE;
    } else if (state.startsWith("23") || state.startsWith("22") || state.startsWith("42")) {
      code = FencelockException.INVALID_REQUEST;
    } else {
      code = FencelockException.INTERNAL;
    }
    String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage().lines().findFirst().orElse("");
    return new FencelockException(code, doing + ": " + message
        + (state.isEmpty() ? "" : " (SQLSTATE " + state + ")"), e);
  }

  private static void checkToken(long token) throws FencelockException {
    if (token < 1) {
      throw invalid("token " + token + " is out of range: tokens are 1 .. 2^63 - 1");
    }
  }

  private static void checkIdentifier(String name, String what) throws FencelockException {
    if (name == null || !kIdentifier.matcher(name).matches()) {
      throw invalid(what + " " + name + " is not an identifier of the form [A-Za-z_][A-Za-z0-9_]*"
          + " (at most 63 characters)");
    }
  }

  private static FencelockException invalid(String message) {
    return new FencelockException(FencelockException.INVALID_REQUEST, message);
  }
}
