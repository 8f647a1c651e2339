// One client generated from docs/openapi.yaml the way an API user makes one (openapi-typescript
// types + openapi-fetch), used as they would use it: it must compile under strict TypeScript
// (optional fields left out, tokens typed as integers) and its calls must work against a live
// fencelockd at $FENCELOCK_ENDPOINT. scripts/check-openapi-client.sh generates ./schema.d.ts.
import createClient from "openapi-fetch";
import type { paths } from "./schema.js";

// What this program uses of Node's globals (no @types/node needed).
declare const process: { env: Record<string, string | undefined>; pid: number };

const client = createClient<paths>({
  baseUrl: process.env.FENCELOCK_ENDPOINT ?? "http://127.0.0.1:8080",
});
const name = `openapi-client-${process.pid}`;
const lock = { params: { path: { name } } };

function fail(what: string, answer: unknown): never {
  throw new Error(`${what}: ${JSON.stringify(answer)}`);
}

// wait_ms and owner are optional: a request without them compiles and is granted.
const acquired = await client.POST("/v1/locks/{name}", { ...lock, body: { ttl_ms: 5000 } });
if (!acquired.data) fail("acquire", acquired.error);
const token: number = acquired.data.token;

// A plain status and a watch share the path: their answers are told apart by their fields.
const status = await client.GET("/v1/locks/{name}", lock);
if (!status.data?.held || !("last_token" in status.data) || status.data.last_token !== token) {
  fail("status", status.data);
}
const watched = await client.GET("/v1/locks/{name}", {
  params: { path: { name }, query: { after_token: token, wait_ms: 0 } },
});
if (!watched.data || !("changed" in watched.data) || watched.data.changed || !watched.data.held) {
  fail("watch", watched.data);
}

const extended = await client.POST("/v1/locks/{name}/extend", {
  ...lock,
  body: { lease: acquired.data.lease, ttl_ms: 5000 },
});
if (extended.data?.token !== token) fail("extend", extended.error ?? extended.data);

// A second acquire while held answers 409 with the error vocabulary of docs/api.md.
const refused = await client.POST("/v1/locks/{name}", { ...lock, body: { ttl_ms: 5000 } });
if (refused.response.status !== 409 || refused.error?.error.code !== "locked") {
  fail("a second acquire", refused.error);
}

const released = await client.DELETE("/v1/locks/{name}", {
  ...lock,
  body: { lease: acquired.data.lease },
});
if (released.data?.released !== true) fail("release", released.error ?? released.data);

console.log(`openapi client: acquired ${name} (token ${token}), extended, refused, released`);
