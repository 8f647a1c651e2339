"""Lock sets (several names under one lease) and semaphore permits against a live fencelockd."""

from __future__ import annotations

import threading
import time
import unittest

import fencelock

import support
from support import needs_stack, unique_name


class WithoutService(unittest.TestCase):
    def test_bad_sets_and_permit_counts_are_refused_before_anything_is_sent(self) -> None:
        client = fencelock.Client([f"http://127.0.0.1:{support.closed_port()}"])
        for names in [[], "ab", ["a", "a"], ["a", "b/c"], [f"n{i}" for i in range(17)], None]:
            with self.assertRaises(fencelock.InvalidArgumentError, msg=repr(names)):
                client.acquire_set(names, 1)  # type: ignore[arg-type]
        for permits in [0, 65, -1, 2.0, True, "3"]:
            with self.assertRaises(fencelock.InvalidArgumentError, msg=repr(permits)):
                client.acquire_permit("ok", permits, 1)  # type: ignore[arg-type]

    def test_set_and_permit_leases_show_their_tokens_and_hide_their_secret(self) -> None:
        lease = fencelock.Lease("", "3,4.topsecretproof", None, 1.0, time.monotonic() + 1,
                                tokens={"a": 3, "b": 4})
        self.assertEqual(lease.kind, "set")
        self.assertEqual(lease.names, ("a", "b"))
        self.assertIsNone(lease.token)
        self.assertNotIn("topsecretproof", repr(lease))
        self.assertIn("'b': 4", repr(lease))
        permit = fencelock.Lease("w", "9.topsecretproof.3.1", 9, 1.0, time.monotonic() + 1,
                                 permits=3, slot=1)
        self.assertEqual(permit.kind, "permit")
        self.assertNotIn("topsecretproof", repr(permit))


@needs_stack
class LockSets(unittest.TestCase):
    def setUp(self) -> None:
        self.client = support.PatientClient(support.FENCELOCK_ENDPOINT)
        prefix = unique_name("py-set")
        self.a, self.b, self.c = f"{prefix}-a", f"{prefix}-b", f"{prefix}-c"

    def tearDown(self) -> None:
        self.client.close()

    def test_all_or_nothing_with_a_token_per_name(self) -> None:
        lease = self.client.acquire_set([self.b, self.a], 5.0)
        self.assertEqual(lease.kind, "set")
        self.assertEqual(lease.names, (self.a, self.b), "sorted by the service")
        for name in (self.a, self.b):
            self.assertTrue(self.client.status(name).held)
            self.assertEqual(self.client.current_token(name), lease.tokens[name])
        # A set overlapping in one name, and a single lock on a member, are both refused: and
        # the refused set took nothing (its other name stays free).
        with self.assertRaises(fencelock.LockedError):
            self.client.acquire_set([self.c, self.b], 5.0)
        self.assertFalse(self.client.status(self.c).held)
        with self.assertRaises(fencelock.LockedError):
            self.client.acquire(self.a, 5.0)

        before = lease.deadline
        self.client.extend(lease, 10.0)
        self.assertGreater(lease.deadline, before + 3.0)
        self.assertTrue(self.client.release(lease))
        self.assertFalse(self.client.release(lease), "release is idempotent")
        for name in (self.a, self.b):
            self.assertFalse(self.client.status(name).held)

        again = self.client.acquire_set([self.a, self.b, self.c], 5.0)
        for name in (self.a, self.b):
            self.assertGreater(again.tokens[name], lease.tokens[name], "tokens increase")
        self.assertTrue(self.client.release(again))

    def test_a_waiting_set_gets_its_names_when_the_holder_releases(self) -> None:
        holder = self.client.acquire(self.b, 10.0)
        threading.Timer(0.3, lambda: self.client.release(holder)).start()
        started = time.monotonic()
        lease = self.client.acquire_set([self.a, self.b], 5.0, wait=5.0)
        self.assertLess(time.monotonic() - started, 4.0, "woken by the release")
        self.assertGreater(lease.tokens[self.b], holder.token)
        self.assertTrue(self.client.release(lease))

    def test_lock_set_keeps_the_lease_alive_and_releases_it(self) -> None:
        # A ttl whose renewals fit the test command's load (0.5 s was renewed too late there).
        with self.client.lock_set([self.a, self.c], ttl=1.0) as lease:
            time.sleep(2.2)  # renewed in the background, past its ttl
            lease.check()
            self.assertTrue(self.client.status(self.c).held)
        self.assertFalse(self.client.status(self.a).held)
        self.assertFalse(self.client.status(self.c).held)


@needs_stack
class Semaphores(unittest.TestCase):
    def setUp(self) -> None:
        self.client = support.PatientClient(support.FENCELOCK_ENDPOINT)
        self.name = unique_name("py-semaphore")

    def tearDown(self) -> None:
        self.client.close()

    def test_at_most_n_permits_then_a_mismatched_count_is_refused(self) -> None:
        permits = [self.client.acquire_permit(self.name, 3, 5.0) for _ in range(3)]
        self.assertEqual(sorted(p.slot for p in permits), [0, 1, 2])
        self.assertEqual([p.kind for p in permits], ["permit"] * 3)
        tokens = [p.token for p in permits]
        self.assertEqual(len(set(tokens)), 3)
        with self.assertRaises(fencelock.LockedError):
            self.client.acquire_permit(self.name, 3, 5.0)
        with self.assertRaises(fencelock.PermitsMismatchError) as refused:
            self.client.acquire_permit(self.name, 5, 5.0)
        self.assertEqual(refused.exception.permits, 3)
        self.assertEqual(self.client.semaphore_status(self.name),
                         fencelock.SemaphoreStatus(permits=3, held=3))

        self.client.extend(permits[0], 10.0)
        self.assertTrue(self.client.release(permits[1]))
        fourth = self.client.acquire_permit(self.name, 3, 5.0)
        self.assertEqual(fourth.slot, permits[1].slot)
        self.assertGreater(fourth.token, max(tokens), "tokens increase")
        for lease in (permits[0], permits[2], fourth):
            self.assertTrue(self.client.release(lease))
        self.assertEqual(self.client.semaphore_status(self.name).held, 0)
        # Released everywhere: the semaphore can come back with another count at once.
        five = self.client.acquire_permit(self.name, 5, 5.0)
        self.assertEqual(five.permits, 5)
        self.assertTrue(self.client.release(five))

    def test_a_waiter_of_a_full_semaphore_is_woken_by_a_release(self) -> None:
        only = self.client.acquire_permit(self.name, 1, 10.0)
        threading.Timer(0.3, lambda: self.client.release(only)).start()
        started = time.monotonic()
        lease = self.client.acquire_permit(self.name, 1, 5.0, wait=5.0)
        self.assertLess(time.monotonic() - started, 4.0)
        self.assertTrue(self.client.release(lease))

    def test_permit_keeps_the_lease_alive_and_releases_it(self) -> None:
        with self.client.permit(self.name, 2, ttl=1.0) as lease:  # as the lock set's, above
            time.sleep(2.2)
            lease.check()
            self.assertEqual(self.client.semaphore_status(self.name).held, 1)
        self.assertEqual(self.client.semaphore_status(self.name).held, 0)


if __name__ == "__main__":
    unittest.main()
