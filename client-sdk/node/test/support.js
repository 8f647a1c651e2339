// What the tests share: the live stack's addresses (set by test.sh from scripts/live-stack.sh's
// env file), unique lock names, bounded waits, and helpers that stop what they start.
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

function required(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the tests through client-sdk/node/test.sh`);
  return value;
}

export const fencelockUrl = required('FENCELOCK_ENDPOINT');
export const databaseUrl = required('DATABASE_URL');
export const redisPorts = required('FENCELOCK_REDIS_PORTS').split(',').map(Number);
// Ports nobody listens on, for the tests' own fencelockd and for closed endpoints.
export const sparePortBase = Number(required('FENCELOCK_SPARE_PORT_BASE'));
export const fencelockdPath = required('FENCELOCKD');

export function uniqueName(prefix) {
  return `${prefix}-${randomBytes(6).toString('hex')}`;
}

export { sleep };

// Polls `condition` every 20 ms until it holds or `limitMs` passed; true iff it held.
export async function eventually(condition, limitMs) {
  const end = Date.now() + limitMs;
  while (Date.now() < end) {
    if (await condition()) return true;
    await sleep(20);
  }
  return false;
}

// Deletes lock `name`'s key on every redis-server: the lease is gone, as if it had expired.
export async function deleteLockKeys(name) {
  await Promise.all(redisPorts.map((port) => new Promise((resolve, reject) => {
    execFile('redis-cli', ['-h', '127.0.0.1', '-p', String(port), 'DEL', `fencelock:lock:${name}`],
      { timeout: 5000 }, (error) => (error ? reject(error) : resolve()));
  })));
}

// An HTTP server that accepts requests and never answers: a hung fencelockd. Resolves
// {url, close()}.
export async function startSilentServer() {
  const sockets = new Set();
  const server = createServer(() => {});
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}

// A fencelockd of the test's own whose lock nodes are all down (closed ports): every acquire is
// 503 unavailable. Resolves {url, stop()} once it answers /healthz (at most 10 s).
// `extraArgs` are more flags (say, --auth-file).
export async function startFencelockdWithoutNodes(dir, extraArgs = []) {
  const port = sparePortBase;
  const nodes = [1, 2, 3].map((i) => `127.0.0.1:${sparePortBase + i}`).join(',');
  const child = spawn(fencelockdPath,
    ['--listen', `127.0.0.1:${port}`, '--redis', nodes, '--tokens', `sqlite:${dir}/tokens.db`, ...extraArgs],
    { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
  const up = await eventually(async () => {
    try {
      return (await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(500) })).ok;
    } catch {
      return false;
    }
  }, 10000);
  if (!up) {
    await stop();
    throw new Error('the test fencelockd did not answer /healthz within 10 s');
  }
  return { url, stop };
}

// An HTTP answer as bytes, for startRecordingServer.
export function httpAnswer(status, body) {
  return `HTTP/1.1 ${status} Whatever\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

// A grant as fencelockd answers a repeated acquire.
export const repeatedGrant = httpAnswer(200,
  '{"name":"x","lease":"5.repeated","token":5,"ttl_ms":10000,"validity_ms":9000,"waited_ms":0,"repeated":true}');

// A loopback HTTP server that reads each request whole (head and Content-Length body), records
// its target and JSON body, and answers the i-th request with answers[i] (the last one from then
// on); null closes the connection without answering: the request was delivered, its answer lost.
// Resolves {url, targets, bodies, close()}.
export async function startRecordingServer(answers) {
  const targets = [];
  const bodies = [];
  const sockets = new Set();
  const server = createTcpServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let data = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      data = Buffer.concat([data, chunk]);
      const end = data.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = data.subarray(0, end).toString('latin1').split('\r\n');
      const length = Number(head.find((line) => /^content-length:/i.test(line))?.split(':')[1] ?? 0);
      if (data.length < end + 4 + length) return;
      const body = data.subarray(end + 4, end + 4 + length).toString();
      const answer = answers[Math.min(targets.length, answers.length - 1)];
      targets.push(head[0].split(' ')[1]);
      bodies.push(body ? JSON.parse(body) : null);
      data = Buffer.alloc(0);
      if (answer === null) socket.destroy();
      else socket.write(answer);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    targets,
    bodies,
    close: () => new Promise((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}
