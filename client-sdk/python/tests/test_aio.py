"""fencelock.aio against a live fencelockd: every call, the lock block and its renewal task, the
lost-lease signal, a cancelled waiter that releases what it was granted, TLS, API keys,
fail-over, and tokens read as exact integers."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import ssl
import subprocess
import tempfile
import time
import unittest

import fencelock
from fencelock import _calls, aio
from fencelock._http import Reply

import support
from support import needs_stack, unique_name


async def patiently(grant, *args, **kwargs):  # type: ignore[no-untyped-def]
    """support.PatientClient's rule for the asyncio client: a 503 to a grant is tried again."""
    for _ in range(10):
        try:
            return await grant(*args, **kwargs)
        except fencelock.UnavailableError:
            await asyncio.sleep(0.1)
    return await grant(*args, **kwargs)


class WithoutService(unittest.IsolatedAsyncioTestCase):
    async def test_bad_names_and_options_are_refused_before_anything_is_sent(self) -> None:
        client = aio.AsyncClient([f"http://127.0.0.1:{support.closed_port()}"])
        for bad in ["", "..", "a/b", "x" * 201]:
            with self.assertRaises(fencelock.InvalidArgumentError, msg=bad):
                await client.acquire(bad, 1)
        with self.assertRaises(fencelock.InvalidArgumentError):
            await client.acquire_set(["a", "a"], 1)
        with self.assertRaises(fencelock.InvalidArgumentError):
            await client.acquire_permit("a", 65, 1)
        for kwargs in [dict(endpoints=[]), dict(endpoints=["ftp://x:1"]), dict(max_retries=11),
                       dict(api_key="has space")]:
            with self.assertRaises(fencelock.InvalidArgumentError, msg=str(kwargs)):
                aio.AsyncClient(**kwargs)  # type: ignore[arg-type]
        await client.aclose()

    async def test_without_arguments_it_reads_the_clis_variables_and_hides_the_key(self) -> None:
        saved = {k: os.environ.get(k) for k in ("FENCELOCK_ENDPOINT", "FENCELOCK_API_KEY")}
        try:
            os.environ["FENCELOCK_ENDPOINT"] = "http://127.0.0.1:1, http://127.0.0.1:2"
            os.environ["FENCELOCK_API_KEY"] = "from-the-environment"
            self.assertEqual(repr(aio.AsyncClient()), "AsyncClient(endpoints=["
                             "'http://127.0.0.1:1', 'http://127.0.0.1:2'], api_key=***)")
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value

    async def test_tokens_up_to_two_to_the_63_are_read_exactly(self) -> None:
        for token in (2**53 + 1, 2**63 - 1):
            body = json.dumps({"lease": "1.secret", "token": token, "validity_ms": 1000})
            lease = _calls.acquire("n", 1, 0, None, lease_class=aio.AsyncLease).finish(
                Reply(200, {}, body.encode()), time.monotonic())
            self.assertEqual(lease.token, token)
            self.assertIsInstance(lease.lost, asyncio.Event)
        # The API's tokens are int64 (docs/openapi.yaml): 2^63 is no token.
        body = json.dumps({"lease": "1.secret", "token": 2**63, "validity_ms": 1000})
        with self.assertRaises(fencelock.InternalError):
            _calls.acquire("n", 1, 0, None, lease_class=aio.AsyncLease).finish(
                Reply(200, {}, body.encode()), time.monotonic())

    async def test_a_status_holds_a_possible_token_and_a_string_owner_or_nulls(self) -> None:
        def read(fields: str) -> fencelock.LockStatus:
            body = '{"name":"n","held":true,"remaining_ms":900,"last_token":9,%s}' % fields
            return _calls.status("n").finish(Reply(200, {}, body.encode()), time.monotonic())
        self.assertEqual(read('"token":9,"owner":"billing-7"'),
                         fencelock.LockStatus(True, 0.9, 9, token=9, owner="billing-7"))
        self.assertEqual((read('"token":null,"owner":null').token, read('"x":0').owner),
                         (None, None))
        for fields in ('"token":0', '"token":-1', '"token":"9"', '"token":9223372036854775808',
                       '"owner":7', '"owner":["x"]'):
            with self.subTest(fields), self.assertRaises(fencelock.InternalError):
                read(fields)

    async def test_a_hostile_answer_is_a_fencelock_error_and_never_read_past_1_mib(self) -> None:
        for what, answer in support.HOSTILE_ANSWERS.items():
            with self.subTest(what), support.HostileServer(answer) as port:
                client = aio.AsyncClient(f"http://127.0.0.1:{port}", request_timeout=2)
                with self.assertRaises((fencelock.TransportError, fencelock.InternalError)):
                    await client.acquire("x", 10)
                await client.aclose()

    async def test_an_acquire_whose_answer_was_lost_asks_again_with_the_same_request_id(
            self) -> None:
        for given in (None, "job-7"):
            with self.subTest(request_id=given), support.RecordingServer(
                    [None, support.REPEATED_GRANT]) as server:
                client = aio.AsyncClient(server.url, retry_backoff=0.01, request_timeout=2)
                lease = await client.acquire("x", 10, request_id=given)
                self.assertEqual((lease.token, lease.lease_string), (5, "5.repeated"))
                self.assertEqual(len(server.bodies), 2)
                first, second = (body["request_id"] for body in server.bodies)
                self.assertEqual(first, second)
                self.assertRegex(first, r"^[0-9a-f]{32}$" if given is None else "^job-7$")
                await client.aclose()

    async def test_a_lock_set_whose_answer_was_lost_is_not_asked_again(self) -> None:
        with support.RecordingServer([None]) as server:
            client = aio.AsyncClient(server.url, retry_backoff=0.01, request_timeout=2)
            with self.assertRaises(fencelock.TransportError):
                await client.acquire_set(["a", "b"], 10)
            self.assertEqual(len(server.bodies), 1)
            self.assertNotIn("request_id", server.bodies[0])
            await client.aclose()

    async def test_a_listing_page_is_read_and_its_query_values_are_encoded(self) -> None:
        page = support.http_answer(
            200, b'{"locks":[{"name":"inv-1","token":7,"owner":"billing-7","remaining_ms":2500}],'
                 b'"next":null}')
        with support.RecordingServer([page]) as server:
            client = aio.AsyncClient(server.url)
            listing = await client.list_locks("inv-", 5, "a b")
            self.assertEqual(server.targets, ["/v1/locks?limit=5&prefix=inv-&cursor=a%20b"])
            self.assertEqual(listing, fencelock.LockListing(
                [fencelock.HeldLock("inv-1", 7, "billing-7", 2.5)], None))
            await client.aclose()

    async def test_a_watch_sends_its_token_and_wait_and_bad_input_is_refused(self) -> None:
        answer = support.http_answer(
            200, b'{"name":"inv-1","changed":true,"held":false,"remaining_ms":null,'
                 b'"token":null,"owner":null}')
        with support.RecordingServer([answer]) as server:
            client = aio.AsyncClient(server.url)
            for name, token, wait in [("a/b", 1, 1), ("ok", -1, 1), ("ok", True, 1),
                                      ("ok", 1, -0.5), ("ok", 1, 3601)]:
                with self.assertRaises(fencelock.InvalidArgumentError, msg=(name, token, wait)):
                    await client.watch(name, token, wait)  # type: ignore[arg-type]
            self.assertEqual(server.targets, [])
            watched = await client.watch("inv-1", 17, 0.25)
            self.assertEqual(server.targets, ["/v1/locks/inv-1?after_token=17&wait_ms=250"])
            self.assertEqual(watched, fencelock.LockStatus(
                held=False, remaining=None, last_token=0, changed=True))
            await client.aclose()

    async def test_no_endpoint_reachable_is_a_transport_error(self) -> None:
        client = aio.AsyncClient([f"http://127.0.0.1:{support.closed_port()}"],
                                 retry_backoff=0.001)
        with self.assertRaises(fencelock.TransportError) as caught:
            await client.status("x")
        self.assertEqual(caught.exception.code, "transport")


@needs_stack
class AgainstTheService(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        # Starting a fencelockd of a test's own blocks the loop for ~0.3 s: not a slow callback.
        asyncio.get_running_loop().slow_callback_duration = 2.0
        self.client = aio.AsyncClient(support.FENCELOCK_ENDPOINT)
        self.name = unique_name("py-aio")

    async def asyncTearDown(self) -> None:
        await self.client.aclose()

    async def test_acquire_extend_status_release_and_tokens(self) -> None:
        lease = await patiently(self.client.acquire, self.name, 2.0, owner="python-aio-tests")
        self.assertGreater(lease.token, 0)
        self.assertLessEqual(lease.deadline, time.monotonic() + 2.0)
        status = await self.client.status(self.name)
        self.assertTrue(status.held)
        self.assertEqual(status.last_token, lease.token)
        old_deadline = lease.deadline
        await self.client.extend(lease, 5.0)
        self.assertGreater(lease.deadline, old_deadline + 2.0)
        self.assertTrue(await self.client.release(lease))
        self.assertFalse(await self.client.release(lease), "release is idempotent")
        with self.assertRaises(fencelock.NotHeldError):
            await self.client.extend(lease)
        drawn = await self.client.next_token(self.name)
        self.assertGreater(drawn, lease.token)
        self.assertEqual(await self.client.current_token(self.name), drawn)

    async def test_status_shows_the_holder_and_revoke_takes_the_lock(self) -> None:
        free = await self.client.status(self.name)
        self.assertEqual((free.held, free.token, free.owner), (False, None, None))
        # A free lock: revoke takes it like an acquire.
        first = await patiently(self.client.revoke, self.name, 30.0, owner="stuck-job")
        self.assertIsInstance(first, aio.AsyncLease)
        status = await self.client.status(self.name)
        self.assertEqual((status.held, status.token, status.owner),
                         (True, first.token, "stuck-job"))
        # A held one: taken with a newer token; the revoked lease is gone.
        second = await patiently(self.client.revoke, self.name, 5.0, owner="ops-oncall")
        self.assertGreater(second.token, first.token)
        with self.assertRaises(fencelock.NotHeldError):
            await self.client.extend(first)
        self.assertFalse(await self.client.release(first))
        status = await self.client.status(self.name)
        self.assertEqual((status.token, status.owner), (second.token, "ops-oncall"))
        await self.client.extend(second, 10.0)
        self.assertTrue(await self.client.release(second))
        self.assertFalse((await self.client.status(self.name)).held)

    async def test_the_same_request_id_answers_the_same_grant_while_it_is_held(self) -> None:
        first_id, other_id = unique_name("py-aio-request"), unique_name("py-aio-request")
        lease = await patiently(self.client.acquire, self.name, 5.0, request_id=first_id)
        again = await patiently(self.client.acquire, self.name, 5.0, request_id=first_id)
        self.assertEqual((again.lease_string, again.token), (lease.lease_string, lease.token))
        with self.assertRaises(fencelock.LockedError):
            await self.client.acquire(self.name, 5.0, request_id=other_id)
        self.assertTrue(await self.client.release(again))

    async def test_list_locks_pages_through_the_held_locks_of_a_prefix(self) -> None:
        leases = [await patiently(self.client.acquire, f"{self.name}.{i}", 30.0,
                                  owner=f"aio-{i}") for i in range(4)]
        held = {lease.name: (lease.token, f"aio-{i}") for i, lease in enumerate(leases)}
        listed = {lock.name: (lock.token, lock.owner)
                  async for lock in self.client.iter_locks(self.name + ".", 1)}
        self.assertEqual(listed, held)
        for lease in leases:
            await self.client.release(lease)

    async def test_a_watch_is_woken_by_a_release_from_another_client(self) -> None:
        lease = await patiently(self.client.acquire, self.name, 30.0)
        other = aio.AsyncClient(support.FENCELOCK_ENDPOINT)
        started = time.monotonic()
        watcher = asyncio.ensure_future(self.client.watch(self.name, lease.token, wait=20))
        await asyncio.sleep(0.3)
        self.assertFalse(watcher.done(), "the watch waits while the lock is held")
        self.assertTrue(await other.release(lease))
        watched = await asyncio.wait_for(watcher, 5)
        self.assertLess(time.monotonic() - started, 5.0)
        self.assertEqual((watched.changed, watched.held, watched.token), (True, False, None))
        await other.aclose()

    async def test_a_watch_whose_wait_runs_out_answers_unchanged_and_another_token_at_once(
            self) -> None:
        lease = await patiently(self.client.acquire, self.name, 30.0, owner="aio-watch")
        # request_timeout bounds the whole round trip here: the watch's wait extends it.
        client = aio.AsyncClient(support.FENCELOCK_ENDPOINT, request_timeout=0.5)
        started = time.monotonic()
        unchanged = await client.watch(self.name, lease.token, wait=1.5)
        self.assertGreaterEqual(time.monotonic() - started, 1.4)
        self.assertEqual((unchanged.changed, unchanged.held, unchanged.token, unchanged.owner),
                         (False, True, lease.token, "aio-watch"))
        started = time.monotonic()
        other = await client.watch(self.name, lease.token + 1, wait=20)
        self.assertLess(time.monotonic() - started, 5.0)
        self.assertEqual((other.changed, other.held, other.token), (True, True, lease.token))
        await client.aclose()
        self.assertTrue(await self.client.release(lease))

    async def test_a_held_lock_is_locked_and_a_waiter_gets_it_when_released(self) -> None:
        lease = await patiently(self.client.acquire, self.name, 5.0)
        with self.assertRaises(fencelock.LockedError) as caught:
            await self.client.acquire(self.name, 1.0)
        self.assertEqual(caught.exception.http_status, 409)
        self.assertIsNotNone(caught.exception.retry_after)
        self.assertNotIn(lease.lease_string, str(caught.exception))
        waiter = asyncio.ensure_future(self.client.acquire(self.name, 1.0, wait=5.0))
        await asyncio.sleep(0.1)
        await self.client.release(lease)
        second = await asyncio.wait_for(waiter, 5)
        self.assertGreater(second.token, lease.token)
        await self.client.release(second)

    async def test_sets_and_permits(self) -> None:
        names = [self.name + "-b", self.name + "-a"]
        lease = await patiently(self.client.acquire_set, names, 2.0)
        self.assertEqual(list(lease.names), sorted(names))
        self.assertEqual(len(lease.tokens), 2)
        await self.client.extend(lease, 3.0)
        self.assertTrue(await self.client.release(lease))
        async with self.client.permit(self.name, 2, ttl=2.0) as one:
            two = await patiently(self.client.acquire_permit, self.name, 2, 2.0)
            self.assertNotEqual(one.slot, two.slot)
            with self.assertRaises(fencelock.LockedError):
                await self.client.acquire_permit(self.name, 2, 1.0)
            self.assertEqual(await self.client.semaphore_status(self.name),
                             fencelock.SemaphoreStatus(permits=2, held=2))
            await self.client.release(two)
        self.assertEqual((await self.client.semaphore_status(self.name)).held, 0)

    async def test_the_lock_block_renews_past_several_ttls_and_releases_at_exit(self) -> None:
        async with self.client.lock(self.name, ttl=1.0) as lease:
            token = lease.token
            await asyncio.sleep(3.2)  # more than three ttls
            self.assertTrue(lease.valid())
            lease.check()
            self.assertEqual((await self.client.status(self.name)).last_token, token)
        self.assertFalse((await self.client.status(self.name)).held)

    async def test_a_lost_lease_is_signalled_before_its_deadline_and_reported_at_exit(
            self) -> None:
        lost = []

        async def on_lost(lease: fencelock.Lease, why: fencelock.LeaseLostError) -> None:
            lost.append(why)  # a coroutine function: the keeper runs it as a task
        with self.assertRaises(fencelock.LeaseLostError):
            async with self.client.lock(self.name, ttl=1.0, on_lost=on_lost) as lease:
                support.delete_lock_keys(self.name)
                await asyncio.wait_for(lease.lost.wait(), 2.0)
                self.assertLess(time.monotonic(), lease.deadline)
                with self.assertRaises(fencelock.LeaseLostError):
                    lease.check()
        await self.client.aclose()  # waits for the callback's task
        self.assertEqual(len(lost), 1)
        self.assertIsInstance(lost[0].reason, fencelock.NotHeldError)

    async def test_a_cancelled_waiter_releases_the_lock_granted_after_it_gave_up(self) -> None:
        holder = await patiently(self.client.acquire, self.name, 5.0)
        waiter = asyncio.ensure_future(self.client.acquire(self.name, 5.0, wait=5.0))
        await asyncio.sleep(0.2)  # the waiter's request waits in fencelockd
        waiter.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await waiter
        # The holder lets go: fencelockd grants the waiting request, which nobody awaits now.
        await self.client.release(holder)
        await self.client.aclose()  # waits for the background release of that grant
        status = await self.client.status(self.name)
        self.assertFalse(status.held, "the grant made after the cancellation was released")
        self.assertGreater(status.last_token, holder.token, "the waiter was granted, then let go")
        # The same through a timeout, and through the lock block.
        holder = await patiently(self.client.acquire, self.name, 5.0)
        with self.assertRaises(asyncio.TimeoutError):
            await asyncio.wait_for(self.client.acquire(self.name, 5.0, wait=5.0), 0.2)

        async def enter_block() -> None:
            async with self.client.lock(self.name, ttl=5.0, wait=5.0):
                await asyncio.sleep(10)
        blocked = asyncio.ensure_future(enter_block())
        await asyncio.sleep(0.2)
        blocked.cancel()
        await self.client.release(holder)
        await self.client.aclose()
        self.assertFalse((await self.client.status(self.name)).held)

    async def test_a_cancelled_block_releases_its_lease(self) -> None:
        entered = asyncio.Event()

        async def work() -> None:
            async with self.client.lock(self.name, ttl=5.0):
                entered.set()
                await asyncio.sleep(10)
        task = asyncio.ensure_future(work())
        await asyncio.wait_for(entered.wait(), 5)
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        self.assertFalse((await self.client.status(self.name)).held)

    async def test_connections_are_reused_and_calls_run_concurrently(self) -> None:
        names = [f"{self.name}-{i}" for i in range(16)]
        leases = await asyncio.gather(*(patiently(self.client.acquire, n, 2.0) for n in names))
        self.assertEqual([lease.name for lease in leases], names)
        self.assertEqual(await asyncio.gather(*(self.client.release(x) for x in leases)),
                         [True] * 16)
        self.assertLessEqual(len(self.client._endpoints[0]._idle), 8, "the idle pool is bounded")
        self.assertGreaterEqual(len(self.client._endpoints[0]._idle), 1)

    async def test_the_next_endpoint_answers_when_the_first_is_a_closed_port(self) -> None:
        client = aio.AsyncClient([f"http://127.0.0.1:{support.closed_port()}",
                                  support.FENCELOCK_ENDPOINT])
        lease = await patiently(client.acquire, self.name, 1.0)
        self.assertTrue(await client.release(lease))
        await client.aclose()

    async def test_a_service_without_its_lock_nodes_is_unavailable(self) -> None:
        port = support.SPARE_PORT_BASE + 10
        with support.fencelockd_without_lock_nodes(port) as url:
            client = aio.AsyncClient(url, max_retries=0)
            with self.assertRaises(fencelock.UnavailableError) as caught:
                await client.acquire(self.name, 1.0)
            self.assertEqual(caught.exception.http_status, 503)
            await client.aclose()

    async def test_api_keys_and_https_with_a_ca_file(self) -> None:
        secret = "py-aio-" + "c" * 40
        keys = {"keys": [{"id": "reader", "names": ["allowed.*"], "rights": ["read"],
                          "secret_sha256": hashlib.sha256(secret.encode()).hexdigest()}]}
        with tempfile.TemporaryDirectory() as tmp:
            cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
            auth = os.path.join(tmp, "auth.json")
            with open(auth, "w") as f:
                json.dump(keys, f)
            subprocess.run(
                ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                 "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
                 "-subj", "/CN=fencelock-test", "-addext",
                 "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                check=True, capture_output=True, timeout=30)
            port = support.SPARE_PORT_BASE + 11
            url = f"https://127.0.0.1:{port}"
            with support.fencelockd_without_lock_nodes(
                    port, ["--tls-cert", cert, "--tls-key", key, "--auth-file", auth]):
                saved = os.environ.get("FENCELOCK_CACERT")
                os.environ["FENCELOCK_CACERT"] = cert  # the CLI's variable names the CA file
                try:
                    reader = aio.AsyncClient(url, api_key=secret, max_retries=0)
                finally:
                    if saved is None:
                        del os.environ["FENCELOCK_CACERT"]
                    else:
                        os.environ["FENCELOCK_CACERT"] = saved
                with self.assertRaises(fencelock.UnavailableError):  # TLS and key passed
                    await reader.status("allowed.x")
                with self.assertRaises(fencelock.DeniedError) as caught:
                    await reader.acquire("allowed.x", 1.0)  # no "lock" right
                self.assertEqual(caught.exception.wire_code, "forbidden")
                anonymous = aio.AsyncClient(url, max_retries=0,
                                            ssl_context=ssl.create_default_context(cafile=cert))
                with self.assertRaises(fencelock.DeniedError) as caught:
                    await anonymous.status("allowed.x")
                self.assertEqual(caught.exception.wire_code, "unauthenticated")
                untrusting = aio.AsyncClient(url, max_retries=0)
                with self.assertRaises(fencelock.TlsError):
                    await untrusting.status("allowed.x")
                plain = aio.AsyncClient(f"http://127.0.0.1:{port}", max_retries=0)
                with self.assertRaises(fencelock.InvalidArgumentError) as caught:
                    await plain.acquire("allowed.x", 1.0)
                self.assertEqual(caught.exception.wire_code, "plain_http_on_tls_port")
                for client in (reader, anonymous, untrusting, plain):
                    await client.aclose()


if __name__ == "__main__":
    unittest.main()
