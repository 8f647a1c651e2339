/*
 * The listings — GET /v1/locks, /v1/semaphores and /v1/rwlocks ?prefix=P&limit=N&cursor=C
 * (docs/api.md) — and the status answers their entries repeat; FencelockClient sends.
 *
 * The three listings page alike: a page is a bounded scan of the lock nodes, so it may hold fewer
 * entries than `limit` (even none) and still have a `next`, the cursor of the following page
 * (empty once the listing is complete); each is safe to repeat. They differ only in their route,
 * the field that holds their entries and how one entry is read: a listing is a row (Listing), not
 * a copy of the paging.
 */
package dev.fencelock;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

final class Listings {
  /** The largest page the service answers. */
  static final int MAX_LIMIT = 1000;

  /** One GET of `path`, retried as safe to repeat; its answer, a JSON object. */
  interface Get {
    Map<String, Object> answer(String path) throws FencelockException;
  }

  private interface Entry<E> {
    E read(Map<String, Object> fields) throws FencelockException;
  }

  /** A listing: its route, the answer's field that holds its entries, and how one is read. */
  private record Listing<E>(String route, String field, String kind, Entry<E> entry) {}

  private static final Listing<HeldLock> LOCKS = new Listing<>("/v1/locks", "locks", "lock", Listings::heldLock);
  private static final Listing<ListedSemaphore> SEMAPHORES =
      new Listing<>("/v1/semaphores", "semaphores", "semaphore", Listings::listedSemaphore);
  private static final Listing<ListedRwLock> RWLOCKS =
      new Listing<>("/v1/rwlocks", "rwlocks", "read/write lock", Listings::listedRwLock);

  private record Page<E>(List<E> entries, Optional<String> next) {}

  private Listings() {}

  static LockListing locks(Get get, String prefix, int limit, String cursor) throws FencelockException {
    Page<HeldLock> page = page(get, LOCKS, prefix, limit, cursor);
    return new LockListing(page.entries(), page.next());
  }

  static SemaphoreListing semaphores(Get get, String prefix, int limit, String cursor) throws FencelockException {
    Page<ListedSemaphore> page = page(get, SEMAPHORES, prefix, limit, cursor);
    return new SemaphoreListing(page.entries(), page.next());
  }

  static RwLockListing rwlocks(Get get, String prefix, int limit, String cursor) throws FencelockException {
    Page<ListedRwLock> page = page(get, RWLOCKS, prefix, limit, cursor);
    return new RwLockListing(page.entries(), page.next());
  }

  /** A semaphore's status as GET /v1/semaphores/{name}, and each entry of its listing, words it. */
  static SemaphoreStatus semaphoreStatus(Map<String, Object> answer) throws FencelockException {
    return new SemaphoreStatus((int) Answers.boundedLong(answer, "permits", 0, FencelockClient.MAX_PERMITS),
        (int) Answers.boundedLong(answer, "held", 0, FencelockClient.MAX_PERMITS));
  }

  /** A read/write lock's status as GET /v1/rwlocks/{name}, and each entry of its listing, words it. */
  static RwLockStatus rwlockStatus(Map<String, Object> answer) throws FencelockException {
    Object mode = answer.get("mode");
    Object holders = answer.get("holders");
    Object writerWaiting = answer.get("writer_waiting");
    if (!(holders instanceof List) || !(writerWaiting instanceof Boolean)
        || !(mode == null || mode == Json.NULL || "read".equals(mode) || "write".equals(mode))) {
      throw Answers.internal("the service's answer is not a read/write lock's status");
    }
    List<RwLockStatus.Holder> held = new ArrayList<>();
    for (Object holder : (List<?>) holders) {
      if (!(holder instanceof Map)) {
        throw Answers.internal("a holder of the read/write lock is not an object");
      }
      @SuppressWarnings("unchecked")
      Map<String, Object> fields = (Map<String, Object>) holder;
      held.add(new RwLockStatus.Holder(Answers.positiveLong(fields, "token"),
          owner(fields, "a holder of the read/write lock"), remaining(fields)));
    }
    Optional<Lease.Kind> heldMode = "read".equals(mode) ? Optional.of(Lease.Kind.READ)
        : "write".equals(mode) ? Optional.of(Lease.Kind.WRITE) : Optional.empty();
    return new RwLockStatus(heldMode, held, (Boolean) writerWaiting);
  }

  /**
   * One page of `listing`: its query checked (before anything is sent) and encoded, and its
   * answer read as {field: [entry, ...], "next": cursor or null}.
   */
  private static <E> Page<E> page(Get get, Listing<E> listing, String prefix, int limit, String cursor)
      throws FencelockException {
    if (limit < 1 || limit > MAX_LIMIT) {
      throw Checks.invalid("limit must be 1 .. " + MAX_LIMIT);
    }
    StringBuilder path = new StringBuilder(listing.route()).append("?limit=").append(limit);
    if (prefix != null && !prefix.isEmpty()) {
      path.append("&prefix=").append(URLEncoder.encode(prefix, StandardCharsets.UTF_8));
    }
    if (cursor != null && !cursor.isEmpty()) {
      path.append("&cursor=").append(URLEncoder.encode(cursor, StandardCharsets.UTF_8));
    }
    Map<String, Object> answer = get.answer(path.toString());
    Object entries = answer.get(listing.field());
    Object next = answer.get("next");
    if (!(entries instanceof List) || !(next == null || next == Json.NULL || next instanceof String)) {
      throw Answers.internal("the service's listing lacks its '" + listing.field() + "' array or 'next'");
    }
    List<E> read = new ArrayList<>();
    for (Object one : (List<?>) entries) {
      if (!(one instanceof Map) || !(((Map<?, ?>) one).get("name") instanceof String)) {
        throw Answers.internal("a listed " + listing.kind() + " lacks its name");
      }
      @SuppressWarnings("unchecked")
      Map<String, Object> fields = (Map<String, Object>) one;
      read.add(listing.entry().read(fields));
    }
    return new Page<>(List.copyOf(read), next instanceof String ? Optional.of((String) next) : Optional.empty());
  }

  private static HeldLock heldLock(Map<String, Object> fields) throws FencelockException {
    Object token = fields.get("token");
    return new HeldLock((String) fields.get("name"),
        token == null || token == Json.NULL ? OptionalLong.empty()
            : OptionalLong.of(Answers.positiveLong(fields, "token")),
        owner(fields, "a listed lock"), remaining(fields));
  }

  private static ListedSemaphore listedSemaphore(Map<String, Object> fields) throws FencelockException {
    SemaphoreStatus status = semaphoreStatus(fields);
    return new ListedSemaphore((String) fields.get("name"), status.permits(), status.held());
  }

  private static ListedRwLock listedRwLock(Map<String, Object> fields) throws FencelockException {
    RwLockStatus status = rwlockStatus(fields);
    return new ListedRwLock((String) fields.get("name"), status.mode(), status.holders(), status.writerWaiting());
  }

  private static Optional<String> owner(Map<String, Object> fields, String whose) throws FencelockException {
    Object owner = fields.get("owner") == Json.NULL ? null : fields.get("owner");
    if (owner != null && !(owner instanceof String)) {
      throw Answers.internal(whose + " holds an 'owner' that is not a string");
    }
    return Optional.ofNullable((String) owner);
  }

  private static Duration remaining(Map<String, Object> fields) throws FencelockException {
    return Duration.ofMillis(Answers.boundedLong(fields, "remaining_ms", 0, Long.MAX_VALUE / 1_000_000));
  }
}
