// What each operation costs in the units Cloudflare bills, counted, not estimated:
// the test build (`build-test/`) counts every Durable Object request, KV read,
// write and list and SQLite row read and written where the call is made, and
// `/__test/meter` sums the Worker's counts and its objects'. Each scenario runs
// one request at a time after a warm-up, so the counts of a scenario are its own;
// the meter's own calls are measured (two readings with nothing between) and
// taken off. The deployable build counts nothing.

import { join } from "node:path";
import { ADMIN, SERVICE_VARS, dotted, globalImport, globalAddress, holder as newHolder, post, secondsUntilListed, serve } from "./lib.mjs";

/** Cloudflare's Workers Paid prices, as published on the date below (USD). */
export const PRICES = {
  date: "2026-11-24",
  source: "https://developers.cloudflare.com/workers/platform/pricing/ and https://developers.cloudflare.com/durable-objects/platform/pricing/",
  workerRequestsPerMillion: 0.3,
  cpuPerMillionMs: 0.02,
  durableObjectRequestsPerMillion: 0.15,
  durableObjectGbSecondsPerMillion: 12.5,
  durableObjectGb: 0.128,
  rowsReadPerMillion: 0.001,
  rowsWrittenPerMillion: 1.0,
  kvReadsPerMillion: 0.5,
  kvWritesPerMillion: 5.0,
  kvListsPerMillion: 5.0,
};

const WARM_UP = 3;
const REQUESTS = 20;
/** The counts the meter keeps, one per billed unit. */
export const BILLABLE = ["durableObjectRequests", "kvReads", "kvWrites", "kvLists", "rowsRead", "rowsWritten"];

async function meter(url, license) {
  const response = await fetch(`${url}/__test/meter?license=${license}`);
  if (response.status !== 200) throw new Error(`meter: ${response.status} ${await response.text()}`);
  return (await response.json()).counts;
}

const minus = (a, b) => Object.fromEntries(BILLABLE.map((f) => [f, a[f] - b[f]]));

/** What crowdsec-firewall-bouncer 0.0.30 posts every 15 minutes (go-cs-bouncer's metrics). */
function bouncerUsage() {
  const now = Math.floor(Date.now() / 1000);
  const item = (name, unit, value, labels) => ({ labels, name, unit, value });
  return JSON.stringify({
    log_processors: null,
    remediation_components: [{
      feature_flags: [],
      metrics: [{
        items: [
          item("active_decisions", "ip", 14000, { ip_type: "ipv4", origin: "CAPI" }),
          item("dropped", "byte", 5120, { ip_type: "ipv4", origin: "cscli" }),
          item("dropped", "packet", 80, { ip_type: "ipv4", origin: "cscli" }),
          item("processed", "byte", 9000000, { ip_type: "ipv4" }),
          item("processed", "packet", 60000, { ip_type: "ipv4" }),
        ],
        meta: { utc_now_timestamp: now, window_size_seconds: 900 },
      }],
      os: { name: "debian", version: "12" },
      type: "crowdsec-firewall-bouncer",
      utc_startup_timestamp: now - 900,
      version: "v0.0.30-debian-pragmatic-amd64",
    }],
  });
}

/** The scenarios of `make bench`, each a request `send(n)` answering what it expects. */
function scenarios(holder, feedKey, bouncerKey) {
  const form = (path, ip) => () => post(holder.url, path, { token: holder.token, form: { ip } });
  const check = "/api/checkIpOnGreylist?result_mode=json";
  const add = "/api/addIpToGreylist?result_mode=json";
  const remove = "/api/deleteIpFromGreylist?result_mode=json";
  const fresh = (n) => dotted(20 * 2 ** 24 + 5000 + n);
  return [
    ["invalid ip (no storage)", form(check, "not-an-ip")],
    ["private ip (no storage)", form(check, "10.1.2.3")],
    ["allow-listed ip (cached)", form(check, "104.16.1.1")],
    ["check, unlisted", form(check, "20.250.0.1")],
    ["check, on global list", form(check, globalAddress(7))],
    ["check, in a global range", form(check, "46.0.2.77")],
    ["add, global answers (no DO)", form(add, globalAddress(8))],
    ["add, new addresses", (n) => post(holder.url, add, { token: holder.token, form: { ip: fresh(n) } })],
    ["check, listed", form(check, fresh(0))],
    ["check, unlisted IPv6", form(check, "2a00:1450:4001:80b::1")],
    ["add, new IPv6 addresses", (n) => post(holder.url, add, { token: holder.token, form: { ip: `2a00:1450:4002::${n.toString(16)}` } })],
    ["add, already listed", form(add, fresh(0))],
    ["remove, listed addresses", (n) => post(holder.url, remove, { token: holder.token, form: { ip: fresh(n) } })],
    ["login", () => post(holder.url, "/v2/authentication/login/license", { json: { licenseKey: holder.key } })],
    ["CrowdSec stream pull, nothing new", () => fetch(`${holder.url}/v1/decisions/stream`, { headers: { "X-Api-Key": feedKey } }).then(async (r) => ({ status: r.status, text: await r.text() }))],
    ["CrowdSec live lookup (`/v1/decisions?ip=`), unlisted", () => fetch(`${holder.url}/v1/decisions?ip=20.250.0.1`, { headers: { "X-Api-Key": bouncerKey } }).then(async (r) => ({ status: r.status, text: await r.text() }))],
    ["a bouncer's usage metrics (`/v1/usage-metrics`)", () => fetch(`${holder.url}/v1/usage-metrics`, { method: "POST", headers: { "X-Api-Key": bouncerKey, "Content-Type": "application/json" }, body: bouncerUsage() }).then(async (r) => ({ status: r.status, text: await r.text() }))],
    ["allow list: check, not on it", form("/api/checkIpOnAllowlist?result_mode=json", "20.250.0.2")],
    ["allow list: add a range", (n) => post(holder.url, "/api/addIpToAllowlist?result_mode=json", { token: holder.token, form: { ip: `31.${n}.0.0/16` } })],
    ["allow list: remove a range", (n) => post(holder.url, "/api/deleteIpFromAllowlist?result_mode=json", { token: holder.token, form: { ip: `31.${n}.0.0/16` } })],
    ["report an address (`/api/reportIp`)", (n) => post(holder.url, "/api/reportIp", { token: holder.token, form: { ip: dotted(23 * 2 ** 24 + n), categories: "ssh" } })],
    ["network status of an address", form("/api/networkStatus", "20.250.0.1")],
    [
      "bulk add of 1000 new addresses (per request)",
      (n) => post(holder.url, "/api/addIpsToGreylist?result_mode=json", {
        token: holder.token,
        method: "POST",
        text: Array.from({ length: 1000 }, (_, i) => dotted(22 * 2 ** 24 + n * 1000 + i)).join("\n"),
      }),
    ],
  ];
}

/** Counts per request of every scenario, on a fresh service of its own. */
export async function costs(state) {
  const { mf, url } = await serve(".", SERVICE_VARS, join(state, "costs"), "build-test/index.js");
  try {
    const holder = { url, ...(await newHolder(url)) };
    const feedKey = JSON.parse((await post(url, "/api/feedTokens", { token: holder.token, json: { scope: "personal" } })).text).feedToken;
    // A second bouncer, so that no scenario's polls count against another's limit.
    const bouncerKey = JSON.parse((await post(url, "/api/feedTokens", { token: holder.token, json: { scope: "personal" } })).text).feedToken;
    await post(url, "/admin/allow-list", { token: ADMIN, json: { add: ["104.16.0.0/13"] } });
    await post(url, "/admin/global-list", { token: ADMIN, method: "PUT", text: globalImport(1000) });
    await secondsUntilListed(url, holder.token, globalAddress(7));
    await fetch(`${url}/v1/decisions/stream?startup=true`, { headers: { "X-Api-Key": feedKey } }).then((r) => r.text());
    const first = await meter(url, holder.license);
    const overhead = minus(await meter(url, holder.license), first);
    const rows = [];
    for (const [name, send] of scenarios(holder, feedKey, bouncerKey)) {
      const requests = name.startsWith("bulk") ? 3 : REQUESTS;
      // Each scenario's warm-up fills what an isolate keeps (the snapshots, the license's standing).
      for (let n = 0; n < WARM_UP && !/addresses|range|report/.test(name); n++) await send(n);
      const before = await meter(url, holder.license);
      const started = performance.now();
      for (let n = 0; n < requests; n++) {
        const { status, text } = await send(n);
        if (status >= 400) throw new Error(`${name}: ${status} ${text.slice(0, 200)}`);
      }
      const ms = (performance.now() - started) / requests;
      // Reports are sent on to the shards at the next whole second: the row counts
      // that sending too, and the next scenario none of it.
      if (name.startsWith("report")) await new Promise((resolve) => setTimeout(resolve, 2000));
      const spent = minus(minus(await meter(url, holder.license), before), overhead);
      rows.push({ name, requests, ms, ...Object.fromEntries(BILLABLE.map((f) => [f, spent[f] / requests])) });
    }
    return { overhead, rows };
  } finally {
    await mf.dispose();
  }
}

/** Dollars per million requests of a scenario: its counted calls at `PRICES`, and
 *  its time one request at a time (`ms`) as an upper bound of both the Worker's CPU
 *  time and its object's active time (an object bills while a call runs in it). */
export function dollarsPerMillion(count, ms) {
  const p = PRICES;
  const objectSeconds = count.durableObjectRequests > 0 ? ms / 1000 : 0;
  return (
    p.workerRequestsPerMillion +
    ms * p.cpuPerMillionMs +
    count.durableObjectRequests * p.durableObjectRequestsPerMillion +
    objectSeconds * p.durableObjectGb * p.durableObjectGbSecondsPerMillion +
    count.rowsRead * p.rowsReadPerMillion +
    count.rowsWritten * p.rowsWrittenPerMillion +
    count.kvReads * p.kvReadsPerMillion +
    count.kvWrites * p.kvWritesPerMillion +
    count.kvLists * p.kvListsPerMillion
  );
}
