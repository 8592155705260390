// What the benchmarks share: serving a built worker with Miniflare directly, wrk
// with bench/load.lua, and the service's own requests.

import { execFile } from "node:child_process";
import { createWriteStream, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { moduleWorker } from "./module-worker.mjs";

// Loaded with `require`, as tests/api/serve.mjs loads them: `import` first scans
// Miniflare's 16 MB CommonJS bundle for its names, about 0.7 s of CPU a process.
const require = createRequire(import.meta.url);
const { Miniflare } = require("miniflare");
const { unstable_getMiniflareWorkerOptions } = require("wrangler");

export const root = new URL("..", import.meta.url).pathname;
export const ADMIN = "bench-admin-token-0123456789abcdef";
/** The service's settings in every bench: its secrets, the isolate's cache as in
 *  production, and daily limits no scenario reaches. */
export const SERVICE_VARS = {
  JWT_SECRET: "bench-jwt-secret-0123456789abcdef0123456789abcdef",
  ADMIN_TOKEN: ADMIN,
  CACHE_SECONDS: "60",
  DAILY_ADDITIONS: "100000000",
  DAILY_REMOVALS: "100000000",
  IPV6: "on",
};
export const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
/** The floor worker's paths (bench/floor), each the least some request can cost. */
export const FLOORS = {
  bare: "floor: bare answer",
  do: "floor: empty Durable Object",
  read: "floor: Durable Object looking up a row that is not there",
  write: "floor: Durable Object writing one row",
};
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8);

/** The service's Workers Static Assets options, as Miniflare takes them: the
 *  router that runs in front of the Worker, and the paths it sends straight on. */
export function serviceAssets() {
  return unstable_getMiniflareWorkerOptions(join(root, "wrangler.toml")).workerOptions.assets;
}

/** The service as it deploys: three Workers, the edge, the management Worker
 *  it forwards to and their objects, each a folder with its module and the
 *  configuration `make build` writes. */
export const DEPLOYED = { edge: "build/edge", manage: "build/manage", objects: "build/objects" };
/** The floor worker served as the service is: one module as two Workers, the
 *  second holding the Durable Object the first calls across Workers. */
export const FLOOR = { apart: "build/index.js" };
/** The names `FLOOR`'s two Workers are served under: the edge, then its objects. */
export const FLOOR_WORKERS = ["edge", "objects"];

/** The name the configuration `make build` wrote in `folder` (one of
 *  `DEPLOYED`'s) gives its Worker: wrangler leaves it out of Miniflare's options,
 *  and the edge's bindings name the objects' Worker by it. */
export function workerName(folder) {
  return JSON.parse(readFileSync(join(root, folder, "wrangler.json"), "utf8")).name;
}

/** Serves `folder`'s worker with the bindings its configuration declares and its
 *  state under `state`. `script` is one Worker's module (the service's test
 *  build, which `folder`'s `wrangler.toml` describes); or one module served as
 *  two Workers (`{ apart }`: the floor, as `FLOOR`); or, for the service, its
 *  Workers' folders (`DEPLOYED`, or copies of them), each served with the
 *  configuration `make build` wrote beside the deployed one, the edge in front.
 *  `options` replace what the edge's (or the one Worker's) configuration says
 *  (the floors take the service's `assets`, a run without them `assets:
 *  undefined`), and `handleRuntimeStdio` says where the runtime's output goes.
 *  Two addresses: `url`, through Miniflare's entry worker (what
 *  `wrangler dev` serves), and `direct`, a socket of workerd's own in front of
 *  the (edge) worker (behind its asset router when it has one), as the edge runs
 *  it: no proxy worker in between, with Miniflare's KV and rate-limit services. */
export async function serve(folder, vars, state, script = DEPLOYED, options = {}) {
  process.chdir(join(root, folder));
  const worker = (config, scriptPath, own = {}) =>
    moduleWorker(unstable_getMiniflareWorkerOptions(config).workerOptions, scriptPath, vars, own);
  const { inspectorPort, handleRuntimeStdio, ...own } = options;
  const direct = [{ host: "127.0.0.1", port: 0 }];
  let workers;
  if (typeof script === "string") {
    workers = [{ ...worker("wrangler.toml", script, own), unsafeDirectSockets: direct }];
  } else if (script.apart) {
    const edge = worker("wrangler.toml", script.apart, own);
    const [edgeName, objectsName] = FLOOR_WORKERS;
    const across = Object.entries(edge.durableObjects ?? {}).map(([binding, object]) => [binding, { ...object, scriptName: objectsName }]);
    workers = [
      { ...edge, name: edgeName, durableObjects: Object.fromEntries(across), unsafeDirectSockets: direct },
      { ...worker("wrangler.toml", script.apart), name: objectsName },
    ];
  } else {
    workers = [
      { ...worker(join(root, DEPLOYED.edge, "wrangler.json"), join(script.edge, "index.js"), own), name: workerName(DEPLOYED.edge), unsafeDirectSockets: direct },
      { ...worker(join(root, DEPLOYED.manage, "wrangler.json"), join(script.manage ?? DEPLOYED.manage, "index.js")), name: workerName(DEPLOYED.manage) },
      { ...worker(join(root, DEPLOYED.objects, "wrangler.json"), join(script.objects, "index.js")), name: workerName(DEPLOYED.objects) },
    ];
  }
  const mf = new Miniflare({
    workers,
    inspectorPort,
    kvPersist: join(state, "kv"),
    durableObjectsPersist: join(state, "do"),
    host: "127.0.0.1",
    port: 0,
    // The runtime's output (a log line per request, and any fault) goes where the
    // caller takes it (the browser tests keep its tail), or to a file, never the terminal.
    handleRuntimeStdio: handleRuntimeStdio ?? ((stdout, stderr) => {
      const log = createWriteStream(join(root, "target", `bench-${folder.replace(/\W/g, "") || "service"}.log`));
      stdout.pipe(log);
      stderr.pipe(log);
    }),
  });
  const url = (await mf.ready).toString().replace(/\/$/, "");
  const directUrl = (await mf.unsafeGetDirectURL(workers[0].name)).toString().replace(/\/$/, "");
  process.chdir(root);
  return { mf, url, direct: directUrl };
}

/** Asynchronous on purpose: Miniflare drains workerd's output in this process, and a
 *  blocked event loop would stall the worker on a full stdout pipe. */
export async function wrk(url, env, connections = CONNECTIONS, seconds = SECONDS) {
  const { stdout } = await promisify(execFile)(
    "wrk",
    ["-t", String(Math.min(2, connections)), "-c", String(connections), "-d", `${seconds}s`, "--latency", "-s", join(root, "bench/load.lua"), url],
    { env: { ...process.env, ...env }, encoding: "utf8" },
  );
  return JSON.parse(stdout.trim().split("\n").pop());
}

export async function post(url, path, { token, form, json, method = "POST", text, client } = {}) {
  const headers = {};
  if (token) headers.Authorization = `Bearer ${token}`;
  // The client as the edge names it: where a report comes from.
  if (client) headers["CF-Connecting-IP"] = client;
  let body;
  if (json !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(json);
  } else if (form) {
    headers["Content-Type"] = "application/x-www-form-urlencoded";
    body = new URLSearchParams(form).toString();
  } else if (text !== undefined) {
    headers["Content-Type"] = "text/plain";
    body = text;
  }
  const response = await fetch(url + path, { method, headers, body });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** A port free on 127.0.0.1 now, for a server that binds it a moment later. */
export async function freePort() {
  const server = createServer();
  await new Promise((resolve, reject) => server.once("error", reject).listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The middle value; with an even count, the mean of the two in the middle. */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const half = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[half] : (sorted[half - 1] + sorted[half]) / 2;
}

/** The operator's `/admin/status`: the lists, the licenses, the answering isolate. */
export async function serviceStatus(url) {
  return JSON.parse((await post(url, "/admin/status", { token: ADMIN, method: "GET" })).text);
}

/** A new license holder: its license, its key and an access token. */
export async function holder(url, client) {
  const created = JSON.parse((await post(url, "/admin/licenses", { token: ADMIN })).text);
  // Logins are limited a client (100 a minute): many holders log in from clients of their own.
  const login = await post(url, "/v2/authentication/login/license", { json: { licenseKey: created.licenseKey }, client });
  return { license: created.license, key: created.licenseKey, token: JSON.parse(login.text).accessToken };
}

/** Seconds until a check answers `ip` from the global list: a new version shows
 *  once the isolate reads the manifest again. */
export async function secondsUntilListed(url, token, ip) {
  const started = performance.now();
  for (;;) {
    const { text } = await post(url, "/api/checkIpOnGreylist", { token, form: { ip } });
    if (text.endsWith("is on global greylist")) return (performance.now() - started) / 1000;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Runs `count` jobs with at most `width` in flight. */
export async function pool(count, width, job) {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < count) await job(next++);
  }));
}

export const dotted = (u) => `${u >>> 24}.${(u >>> 16) & 255}.${(u >>> 8) & 255}.${u & 255}`;

// Every other address from 45.0.0.0, and ranges apart from one another: no two
// entries touch, so none merge and the snapshot holds each one (as a real list would).
export const globalAddress = (n) => dotted(45 * 2 ** 24 + 2 * n);

/** The global list as an import: `count` entries, every fourth a range of
 *  `/prefix`, `step` addresses apart from `from` (the others `globalAddress`). */
export function globalImport(count, { from = 46 * 2 ** 24, prefix = 24, step = 512 } = {}) {
  const lines = [];
  for (let n = 0; n < count; n++) {
    lines.push(n % 4 === 3 ? `${dotted(from + step * (n >> 2))}/${prefix}` : globalAddress(n - (n >> 2)));
  }
  return lines.join("\n") + "\n";
}

// 100.128.0.0/10: public (100.64.0.0/10 is not), and apart from load.lua's 20.x addresses.
export const seeded = (n) => `100.${128 + ((n >> 16) & 63)}.${(n >> 8) & 255}.${n & 255}`;

/** Adds `count` addresses to a holder's list, 32 at a time. */
export async function seedPersonal(url, token, count) {
  await pool(count, 32, async (n) => {
    const { text } = await post(url, "/api/addIpToGreylist", { token, form: { ip: seeded(n) } });
    if (!text.endsWith("has been added to greylist")) throw new Error(`seeding: ${text}`);
  });
}
