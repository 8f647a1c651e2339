"""The client against a live fencelockd: every call, every error class, fail-over, retries."""

from __future__ import annotations

import hashlib
import json
import os
import ssl
import subprocess
import tempfile
import threading
import time
import unittest

import fencelock
from fencelock.errors import error_for

import support
from support import needs_stack, unique_name


class WithoutService(unittest.TestCase):
    def test_bad_names_are_refused_before_anything_is_sent(self) -> None:
        client = fencelock.Client([f"http://127.0.0.1:{support.closed_port()}"])
        for bad in ["", ".", "..", "a/b", "a b", "x" * 201, "é"]:
            with self.assertRaises(fencelock.InvalidArgumentError, msg=bad):
                client.acquire(bad, 1)
        with self.assertRaises(fencelock.InvalidArgumentError):
            client.acquire("ok", 0)
        with self.assertRaises(fencelock.InvalidArgumentError):
            client.acquire("ok", 1, wait=-1)

    def test_bad_options_are_refused(self) -> None:
        for kwargs in [dict(endpoints=[]), dict(endpoints=["ftp://x:1"]),
                       dict(endpoints=["http://h:1/path"]), dict(endpoints=["http://h:99999"]),
                       dict(request_timeout=0), dict(max_retries=11),
                       dict(api_key="has space")]:
            with self.assertRaises(fencelock.InvalidArgumentError, msg=str(kwargs)):
                fencelock.Client(**kwargs)  # type: ignore[arg-type]

    def test_the_api_key_and_the_lease_string_stay_out_of_repr_and_str(self) -> None:
        client = fencelock.Client("http://127.0.0.1:1", api_key="s3cret-key")
        self.assertNotIn("s3cret", repr(client))
        lease = fencelock.Lease("n", "7.topsecretproof", 7, 1.0, time.monotonic() + 1)
        for text in (repr(lease), str(lease), f"{lease}"):
            self.assertNotIn("topsecretproof", text)
            self.assertIn("token=7", text)
        with self.assertRaises(TypeError):
            import pickle
            pickle.dumps(lease)

    def test_without_arguments_the_client_reads_the_clis_variables(self) -> None:
        saved = {k: os.environ.get(k) for k in ("FENCELOCK_ENDPOINT", "FENCELOCK_API_KEY")}
        try:
            os.environ["FENCELOCK_ENDPOINT"] = "http://127.0.0.1:1, http://127.0.0.1:2"
            os.environ["FENCELOCK_API_KEY"] = "from-the-environment"
            client = fencelock.Client()
            self.assertEqual(repr(client), "Client(endpoints=['http://127.0.0.1:1', "
                                           "'http://127.0.0.1:2'], api_key=***)")
            explicit = fencelock.Client("http://127.0.0.1:3", api_key="")  # arguments win
            self.assertEqual(repr(explicit), "Client(endpoints=['http://127.0.0.1:3'])")
            del os.environ["FENCELOCK_ENDPOINT"], os.environ["FENCELOCK_API_KEY"]
            self.assertEqual(repr(fencelock.Client()), "Client(endpoints=['http://127.0.0.1:8080'])")
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value

    def test_a_ca_file_or_ssl_context_with_an_http_endpoint_is_refused_as_by_the_cli(self) -> None:
        saved = os.environ.get("FENCELOCK_CACERT")
        try:
            os.environ["FENCELOCK_CACERT"] = "/nonexistent/ca.pem"
            for endpoints in ("http://127.0.0.1:1", ["https://127.0.0.1:1", "http://127.0.0.1:2"]):
                with self.assertRaises(fencelock.InvalidArgumentError, msg=str(endpoints)):
                    fencelock.Client(endpoints)
            del os.environ["FENCELOCK_CACERT"]
            with self.assertRaises(fencelock.InvalidArgumentError):
                fencelock.Client("http://127.0.0.1:1", ssl_context=ssl.create_default_context())
            fencelock.Client("http://127.0.0.1:1")  # no certificate checking asked for
        finally:
            if saved is None:
                os.environ.pop("FENCELOCK_CACERT", None)
            else:
                os.environ["FENCELOCK_CACERT"] = saved

    def test_a_hostile_answer_is_a_fencelock_error_and_never_read_past_1_mib(self) -> None:
        for what, answer in support.HOSTILE_ANSWERS.items():
            with self.subTest(what), support.HostileServer(answer) as port:
                client = fencelock.Client(f"http://127.0.0.1:{port}", request_timeout=2)
                with self.assertRaises((fencelock.TransportError, fencelock.InternalError)):
                    client.acquire("x", 10)
                client.close()

    def test_a_grant_claims_no_more_than_its_ttl_and_no_impossible_token(self) -> None:
        def answer(body: bytes) -> bytes:
            return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
        # validity beyond the ttl asked for, and a wait longer than the call: both cut down.
        generous = b'{"name":"x","lease":"1.x","token":7,"ttl_ms":10000,' \
                   b'"validity_ms":999999999,"waited_ms":999999999}'
        with support.HostileServer(answer(generous)) as port:
            client = fencelock.Client(f"http://127.0.0.1:{port}", request_timeout=2)
            lease = client.acquire("x", 10)
            self.assertLessEqual(lease.deadline - time.monotonic(), 10.0)
            self.assertEqual(lease.token, 7)
            client.close()
        for token in (b"0", b"-7", b"9223372036854775808"):
            body = b'{"name":"x","lease":"1.x","token":%s,"ttl_ms":10000,"validity_ms":9000}' % token
            with self.subTest(token=token), support.HostileServer(answer(body)) as port:
                client = fencelock.Client(f"http://127.0.0.1:{port}", request_timeout=2)
                with self.assertRaises(fencelock.InternalError):
                    client.acquire("x", 10)
                client.close()

    def test_an_acquire_whose_answer_was_lost_asks_again_with_the_same_request_id(self) -> None:
        for given in (None, "job-7:attempt/1"):
            with self.subTest(request_id=given), support.RecordingServer(
                    [None, support.REPEATED_GRANT]) as server:
                client = fencelock.Client(server.url, retry_backoff=0.01, request_timeout=2)
                lease = client.acquire("x", 10, request_id=given)
                self.assertEqual((lease.token, lease.lease_string), (5, "5.repeated"))
                self.assertEqual(len(server.bodies), 2)
                first, second = (body["request_id"] for body in server.bodies)
                self.assertEqual(first, second)
                if given is None:
                    self.assertRegex(first, r"^[0-9a-f]{32}$")
                else:
                    self.assertEqual(first, given)
                client.close()

    def test_each_acquire_call_names_a_request_of_its_own(self) -> None:
        with support.RecordingServer([support.REPEATED_GRANT]) as server:
            client = fencelock.Client(server.url)
            client.acquire("x", 10)
            client.acquire("x", 10)
            ids = [body["request_id"] for body in server.bodies]
            self.assertEqual(len(set(ids)), 2)
            client.close()

    def test_a_lock_set_permit_or_revoke_whose_answer_was_lost_is_not_asked_again(self) -> None:
        grants = {"acquire_set": lambda c: c.acquire_set(["a", "b"], 10),
                  "acquire_permit": lambda c: c.acquire_permit("s", 3, 10),
                  "revoke": lambda c: c.revoke("x", 10)}
        for what, grant in grants.items():
            with self.subTest(what), support.RecordingServer([None]) as server:
                client = fencelock.Client(server.url, retry_backoff=0.01, request_timeout=2)
                with self.assertRaises(fencelock.TransportError):
                    grant(client)
                self.assertEqual(len(server.bodies), 1)
                self.assertNotIn("request_id", server.bodies[0])

    def test_an_acquire_answered_503_is_not_asked_again(self) -> None:
        unavailable = support.http_answer(
            503, b'{"error":{"code":"unavailable","message":"too few lock nodes"}}')
        with support.RecordingServer([unavailable]) as server:
            client = fencelock.Client(server.url, retry_backoff=0.01)
            with self.assertRaises(fencelock.UnavailableError):
                client.acquire("x", 10)
            self.assertEqual(len(server.bodies), 1)
            client.close()

    def test_a_bad_request_id_is_refused_before_anything_is_sent(self) -> None:
        client = fencelock.Client([f"http://127.0.0.1:{support.closed_port()}"])
        for bad in ["", "has space", "x" * 65, "é", "tab\t"]:
            with self.assertRaises(fencelock.InvalidArgumentError, msg=bad):
                client.acquire("ok", 1, request_id=bad)

    def test_a_listing_page_is_read_and_its_query_values_are_encoded(self) -> None:
        page = support.http_answer(
            200, b'{"locks":[{"name":"inv-1","token":9223372036854775807,"owner":"billing-7",'
                 b'"remaining_ms":2500},{"name":"inv-2","token":null,"owner":null,'
                 b'"remaining_ms":0}],"next":"2-1536-0"}')
        with support.RecordingServer([page]) as server:
            client = fencelock.Client(server.url)
            listing = client.list_locks("inv-", 2, "1-0+x")
            self.assertEqual(server.targets, ["/v1/locks?limit=2&prefix=inv-&cursor=1-0%2Bx"])
            self.assertEqual(listing.next, "2-1536-0")
            self.assertEqual(listing.locks, [
                fencelock.HeldLock("inv-1", 2**63 - 1, "billing-7", 2.5),
                fencelock.HeldLock("inv-2", None, None, 0.0)])
            client.list_locks()
            self.assertEqual(server.targets[-1], "/v1/locks?limit=100")
            client.close()
        for bad in (0, 1001, True, "10"):
            with self.assertRaises(fencelock.InvalidArgumentError, msg=repr(bad)):
                client.list_locks("", bad)  # type: ignore[arg-type]

    def test_a_watch_sends_its_token_and_wait_and_reads_changed(self) -> None:
        answer = support.http_answer(
            200, b'{"name":"inv-1","changed":false,"held":true,"remaining_ms":2500,'
                 b'"token":9223372036854775807,"owner":"billing-7"}')
        with support.RecordingServer([answer]) as server:
            client = fencelock.Client(server.url)
            watched = client.watch("inv-1", 2**63 - 1, 1.5)
            self.assertEqual(server.targets,
                             ["/v1/locks/inv-1?after_token=9223372036854775807&wait_ms=1500"])
            self.assertEqual(watched, fencelock.LockStatus(
                held=True, remaining=2.5, last_token=0, token=2**63 - 1, owner="billing-7",
                changed=False))
            client.watch("inv-1", 0)
            self.assertEqual(server.targets[-1], "/v1/locks/inv-1?after_token=0&wait_ms=30000")
            client.close()

    def test_a_bad_watch_is_refused_before_anything_is_sent(self) -> None:
        with support.RecordingServer([support.http_answer(200, b"{}")]) as server:
            client = fencelock.Client(server.url)
            for name, token, wait in [("a b", 1, 1), ("", 1, 1), ("ok", -1, 1), ("ok", 2**63, 1),
                                      ("ok", True, 1), ("ok", "7", 1), ("ok", 1.0, 1),
                                      ("ok", 1, -1), ("ok", 1, 3601), ("ok", 1, "5")]:
                with self.assertRaises(fencelock.InvalidArgumentError, msg=(name, token, wait)):
                    client.watch(name, token, wait)  # type: ignore[arg-type]
            self.assertEqual(server.targets, [])
            client.close()

    def test_each_wire_code_has_its_class_and_stable_code(self) -> None:
        table = [
            (409, "locked", fencelock.LockedError, "locked"),
            (409, "not_held", fencelock.NotHeldError, "not_held"),
            (503, "unavailable", fencelock.UnavailableError, "unavailable"),
            (401, "unauthenticated", fencelock.DeniedError, "denied"),
            (403, "forbidden", fencelock.DeniedError, "denied"),
            (429, "rate_limited", fencelock.RateLimitedError, "rate_limited"),
            (429, "quota_exceeded", fencelock.RateLimitedError, "rate_limited"),
            (400, "invalid_request", fencelock.InvalidArgumentError, "invalid_argument"),
            (413, "payload_too_large", fencelock.InvalidArgumentError, "invalid_argument"),
            (500, "internal", fencelock.InternalError, "internal"),
            (503, None, fencelock.UnavailableError, "unavailable"),
            (418, "new_code", fencelock.InvalidArgumentError, "invalid_argument"),
        ]
        for status, wire, cls, code in table:
            error = error_for(status, wire, "m", None)
            self.assertIs(type(error), cls, (status, wire))
            self.assertEqual(error.code, code)
            self.assertIsInstance(error, fencelock.FencelockError)
            self.assertEqual(error.wire_code, wire)


@needs_stack
class AgainstTheService(unittest.TestCase):
    def setUp(self) -> None:
        self.client = support.PatientClient(support.FENCELOCK_ENDPOINT)
        self.name = unique_name("py-client")

    def tearDown(self) -> None:
        self.client.close()

    def test_acquire_extend_status_release_and_tokens(self) -> None:
        before = time.monotonic()
        lease = self.client.acquire(self.name, 2.0, owner="python-tests")
        after = time.monotonic()
        self.assertGreater(lease.token, 0)
        self.assertEqual(lease.ttl, 2.0)
        # Conservative: never later than our send time plus the ttl.
        self.assertLessEqual(lease.deadline, after + 2.0)
        self.assertGreater(lease.deadline, before + 1.5)
        self.assertTrue(lease.valid())
        lease.check()

        status = self.client.status(self.name)
        self.assertTrue(status.held)
        assert status.remaining is not None
        self.assertLessEqual(status.remaining, 2.0)
        self.assertEqual(status.last_token, lease.token)
        self.assertEqual(self.client.current_token(self.name), lease.token)

        old_deadline = lease.deadline
        self.client.extend(lease, 5.0)
        self.assertEqual(lease.ttl, 5.0)
        self.assertGreater(lease.deadline, old_deadline + 2.0)

        self.assertTrue(self.client.release(lease))
        self.assertFalse(self.client.release(lease), "release is idempotent")
        status = self.client.status(self.name)
        self.assertFalse(status.held)
        self.assertIsNone(status.remaining)

        drawn = self.client.next_token(self.name)
        self.assertGreater(drawn, lease.token)
        self.assertEqual(self.client.current_token(self.name), drawn)
        self.assertGreater(self.client.acquire(self.name, 1.0).token, drawn)

    def test_status_shows_the_holders_token_and_owner(self) -> None:
        status = self.client.status(self.name)
        self.assertEqual((status.held, status.token, status.owner), (False, None, None))
        lease = self.client.acquire(self.name, 5.0, owner="billing-7")
        status = self.client.status(self.name)
        self.assertEqual((status.held, status.token, status.owner), (True, lease.token, "billing-7"))
        self.assertTrue(self.client.release(lease))
        anonymous = self.client.acquire(self.name, 5.0)
        status = self.client.status(self.name)
        self.assertEqual((status.token, status.owner), (anonymous.token, None))
        self.client.release(anonymous)

    def test_revoke_takes_a_held_lock_with_a_newer_token(self) -> None:
        held = self.client.acquire(self.name, 30.0, owner="stuck-job")
        revoker = self.client.revoke(self.name, 5.0, owner="ops-oncall")
        self.assertEqual(revoker.kind, "lock")
        self.assertEqual(revoker.name, self.name)
        self.assertGreater(revoker.token, held.token)
        self.assertEqual(revoker.ttl, 5.0)
        self.assertLessEqual(revoker.deadline, time.monotonic() + 5.0)
        self.assertTrue(revoker.valid())
        with self.assertRaises(fencelock.NotHeldError):
            self.client.extend(held)
        self.assertFalse(self.client.release(held))
        status = self.client.status(self.name)
        self.assertEqual((status.held, status.token, status.owner),
                         (True, revoker.token, "ops-oncall"))
        # The revoker's lease is a lease like any other.
        self.client.extend(revoker, 10.0)
        self.assertEqual(revoker.ttl, 10.0)
        self.assertTrue(self.client.release(revoker))
        self.assertFalse(self.client.status(self.name).held)

    def test_revoke_of_a_free_lock_takes_it(self) -> None:
        before = self.client.current_token(self.name)
        lease = self.client.revoke(self.name, 5.0)
        self.assertGreater(lease.token, before)
        status = self.client.status(self.name)
        self.assertEqual((status.held, status.token, status.owner), (True, lease.token, None))
        with self.assertRaises(fencelock.LockedError):
            self.client.acquire(self.name, 1.0)
        with self.client.keep(lease):
            pass  # a keeper takes it, and releases it at exit
        self.assertFalse(self.client.status(self.name).held)

    def test_a_held_lock_is_locked_with_retry_after(self) -> None:
        lease = self.client.acquire(self.name, 5.0)
        with self.assertRaises(fencelock.LockedError) as caught:
            self.client.acquire(self.name, 1.0)
        error = caught.exception
        self.assertEqual(error.code, "locked")
        self.assertEqual(error.http_status, 409)
        self.assertIsNotNone(error.retry_after)
        assert error.retry_after is not None
        # The holder's remaining ttl plus 1 ms (docs/api.md): at most 5.001 s for a 5 s lease.
        self.assertLessEqual(error.retry_after, 5.001)
        self.assertNotIn(lease.lease_string, str(error))
        self.assertRegex(error.request_id or "", r"^[0-9a-f]{16}$")
        self.client.release(lease)

    def test_a_waiting_acquire_gets_the_lock_when_it_is_released(self) -> None:
        first = self.client.acquire(self.name, 10.0)
        timer = threading.Timer(0.3, lambda: self.client.release(first))
        timer.start()
        try:
            started = time.monotonic()
            second = self.client.acquire(self.name, 2.0, wait=5.0)
            self.assertLess(time.monotonic() - started, 4.0)
            self.assertGreater(second.token, first.token)
            # The deadline counts the wait: send time + waited + validity, within the ttl after it.
            self.assertLessEqual(second.deadline, time.monotonic() + 2.0)
            self.client.release(second)
        finally:
            timer.join(5)

    def test_extending_a_released_or_expired_lease_is_not_held(self) -> None:
        lease = self.client.acquire(self.name, 0.2)
        time.sleep(0.4)
        with self.assertRaises(fencelock.NotHeldError) as caught:
            self.client.extend(lease)
        self.assertEqual(caught.exception.code, "not_held")
        self.assertNotIn(lease.lease_string, str(caught.exception))
        self.assertFalse(self.client.release(lease))

    def test_the_service_refuses_a_ttl_over_its_maximum(self) -> None:
        with self.assertRaises(fencelock.InvalidArgumentError) as caught:
            self.client.acquire(self.name, 3601)
        self.assertEqual(caught.exception.wire_code, "invalid_request")
        self.assertEqual(caught.exception.http_status, 400)

    def test_an_altered_lease_is_refused_and_changes_nothing(self) -> None:
        lease = self.client.acquire(self.name, 5.0)
        forged = fencelock.Lease(self.name, str(lease.token + 1) + lease.lease_string[
            lease.lease_string.index("."):], lease.token + 1, 5.0, lease.deadline)
        with self.assertRaises(fencelock.InvalidArgumentError):
            self.client.release(forged)
        self.assertTrue(self.client.status(self.name).held)
        self.client.release(lease)

    def test_keep_alive_connections_are_reused(self) -> None:
        for _ in range(5):
            self.client.status(self.name)
        endpoint = self.client._endpoints[0]
        self.assertEqual(len(endpoint._idle), 1)

    def test_the_next_endpoint_answers_when_the_first_is_a_closed_port(self) -> None:
        client = support.PatientClient([f"http://127.0.0.1:{support.closed_port()}",
                                        support.FENCELOCK_ENDPOINT], retry_backoff=0.01)
        lease = client.acquire(self.name, 2.0)  # not delivered anywhere: safe to retry
        self.assertTrue(client.status(self.name).held)
        client.extend(lease)
        self.assertTrue(client.release(lease))
        fresh = support.PatientClient([f"http://127.0.0.1:{support.closed_port()}",
                                       support.FENCELOCK_ENDPOINT], retry_backoff=0.01)
        revoker = fresh.revoke(self.name, 2.0)  # a revoke too
        self.assertTrue(fresh.release(revoker))
        fresh.close()

    def test_no_endpoint_reachable_is_a_transport_error(self) -> None:
        client = fencelock.Client([f"http://127.0.0.1:{support.closed_port()}",
                                   f"http://127.0.0.1:{support.closed_port()}"],
                                  retry_backoff=0.01)
        with self.assertRaises(fencelock.TransportError) as caught:
            client.status(self.name)
        self.assertEqual(caught.exception.code, "transport")
        with self.assertRaises(fencelock.TransportError):
            client.acquire(self.name, 1.0)

    def test_an_acquire_that_may_have_been_delivered_is_asked_again_a_revoke_is_not(self) -> None:
        fake = support.FakeServer()
        try:
            client = support.PatientClient([fake.url, support.FENCELOCK_ENDPOINT],
                                           retry_backoff=0.01, request_timeout=2)
            with self.assertRaises(fencelock.TransportError):
                client.revoke(self.name, 2.0)  # a repeat would revoke its own grant
            self.assertEqual(fake.requests, 1)
            with self.assertRaises(fencelock.TransportError):
                client.acquire_set([self.name], 2.0)
            self.assertEqual(fake.requests, 2)
            self.assertFalse(self.client.status(self.name).held,
                             "the second endpoint was never asked")
            # The acquire names its request: asked again, at the next endpoint, it is granted.
            lease = client.acquire(self.name, 2.0)
            self.assertEqual(fake.requests, 3)
            self.assertEqual(self.client.status(self.name).token, lease.token)
            self.assertTrue(client.release(lease))
            # A status is safe to repeat: it fails over.
            self.assertFalse(fencelock.Client([fake.url, support.FENCELOCK_ENDPOINT],
                                              retry_backoff=0.01).status(self.name).held)
        finally:
            fake.stop()

    def test_the_same_request_id_answers_the_same_grant_while_it_is_held(self) -> None:
        first_id, other_id = unique_name("py-request"), unique_name("py-request")
        lease = self.client.acquire(self.name, 5.0, owner="py-repeat", request_id=first_id)
        again = self.client.acquire(self.name, 5.0, owner="py-repeat", request_id=first_id)
        self.assertEqual((again.lease_string, again.token), (lease.lease_string, lease.token))
        with self.assertRaises(fencelock.LockedError):
            self.client.acquire(self.name, 5.0, request_id=other_id)
        self.assertTrue(self.client.release(again))
        fresh = self.client.acquire(self.name, 5.0, request_id=first_id)
        self.assertGreater(fresh.token, lease.token, "released: the same id is a new acquire")
        self.assertTrue(self.client.release(fresh))

    def test_list_locks_pages_through_the_held_locks_of_a_prefix(self) -> None:
        held = {}
        leases = []
        for i in range(5):
            owner = f"py-owner-{i}" if i % 2 == 0 else None
            leases.append(self.client.acquire(f"{self.name}.{i}", 30.0, owner=owner))
            held[leases[-1].name] = (leases[-1].token, owner)
        leases.append(self.client.acquire(self.name + "-other", 30.0))  # another prefix
        listed = {}
        cursor = None
        for _ in range(100):
            page = self.client.list_locks(self.name + ".", 2, cursor)
            for lock in page.locks:
                listed[lock.name] = (lock.token, lock.owner)
                self.assertTrue(0 < lock.remaining <= 30.0)
            cursor = page.next
            if cursor is None:
                break
        self.assertIsNone(cursor, "the listing ends")
        self.assertEqual(listed, held)
        self.assertEqual({lock.name: (lock.token, lock.owner)
                          for lock in self.client.iter_locks(self.name + ".", 3)}, held)
        for lease in leases:
            self.client.release(lease)

    def test_a_watch_is_woken_by_a_release_from_another_client(self) -> None:
        lease = self.client.acquire(self.name, 30.0)
        other = fencelock.Client(support.FENCELOCK_ENDPOINT)
        timer = threading.Timer(0.5, lambda: other.release(lease))
        timer.start()
        try:
            started = time.monotonic()
            watched = self.client.watch(self.name, lease.token, wait=20)
            self.assertLess(time.monotonic() - started, 5.0)
            self.assertEqual((watched.changed, watched.held, watched.token, watched.remaining),
                             (True, False, None, None))
        finally:
            timer.join(5)
            other.close()

    def test_a_watch_whose_wait_runs_out_answers_the_lock_unchanged(self) -> None:
        lease = self.client.acquire(self.name, 30.0, owner="py-watch")
        # The wait outlasts the request timeout: the call's time bound is extended by it.
        client = fencelock.Client(support.FENCELOCK_ENDPOINT, request_timeout=0.5)
        started = time.monotonic()
        watched = client.watch(self.name, lease.token, wait=1.5)
        self.assertGreaterEqual(time.monotonic() - started, 1.4)
        self.assertEqual((watched.changed, watched.held, watched.token, watched.owner),
                         (False, True, lease.token, "py-watch"))
        self.assertEqual(watched.last_token, 0, "a watch's answer has no last_token")
        client.close()
        self.assertTrue(self.client.release(lease))

    def test_a_watch_of_another_token_or_a_free_lock_answers_at_once(self) -> None:
        started = time.monotonic()
        free = self.client.watch(self.name, 1, wait=20)
        self.assertEqual((free.changed, free.held, free.token), (True, False, None))
        lease = self.client.acquire(self.name, 30.0)
        other = self.client.watch(self.name, lease.token - 1, wait=20)
        self.assertEqual((other.changed, other.held, other.token), (True, True, lease.token))
        self.assertLess(time.monotonic() - started, 5.0)
        self.assertTrue(self.client.release(lease))

    def test_a_service_without_its_lock_nodes_is_unavailable(self) -> None:
        port = support.SPARE_PORT_BASE + 1
        with support.fencelockd_without_lock_nodes(port) as url:
            client = fencelock.Client(url, retry_backoff=0.01)
            with self.assertRaises(fencelock.UnavailableError) as caught:
                client.acquire(self.name, 1.0)
            self.assertEqual(caught.exception.code, "unavailable")
            self.assertEqual(caught.exception.http_status, 503)
            with self.assertRaises(fencelock.UnavailableError):
                client.current_token(self.name)
            # Retried on the next endpoint: the live one answers.
            both = fencelock.Client([url, support.FENCELOCK_ENDPOINT], retry_backoff=0.01)
            self.assertFalse(both.status(self.name).held)

    def test_a_connection_the_server_closed_while_idle_is_not_used_for_an_acquire(self) -> None:
        port = support.SPARE_PORT_BASE + 4
        with support.fencelockd_without_lock_nodes(port, ["--idle-timeout", "1s"]) as url:
            client = fencelock.Client(url, max_retries=0)
            with self.assertRaises(fencelock.UnavailableError):
                client.status(self.name)
            self.assertEqual(len(client._endpoints[0]._idle), 1)
            time.sleep(1.5)  # fencelockd closes the idle keep-alive connection
            # Were the closed connection used, the acquire would count as maybe delivered and
            # fail with TransportError; a fresh connection gets the service's own answer.
            with self.assertRaises(fencelock.UnavailableError):
                client.acquire(self.name, 1.0)

    def test_api_keys_denied_and_rate_limited(self) -> None:
        secret, slow_secret = "py-" + "a" * 40, "py-" + "b" * 40
        keys = {"keys": [
            {"id": "reader", "secret_sha256": hashlib.sha256(secret.encode()).hexdigest(),
             "names": ["allowed.*"], "rights": ["read"]},
            {"id": "slow", "secret_sha256": hashlib.sha256(slow_secret.encode()).hexdigest(),
             "names": ["*"], "rights": ["read"], "rate": 1, "burst": 1}]}
        with tempfile.NamedTemporaryFile("w", suffix=".json") as auth:
            json.dump(keys, auth)
            auth.flush()
            port = support.SPARE_PORT_BASE + 2
            with support.fencelockd_without_lock_nodes(port, ["--auth-file", auth.name]) as url:
                anonymous = fencelock.Client(url, max_retries=0)
                with self.assertRaises(fencelock.DeniedError) as caught:
                    anonymous.status("allowed.x")
                self.assertEqual((caught.exception.http_status, caught.exception.wire_code),
                                 (401, "unauthenticated"))
                reader = fencelock.Client(url, api_key=secret, max_retries=0)
                with self.assertRaises(fencelock.DeniedError) as caught:
                    reader.acquire("allowed.x", 1.0)  # no "lock" right
                self.assertEqual(caught.exception.wire_code, "forbidden")
                self.assertNotIn(secret, str(caught.exception))
                with self.assertRaises(fencelock.DeniedError) as caught:
                    reader.revoke("allowed.x", 1.0)   # no "admin" right
                self.assertEqual(caught.exception.wire_code, "forbidden")
                with self.assertRaises(fencelock.DeniedError):
                    reader.status("elsewhere")        # no pattern matches
                # The key passes; the lock nodes (closed ports) do not answer.
                with self.assertRaises(fencelock.UnavailableError):
                    reader.status("allowed.x")
                slow = fencelock.Client(url, api_key=slow_secret, max_retries=0)
                with self.assertRaises(fencelock.RateLimitedError) as caught:
                    for _ in range(5):
                        try:
                            slow.status("x")
                        except fencelock.UnavailableError:
                            pass
                self.assertEqual(caught.exception.code, "rate_limited")
                self.assertIsNotNone(caught.exception.retry_after)

    def test_https_checks_the_certificate(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
            subprocess.run(
                ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                 "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
                 "-subj", "/CN=fencelock-test", "-addext",
                 "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                check=True, capture_output=True, timeout=30)
            port = support.SPARE_PORT_BASE + 3
            with support.fencelockd_without_lock_nodes(
                    port, ["--tls-cert", cert, "--tls-key", key]):
                trusted = ssl.create_default_context(cafile=cert)
                client = fencelock.Client(f"https://127.0.0.1:{port}", ssl_context=trusted,
                                          max_retries=0)
                with self.assertRaises(fencelock.UnavailableError):  # TLS worked; no lock nodes
                    client.acquire(self.name, 1.0)
                untrusting = fencelock.Client(f"https://127.0.0.1:{port}", max_retries=0)
                with self.assertRaises(fencelock.TlsError) as caught:
                    untrusting.status(self.name)
                self.assertEqual(caught.exception.code, "tls")
                plain = fencelock.Client(f"http://127.0.0.1:{port}", max_retries=0)
                with self.assertRaises(fencelock.InvalidArgumentError) as plain_caught:
                    plain.acquire(self.name, 1.0)
                self.assertEqual(plain_caught.exception.wire_code, "plain_http_on_tls_port")

    def test_one_client_serves_many_threads(self) -> None:
        names = [f"{self.name}-{i}" for i in range(8)]
        tokens: dict = {}
        errors: list = []

        def work(name: str) -> None:
            try:
                for _ in range(5):
                    lease = self.client.acquire(name, 2.0, wait=2.0)
                    self.assertTrue(self.client.release(lease))
                tokens[name] = self.client.current_token(name)
            except BaseException as e:  # reported by the main thread
                errors.append(e)

        threads = [threading.Thread(target=work, args=(n,)) for n in names]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.assertEqual(errors, [])
        self.assertEqual(sorted(tokens), sorted(names))
        self.assertTrue(all(token >= 5 for token in tokens.values()))


if __name__ == "__main__":
    unittest.main()
