"""The lease keeper and the context manager against a live fencelockd: renewal past many ttls,
the lost-lease signal before the deadline (lock keys deleted, fencelockd paused, a renewal bound),
and release at exit."""

from __future__ import annotations

import logging
import threading
import time
import unittest
from typing import List, Tuple

import fencelock

import support
from support import needs_stack, unique_name


class LostRecorder:
    """on_lost callback: when it fired, against the lease's deadline at that moment."""

    def __init__(self) -> None:
        self.calls: List[Tuple[float, float, fencelock.LeaseLostError]] = []
        self.fired = threading.Event()

    def __call__(self, lease: fencelock.Lease, error: fencelock.LeaseLostError) -> None:
        self.calls.append((time.monotonic(), lease.deadline, error))
        self.fired.set()


@needs_stack
class LeaseKeeperTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = support.PatientClient(support.FENCELOCK_ENDPOINT, request_timeout=0.5,
                                       retry_backoff=0.01)
        self.name = unique_name("py-keeper")

    def tearDown(self) -> None:
        self.client.close()

    def test_the_keeper_renews_past_several_ttls(self) -> None:
        # A 1 s ttl, as the other renewing tests: with 0.6 s one renewal slowed by a loaded CI
        # machine past the 0.5 s request timeout lost the lease.
        lease = self.client.acquire(self.name, 1.0)
        first_deadline = lease.deadline
        with self.client.keep(lease) as kept:
            time.sleep(3.2)  # more than three ttls
            self.assertFalse(kept.lost.is_set())
            kept.check()
            self.assertGreater(kept.deadline, first_deadline + 2.0)
            self.assertTrue(self.client.status(self.name).held)
        self.assertFalse(self.client.status(self.name).held, "released when the keeper ended")

    def test_deleted_lock_keys_are_signalled_before_the_deadline(self) -> None:
        recorder = LostRecorder()
        lease = self.client.acquire(self.name, 1.0)
        keeper = self.client.keep(lease, on_lost=recorder)
        try:
            support.delete_lock_keys(self.name)
            self.assertTrue(lease.lost.wait(2.0), "the lost signal never came")
            self.assertTrue(recorder.fired.wait(1.0))
            at, deadline, error = recorder.calls[0]
            self.assertLess(at, deadline, "signalled after the deadline")
            self.assertEqual(len(recorder.calls), 1)
            self.assertIsInstance(error.reason, fencelock.NotHeldError)
            self.assertIs(lease.lost_reason, error)
            with self.assertRaises(fencelock.LeaseLostError):
                lease.check()
            self.assertFalse(lease.valid())
        finally:
            keeper.stop_and_release()

    def test_a_paused_service_is_signalled_before_the_deadline(self) -> None:
        recorder = LostRecorder()
        lease = self.client.acquire(self.name, 1.0)
        keeper = self.client.keep(lease, on_lost=recorder)
        try:
            with support.paused_fencelockd():
                self.assertTrue(recorder.fired.wait(2.0), "the lost signal never came")
                self.assertTrue(lease.lost.is_set())
                at, deadline, error = recorder.calls[0]
                self.assertLess(at, deadline, "signalled after the deadline")
                self.assertLess(time.monotonic(), lease.deadline + 0.5)
                # The watchdog may fire while the first extend still waits for its answer.
                self.assertTrue(error.reason is None
                                or isinstance(error.reason, fencelock.TransportError))
        finally:
            keeper.stop_and_release()

    def test_a_renewal_bound_ends_in_the_lost_signal_before_the_deadline(self) -> None:
        recorder = LostRecorder()
        lease = self.client.acquire(self.name, 0.3)
        with self.client.keep(lease, max_renewals=2, on_lost=recorder):
            self.assertTrue(recorder.fired.wait(3.0))
            at, deadline, error = recorder.calls[0]
            self.assertLess(at, deadline)
            self.assertIn("bound", error.message)
            self.assertIsNone(error.reason)

    def test_the_lease_string_stays_out_of_the_logs(self) -> None:
        lease = self.client.acquire(self.name, 1.0)
        with self.assertLogs("fencelock", logging.WARNING) as logs:
            keeper = self.client.keep(lease)
            support.delete_lock_keys(self.name)
            self.assertTrue(lease.lost.wait(2.0))
            keeper.stop_and_release()
        self.assertTrue(logs.output)
        for line in logs.output:
            self.assertNotIn(lease.lease_string, line)
            self.assertNotIn(lease.lease_string.split(".", 1)[1], line)


@needs_stack
class LockContextManagerTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = support.PatientClient(support.FENCELOCK_ENDPOINT, request_timeout=0.5)
        self.name = unique_name("py-with")

    def tearDown(self) -> None:
        self.client.close()

    def test_the_block_holds_the_lock_and_the_exit_releases_it(self) -> None:
        with self.client.lock(self.name, ttl=1.0) as lease:
            time.sleep(2.2)  # renewed meanwhile, past two ttls
            lease.check()
            self.assertTrue(self.client.status(self.name).held)
            with self.assertRaises(fencelock.LockedError):
                self.client.acquire(self.name, 1.0)
        self.assertFalse(self.client.status(self.name).held)

    def test_an_exception_in_the_block_still_releases(self) -> None:
        with self.assertRaises(KeyError):
            with self.client.lock(self.name, ttl=5):
                raise KeyError("boom")
        self.assertFalse(self.client.status(self.name).held)

    def test_a_held_lock_raises_locked_at_the_with(self) -> None:
        holder = self.client.acquire(self.name, 5.0)
        with self.assertRaises(fencelock.LockedError):
            with self.client.lock(self.name, ttl=1, wait=0.2):
                self.fail("the block must not run")
        self.client.release(holder)

    def test_a_lost_lease_is_visible_in_the_block_and_reported_at_exit(self) -> None:
        with self.assertRaises(fencelock.LeaseLostError):
            with self.client.lock(self.name, ttl=1.0) as lease:
                support.delete_lock_keys(self.name)
                self.assertTrue(lease.lost.wait(2.0))
                with self.assertRaises(fencelock.LeaseLostError):
                    lease.check()
        # raise_if_lost=False: the block decides.
        with self.client.lock(self.name, ttl=1.0, raise_if_lost=False) as lease:
            support.delete_lock_keys(self.name)
            self.assertTrue(lease.lost.wait(2.0))


if __name__ == "__main__":
    unittest.main()
