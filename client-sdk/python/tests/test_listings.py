"""The semaphore and read/write lock listings (GET /v1/semaphores, GET /v1/rwlocks) in the blocking
and the asyncio client: what is asked for, what is read, and the pages of a live fencelockd."""

from __future__ import annotations

import unittest
from typing import Dict, List, Tuple

import fencelock
from fencelock import aio

import support
from support import needs_stack, unique_name
from test_aio import patiently

SEMAPHORE_PAGE = support.http_answer(
    200, b'{"semaphores":[{"name":"pool-1","permits":3,"held":2},'
         b'{"name":"pool-2","permits":1,"held":1}],"next":"2-1536-0"}')
RWLOCK_PAGE = support.http_answer(
    200, b'{"rwlocks":[{"name":"doc-1","mode":"read","holders":[{"token":9223372036854775807,'
         b'"owner":"report-7","remaining_ms":2500},{"token":18,"owner":null,"remaining_ms":0}],'
         b'"writer_waiting":true},{"name":"doc-2","mode":"write","holders":[{"token":4,'
         b'"owner":null,"remaining_ms":1000}],"writer_waiting":false}],"next":null}')
UNAVAILABLE = support.http_answer(
    503, b'{"error":{"code":"unavailable","message":"too few lock nodes"}}')

LISTED_SEMAPHORES = [fencelock.ListedSemaphore("pool-1", 3, 2),
                     fencelock.ListedSemaphore("pool-2", 1, 1)]
LISTED_RWLOCKS = [
    fencelock.ListedRwLock("doc-1", "read", [fencelock.RwLockHolder(2**63 - 1, "report-7", 2.5),
                                             fencelock.RwLockHolder(18, None, 0.0)], True),
    fencelock.ListedRwLock("doc-2", "write", [fencelock.RwLockHolder(4, None, 1.0)], False)]


class WithoutService(unittest.TestCase):
    def test_a_semaphore_page_is_read_and_its_query_values_are_encoded(self) -> None:
        with support.RecordingServer([SEMAPHORE_PAGE]) as server:
            client = fencelock.Client(server.url)
            listing = client.list_semaphores("pool-", 2, "1-0+x")
            self.assertEqual(listing, fencelock.SemaphoreListing(LISTED_SEMAPHORES, "2-1536-0"))
            client.list_semaphores()
            client.close()
        self.assertEqual(server.targets, ["/v1/semaphores?limit=2&prefix=pool-&cursor=1-0%2Bx",
                                          "/v1/semaphores?limit=100"])

    def test_a_rwlock_page_is_read_and_its_query_values_are_encoded(self) -> None:
        with support.RecordingServer([RWLOCK_PAGE]) as server:
            client = fencelock.Client(server.url)
            listing = client.list_rwlocks("doc-", 5, "a b")
            self.assertEqual(listing, fencelock.RwLockListing(LISTED_RWLOCKS, None))
            client.close()
        self.assertEqual(server.targets, ["/v1/rwlocks?limit=5&prefix=doc-&cursor=a%20b"])

    def test_a_listing_answered_503_is_asked_again(self) -> None:
        with support.RecordingServer([UNAVAILABLE, SEMAPHORE_PAGE, UNAVAILABLE,
                                      RWLOCK_PAGE]) as server:
            client = fencelock.Client(server.url, retry_backoff=0.01)
            self.assertEqual(client.list_semaphores().semaphores, LISTED_SEMAPHORES)
            self.assertEqual(client.list_rwlocks().rwlocks, LISTED_RWLOCKS)
            client.close()
        self.assertEqual(len(server.targets), 4)

    def test_a_bad_limit_prefix_or_cursor_is_refused_before_anything_is_sent(self) -> None:
        client = fencelock.Client([f"http://127.0.0.1:{support.closed_port()}"])
        for call in (client.list_semaphores, client.list_rwlocks):
            for prefix, limit, cursor in [("", 0, None), ("", 1001, None), ("", True, None),
                                          ("", "10", None), (None, 1, None), ("", 1, "")]:
                with self.subTest(call=call.__name__, prefix=prefix, limit=limit, cursor=cursor), \
                        self.assertRaises(fencelock.InvalidArgumentError):
                    call(prefix, limit, cursor)  # type: ignore[arg-type]


class AsyncWithoutService(unittest.IsolatedAsyncioTestCase):
    async def test_pages_are_read_and_their_query_values_are_encoded(self) -> None:
        with support.RecordingServer([SEMAPHORE_PAGE, RWLOCK_PAGE]) as server:
            client = aio.AsyncClient(server.url)
            self.assertEqual(await client.list_semaphores("pool-", 2, "1-0+x"),
                             fencelock.SemaphoreListing(LISTED_SEMAPHORES, "2-1536-0"))
            self.assertEqual(await client.list_rwlocks("doc-", 5),
                             fencelock.RwLockListing(LISTED_RWLOCKS, None))
            await client.aclose()
        self.assertEqual(server.targets, ["/v1/semaphores?limit=2&prefix=pool-&cursor=1-0%2Bx",
                                          "/v1/rwlocks?limit=5&prefix=doc-"])


Held = Dict[str, Tuple[object, ...]]


@needs_stack
class AgainstTheService(unittest.TestCase):
    def setUp(self) -> None:
        self.client = support.PatientClient(support.FENCELOCK_ENDPOINT)
        self.prefix = unique_name("py-listing") + "."
        self.leases: List[fencelock.Lease] = []

    def tearDown(self) -> None:
        for lease in self.leases:
            self.client.release(lease)
        self.client.close()

    def hold_semaphores(self) -> Held:
        """Two permits of a 3-permit semaphore, one of a 1-permit one, and one outside the
        prefix: what the listing of the prefix should show."""
        for name, permits, count in [("a", 3, 2), ("b", 1, 1)]:
            for _ in range(count):
                self.leases.append(self.client.acquire_permit(self.prefix + name, permits, 30.0))
        self.leases.append(self.client.acquire_permit(self.prefix[:-1] + "-other", 2, 30.0))
        return {self.prefix + "a": (3, 2), self.prefix + "b": (1, 1)}

    def hold_rwlocks(self) -> Held:
        """Two read grants of one read/write lock, the write grant of another, and a read grant
        outside the prefix."""
        first = self.client.acquire_read(self.prefix + "r", 30.0, owner="py-reader")
        second = self.client.acquire_read(self.prefix + "r", 30.0)
        writer = self.client.acquire_write(self.prefix + "w", 30.0, owner="py-writer")
        self.leases += [first, second, writer,
                        self.client.acquire_read(self.prefix[:-1] + "-other", 30.0)]
        return {self.prefix + "r": ("read", sorted([(first.token, "py-reader"),
                                                    (second.token, None)]), False),
                self.prefix + "w": ("write", [(writer.token, "py-writer")], False)}

    def test_list_semaphores_pages_through_the_held_semaphores_of_a_prefix(self) -> None:
        held = self.hold_semaphores()
        listed: Held = {}
        cursor = None
        for _ in range(100):
            page = self.client.list_semaphores(self.prefix, 1, cursor)
            listed.update((s.name, (s.permits, s.held)) for s in page.semaphores)
            cursor = page.next
            if cursor is None:
                break
        self.assertIsNone(cursor, "the listing ends")
        self.assertEqual(listed, held)
        self.assertEqual({s.name: (s.permits, s.held)
                          for s in self.client.iter_semaphores(self.prefix, 1)}, held)

    def test_list_rwlocks_pages_through_the_held_rwlocks_of_a_prefix(self) -> None:
        held = self.hold_rwlocks()
        listed: Held = {}
        cursor = None
        for _ in range(100):
            page = self.client.list_rwlocks(self.prefix, 1, cursor)
            for rwlock in page.rwlocks:
                self.assertTrue(all(0 < h.remaining <= 30.0 for h in rwlock.holders))
                listed[rwlock.name] = rw_entry(rwlock)
            cursor = page.next
            if cursor is None:
                break
        self.assertIsNone(cursor, "the listing ends")
        self.assertEqual(listed, held)
        self.assertEqual({rwlock.name: rw_entry(rwlock)
                          for rwlock in self.client.iter_rwlocks(self.prefix, 1)}, held)

    def test_a_prefix_nothing_is_held_under_lists_nothing(self) -> None:
        self.hold_semaphores()
        self.hold_rwlocks()
        empty = self.prefix + "none."
        self.assertEqual(list(self.client.iter_semaphores(empty)), [])
        self.assertEqual(list(self.client.iter_rwlocks(empty)), [])

    def test_a_released_semaphore_or_rwlock_is_no_longer_listed(self) -> None:
        self.hold_semaphores()
        self.hold_rwlocks()
        for lease in self.leases:
            self.client.release(lease)
        self.assertEqual(list(self.client.iter_semaphores(self.prefix)), [])
        self.assertEqual(list(self.client.iter_rwlocks(self.prefix)), [])


@needs_stack
class AsyncAgainstTheService(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        self.client = aio.AsyncClient(support.FENCELOCK_ENDPOINT)
        self.prefix = unique_name("py-aio-listing") + "."

    async def asyncTearDown(self) -> None:
        await self.client.aclose()

    async def test_iterating_pages_through_held_semaphores_and_rwlocks(self) -> None:
        permits = [await patiently(self.client.acquire_permit, f"{self.prefix}s{i}", 2, 30.0)
                   for i in range(3)]
        reads = [await patiently(self.client.acquire_read, f"{self.prefix}r{i}", 30.0,
                                 owner=f"aio-{i}") for i in range(3)]
        try:
            self.assertEqual({s.name: (s.permits, s.held)
                              async for s in self.client.iter_semaphores(self.prefix, 1)},
                             {lease.name: (2, 1) for lease in permits})
            self.assertEqual({r.name: rw_entry(r)
                              async for r in self.client.iter_rwlocks(self.prefix, 1)},
                             {lease.name: ("read", [(lease.token, f"aio-{i}")], False)
                              for i, lease in enumerate(reads)})
            self.assertEqual([s async for s in self.client.iter_semaphores(self.prefix + "x")],
                             [])
        finally:
            for lease in permits + reads:
                await self.client.release(lease)


def rw_entry(rwlock: fencelock.ListedRwLock) -> Tuple[object, ...]:
    return (rwlock.mode, sorted((h.token, h.owner) for h in rwlock.holders),
            rwlock.writer_waiting)


if __name__ == "__main__":
    unittest.main()
