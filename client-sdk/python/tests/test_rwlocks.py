"""Read/write locks (many readers or one writer) in the blocking and the asyncio client: what is
sent, what is read, lease strings rebuilt, and the grants against a live fencelockd."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import unittest
from typing import List

import fencelock
from fencelock import _calls, aio
from fencelock._http import Reply

import support
from support import needs_stack, unique_name
from test_aio import patiently

PROOF = "4f1c0e9a2b7d4c6e8f0a1b2c3d4e5f6071c2d9e04b3a8f15"


def rw_grant(mode: str, token: int) -> bytes:
    return support.http_answer(200, json.dumps({
        "name": "doc", "mode": mode, "lease": f"{token}.{PROOF}.{mode[0]}", "token": token,
        "ttl_ms": 10000, "validity_ms": 9000, "waited_ms": 0}).encode())


class WithoutService(unittest.TestCase):
    def test_a_grant_sends_its_mode_to_the_rwlock_path_and_extend_and_release_follow(
            self) -> None:
        answers = [rw_grant("read", 17), support.http_answer(200, b'{"validity_ms":9000}'),
                   support.http_answer(200, b'{"name":"doc","released":true}')]
        with support.RecordingServer(answers) as server:
            client = fencelock.Client(server.url)
            lease = client.acquire_read("doc", 10, wait=2, owner="report-7")
            self.assertEqual((lease.kind, lease.mode, lease.token), ("read", "read", 17))
            client.extend(lease, 10)
            self.assertTrue(client.release(lease))
            client.close()
        self.assertEqual(server.targets,
                         ["/v1/rwlocks/doc", "/v1/rwlocks/doc/extend", "/v1/rwlocks/doc"])
        self.assertEqual(server.bodies[0], {"mode": "read", "ttl_ms": 10000, "wait_ms": 2000,
                                            "owner": "report-7"})
        self.assertEqual(server.bodies[1], {"lease": lease.lease_string, "ttl_ms": 10000})
        self.assertEqual(server.bodies[2], {"lease": lease.lease_string})

    def test_a_grant_whose_answer_was_lost_is_not_asked_again(self) -> None:
        with support.RecordingServer([None, rw_grant("write", 5)]) as server:
            client = fencelock.Client(server.url, retry_backoff=0.01, request_timeout=2)
            with self.assertRaises(fencelock.TransportError):
                client.acquire_write("doc", 10)
            self.assertEqual(len(server.bodies), 1)
            self.assertNotIn("request_id", server.bodies[0])
            client.close()

    def test_bad_names_and_times_are_refused_before_anything_is_sent(self) -> None:
        client = fencelock.Client([f"http://127.0.0.1:{support.closed_port()}"])
        for call in (client.acquire_read, client.acquire_write):
            for name, ttl in [("a/b", 1), ("..", 1), ("ok", 0), ("ok", -1)]:
                with self.assertRaises(fencelock.InvalidArgumentError, msg=(name, ttl)):
                    call(name, ttl)
        with self.assertRaises(fencelock.InvalidArgumentError):
            client.rwlock_status("a b")

    def test_a_status_is_read_and_a_malformed_one_refused(self) -> None:
        def read(body: str) -> fencelock.RwLockStatus:
            return _calls.rwlock_status("doc").finish(Reply(200, {}, body.encode()),
                                                      time.monotonic())
        self.assertEqual(read('{"name":"doc","mode":"read","holders":[{"token":17,"owner":'
                              '"report-7","remaining_ms":2500},{"token":18,"owner":null,'
                              '"remaining_ms":0}],"writer_waiting":true}'),
                         fencelock.RwLockStatus("read", [
                             fencelock.RwLockHolder(17, "report-7", 2.5),
                             fencelock.RwLockHolder(18, None, 0.0)], True))
        self.assertEqual(read('{"name":"doc","mode":null,"holders":[],"writer_waiting":false}'),
                         fencelock.RwLockStatus(None, [], False))
        for body in ['{"mode":"both","holders":[],"writer_waiting":false}',
                     '{"mode":null,"holders":{},"writer_waiting":false}',
                     '{"mode":null,"holders":[]}',
                     '{"mode":"read","holders":[{"token":0,"remaining_ms":1}],'
                     '"writer_waiting":false}',
                     '{"mode":"read","holders":[{"token":3,"owner":7,"remaining_ms":1}],'
                     '"writer_waiting":false}']:
            with self.subTest(body), self.assertRaises(fencelock.InternalError):
                read(body)

    def test_lease_strings_of_every_kind_become_leases_and_bad_ones_are_refused(self) -> None:
        read = fencelock.Lease.from_string("read", "doc", f"17.{PROOF}.r", 10)
        self.assertEqual((read.kind, read.name, read.token, read.ttl), ("read", "doc", 17, 10))
        self.assertEqual(read.remaining(), 0.0, "its deadline is unknown until an extend")
        self.assertNotIn(PROOF, repr(read))
        self.assertIn("mode='read'", repr(read))
        write = fencelock.Lease.from_string("write", ["doc"], f"18.{PROOF}.w", 10)
        self.assertEqual((write.kind, write.token), ("write", 18))
        lock = fencelock.Lease.from_string("lock", "doc", f"9.{PROOF}", 10)
        self.assertEqual((lock.kind, lock.token), ("lock", 9))
        permit = fencelock.Lease.from_string("permit", "pool", f"9.{PROOF}.3.2", 10)
        self.assertEqual((permit.kind, permit.permits, permit.slot), ("permit", 3, 2))
        lock_set = fencelock.Lease.from_string("set", ["b", "a"], f"3,4.{PROOF}", 10)
        self.assertEqual((lock_set.kind, lock_set.tokens), ("set", {"a": 3, "b": 4}))
        for kind, names, text in [
                ("write", "doc", f"17.{PROOF}.r"), ("read", "doc", f"17.{PROOF}.w"),
                ("read", "doc", f"17.{PROOF}"), ("lock", "doc", f"17.{PROOF}.r"),
                ("read", "doc", f"017.{PROOF}.r"), ("read", "doc", f"0.{PROOF}.r"),
                ("read", "doc", f"{2**63}.{PROOF}.r"), ("read", "doc", "17.not-hex.r"),
                ("read", ["a", "b"], f"17.{PROOF}.r"), ("read", "a/b", f"17.{PROOF}.r"),
                ("set", ["a", "a"], f"3,4.{PROOF}"), ("set", ["a", "b"], f"3.{PROOF}"),
                ("permit", "pool", f"9.{PROOF}.3.3"), ("permit", "pool", f"9.{PROOF}.65.0"),
                ("reader", "doc", f"17.{PROOF}.r")]:
            with self.subTest(kind=kind, names=names, text=text), \
                    self.assertRaises(fencelock.InvalidArgumentError):
                fencelock.Lease.from_string(kind, names, text, 10)
        for ttl in [0, float("nan"), float("inf"), 10**12]:
            with self.subTest(ttl=ttl), self.assertRaises(fencelock.InvalidArgumentError):
                fencelock.Lease.from_string("read", "doc", f"17.{PROOF}.r", ttl)

    def test_a_grant_in_another_mode_than_asked_is_an_internal_error(self) -> None:
        with support.RecordingServer([rw_grant("write", 5)]) as server:
            client = fencelock.Client(server.url)
            with self.assertRaises(fencelock.InternalError):
                client.acquire_read("doc", 10)
            client.close()

    def test_a_time_that_is_not_a_finite_number_is_refused_before_anything_is_sent(
            self) -> None:
        client = fencelock.Client([f"http://127.0.0.1:{support.closed_port()}"])
        for ttl, wait in [(float("nan"), 0), (float("inf"), 0), (1, float("nan"))]:
            with self.subTest(ttl=ttl, wait=wait), \
                    self.assertRaises(fencelock.InvalidArgumentError):
                client.acquire_write("doc", ttl, wait)


@needs_stack
class ReadWriteLocks(unittest.TestCase):
    def setUp(self) -> None:
        self.client = support.PatientClient(support.FENCELOCK_ENDPOINT)
        self.name = unique_name("py-rw")

    def tearDown(self) -> None:
        self.client.close()

    def test_readers_share_it_and_a_writer_follows_them_with_a_higher_token(self) -> None:
        first = self.client.acquire_read(self.name, 5.0, owner="reader-1")
        second = self.client.acquire_read(self.name, 5.0)
        self.assertEqual((first.kind, second.kind), ("read", "read"))
        self.assertTrue(first.lease_string.endswith(".r"))
        self.assertNotEqual(first.token, second.token)
        with self.assertRaises(fencelock.LockedError):
            self.client.acquire_write(self.name, 5.0)

        status = self.client.rwlock_status(self.name)
        self.assertEqual((status.mode, status.writer_waiting), ("read", False))
        self.assertEqual(sorted((h.token, h.owner) for h in status.holders),
                         sorted([(first.token, "reader-1"), (second.token, None)]))
        self.assertTrue(all(0 < h.remaining <= 5.0 for h in status.holders))

        before = first.deadline
        self.client.extend(first, 10.0)
        self.assertGreater(first.deadline, before + 3.0)
        self.assertTrue(self.client.release(first))
        self.assertTrue(self.client.release(second))
        self.assertFalse(self.client.release(second), "release is idempotent")
        with self.assertRaises(fencelock.NotHeldError):
            self.client.extend(second)

        writer = self.client.acquire_write(self.name, 5.0, owner="writer")
        self.assertEqual(writer.kind, "write")
        self.assertTrue(writer.lease_string.endswith(".w"))
        self.assertGreater(writer.token, max(first.token, second.token))
        status = self.client.rwlock_status(self.name)
        self.assertEqual((status.mode, [(h.token, h.owner) for h in status.holders]),
                         ("write", [(writer.token, "writer")]))
        with self.assertRaises(fencelock.LockedError):
            self.client.acquire_read(self.name, 5.0)
        self.client.extend(writer, 10.0)
        self.assertTrue(self.client.release(writer))
        self.assertEqual(self.client.rwlock_status(self.name),
                         fencelock.RwLockStatus(None, [], False))

    def test_a_waiting_writer_keeps_new_readers_out_until_it_is_granted(self) -> None:
        reader = self.client.acquire_read(self.name, 5.0)
        granted: List[fencelock.Lease] = []
        waiter = threading.Thread(
            target=lambda: granted.append(self.client.acquire_write(self.name, 5.0, wait=5.0)))
        waiter.start()
        try:
            self.assertTrue(support.wait_until(
                lambda: self.client.rwlock_status(self.name).writer_waiting, 3.0, 0.02))
            with self.assertRaises(fencelock.LockedError):
                self.client.acquire_read(self.name, 5.0)
            self.assertTrue(self.client.release(reader))
        finally:
            waiter.join(6.0)
        self.assertEqual(len(granted), 1, "the writer got it once the reader released")
        self.assertGreater(granted[0].token, reader.token)
        self.assertFalse(self.client.rwlock_status(self.name).writer_waiting)
        self.assertTrue(self.client.release(granted[0]))

    def test_a_lease_string_kept_elsewhere_is_rebuilt_extended_and_released(self) -> None:
        writer = self.client.acquire_write(self.name, 5.0)
        elsewhere = fencelock.Lease.from_string("write", self.name, writer.lease_string, 5.0)
        self.assertEqual((elsewhere.kind, elsewhere.token), ("write", writer.token))
        self.client.extend(elsewhere)
        self.assertGreater(elsewhere.remaining(), 3.0)
        self.assertTrue(self.client.release(elsewhere))
        self.assertFalse(self.client.release(writer), "released through the rebuilt lease")

    def test_the_blocks_keep_their_grant_alive_and_release_it(self) -> None:
        # A ttl whose renewals fit a loaded machine (0.3 s once could not be renewed in time).
        with self.client.read_lock(self.name, ttl=1.0, owner="block") as lease:
            time.sleep(2.2)  # renewed in the background, past two ttls
            lease.check()
            status = self.client.rwlock_status(self.name)
            self.assertEqual((status.mode, [h.owner for h in status.holders]),
                             ("read", ["block"]))
        with self.client.write_lock(self.name, ttl=2.0) as writer:
            self.assertGreater(writer.token, lease.token)
            self.assertEqual(self.client.rwlock_status(self.name).mode, "write")
        self.assertIsNone(self.client.rwlock_status(self.name).mode)


@needs_stack
class ReadWriteLocksOnAsyncio(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        self.client = aio.AsyncClient(support.FENCELOCK_ENDPOINT)
        self.name = unique_name("py-aio-rw")

    async def asyncTearDown(self) -> None:
        await self.client.aclose()

    async def test_readers_share_it_a_writer_follows_and_the_blocks_renew(self) -> None:
        first = await patiently(self.client.acquire_read, self.name, 5.0, owner="reader-1")
        second = await patiently(self.client.acquire_read, self.name, 5.0)
        self.assertIsInstance(first, aio.AsyncLease)
        self.assertNotEqual(first.token, second.token)
        with self.assertRaises(fencelock.LockedError):
            await self.client.acquire_write(self.name, 5.0)
        status = await self.client.rwlock_status(self.name)
        self.assertEqual((status.mode, len(status.holders)), ("read", 2))
        self.assertIn("reader-1", [h.owner for h in status.holders])
        await self.client.extend(first, 10.0)
        rebuilt = aio.AsyncLease.from_string("read", self.name, second.lease_string, 5.0)
        self.assertIsInstance(rebuilt, aio.AsyncLease)
        self.assertTrue(await self.client.release(rebuilt))
        self.assertTrue(await self.client.release(first))

        async with self.client.write_lock(self.name, ttl=1.0) as writer:
            self.assertEqual(writer.kind, "write")
            self.assertGreater(writer.token, max(first.token, second.token))
            await asyncio.sleep(1.3)  # renewed by its task, past a ttl
            writer.check()
            self.assertEqual((await self.client.rwlock_status(self.name)).mode, "write")
        async with self.client.read_lock(self.name, ttl=2.0) as reader:
            self.assertGreater(reader.token, writer.token)
        self.assertIsNone((await self.client.rwlock_status(self.name)).mode)


if __name__ == "__main__":
    unittest.main()
