// `make bench`'s machines section: what a holder's CrowdSec engine costs.
//
// 1. Alerts per second through `POST /v1/alerts`, in batches of 1 and of 50, one
//    request at a time and under load, beside the add (one address a request) on
//    the same service in the same run. The limiter of an engine's calls (120 a
//    minute a machine) is lifted here: what is measured is the service's work
//    per alert, not the limit.
// 2. Billable calls, counted by the test build's meter: an alert in a batch of 1
//    and of 50 (a report and an add each), and a heartbeat, from which the
//    heartbeats of 10 000 machines (one a minute each) are priced.

import { join } from "node:path";
import { CONNECTIONS, DEPLOYED, SERVICE_VARS, holder as newHolder, post, serve, wrk } from "./lib.mjs";
import { BILLABLE, PRICES, dollarsPerMillion } from "./cost.mjs";

const VARS = { ...SERVICE_VARS, DAILY_REPORTS: "100000000" };
const UNLIMITED = { ratelimits: { FEED_LIMITER: { simple: { limit: 1e9, period: 60 } }, LOGIN_LIMITER: { simple: { limit: 1e9, period: 60 } } } };
const add = "/api/addIpToGreylist?result_mode=json";
export const MACHINES = 10_000;

const minus = (a, b) => Object.fromEntries(BILLABLE.map((f) => [f, a[f] - b[f]]));

/** A holder's machine, logged in: its token. */
async function machineOf(url, holder) {
  const made = await post(url, "/api/machines", { token: holder.token, json: { name: "bench" } });
  if (made.status !== 201) throw new Error(`machine: ${made.status} ${made.text}`);
  const { machineId, password } = JSON.parse(made.text);
  const login = await post(url, "/v1/watchers/login", { json: { machine_id: machineId, password, scenarios: ["crowdsecurity/ssh-bf"] } });
  if (login.status !== 200) throw new Error(`login: ${login.status} ${login.text}`);
  return JSON.parse(login.text).token;
}

/** `count` alerts of new addresses from `from` on, as the engine posts them. */
function alerts(from, count) {
  return Array.from({ length: count }, (_, n) => {
    const ip = `50.${(from + n) >> 16 & 255}.${(from + n) >> 8 & 255}.${(from + n) & 255}`;
    return {
      scenario: "crowdsecurity/ssh-bf", message: "bench", events_count: 8, events: [],
      start_at: "2026-11-26T10:00:00Z", stop_at: "2026-11-26T10:00:08Z",
      source: { ip, scope: "Ip", value: ip }, remediation: true, simulated: false, decisions: null,
    };
  });
}

async function postAlerts(url, token, body) {
  const response = await fetch(`${url}/v1/alerts`, { method: "POST", headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const text = await response.text();
  if (response.status !== 201) throw new Error(`alerts: ${response.status} ${text}`);
  return JSON.parse(text);
}

async function timed(state) {
  const { mf, url } = await serve(".", VARS, join(state, "machines-timed"), DEPLOYED, UNLIMITED);
  try {
    const h = await newHolder(url);
    const token = await machineOf(url, h);
    const rows = [];
    for (const connections of [1, CONNECTIONS]) {
      const floor = await wrk(url + add, { BENCH_PATH: add, BENCH_TOKENS: h.token, BENCH_IP: `seq:${70000000 + connections * 1000000}`, BENCH_FIELD: "ip" }, connections);
      rows.push({ name: "add", batch: 1, connections, ...floor });
      for (const batch of [1, 50]) {
        const measured = await wrk(`${url}/v1/alerts`, { BENCH_PATH: "/v1/alerts", BENCH_TOKENS: token, BENCH_ALERTS: String(batch), BENCH_IP: `seq:${80000000 + batch * 100000 + connections * 1000000}` }, connections);
        rows.push({ name: "alerts", batch, connections, ...measured });
      }
    }
    return rows;
  } finally {
    await mf.dispose();
  }
}

async function counted(state) {
  const { mf, url } = await serve(".", VARS, join(state, "machines-counted"), "build-test/index.js", UNLIMITED);
  try {
    const h = await newHolder(url);
    const token = await machineOf(url, h);
    const meter = async () => {
      const response = await fetch(`${url}/__test/meter?license=${h.license}`);
      return (await response.json()).counts;
    };
    // The meter's own reading, and the first alert's loads of the lists, taken off.
    const first = await meter();
    const overhead = minus(await meter(), first);
    await postAlerts(url, token, alerts(0, 1));
    const beat = async () => {
      const response = await fetch(`${url}/v1/heartbeat`, { headers: { Authorization: `Bearer ${token}` } });
      if (response.status !== 200) throw new Error(`heartbeat: ${response.status}`);
      await response.text();
    };
    await beat();
    const rows = [];
    let next = 1000;
    for (const [name, batch, requests, run] of [
      ["alert, batch of 1", 1, 20, async () => postAlerts(url, token, alerts((next += 1), 1))],
      ["alert, batch of 50", 50, 4, async () => postAlerts(url, token, alerts((next += 50), 50))],
      ["heartbeat", 1, 20, beat],
    ]) {
      const before = await meter();
      const started = performance.now();
      for (let n = 0; n < requests; n++) await run();
      const ms = (performance.now() - started) / requests;
      const spent = minus(minus(await meter(), before), overhead);
      const per = batch * requests;
      rows.push({ name, batch, ms, ...Object.fromEntries(BILLABLE.map((f) => [f, spent[f] / per])) });
    }
    return rows;
  } finally {
    await mf.dispose();
  }
}

export async function machines(state) {
  return { timed: await timed(state), counted: await counted(state) };
}

const ms = (us) => (us / 1000).toFixed(2);

export function machinesLines({ timed, counted }) {
  const lines = [
    "CrowdSec engines' alerts beside adds by one holder, on one service (Miniflare), the engines' limiter lifted",
    "",
    "| connections | request | req/s | alerts/s | p50 ms | alerts/s ÷ adds/s |",
    "|---:|---|---:|---:|---:|---:|",
  ];
  for (const connections of [...new Set(timed.map((r) => r.connections))]) {
    const floor = timed.find((r) => r.name === "add" && r.connections === connections);
    for (const r of timed.filter((row) => row.connections === connections)) {
      const per = r.rps * r.batch;
      lines.push(`| ${connections} | ${r.name === "add" ? "add" : `alerts, batch of ${r.batch}`} | ${r.rps.toFixed(0)} | ${r.name === "add" ? "—" : per.toFixed(0)} | ${ms(r.p50_us)} | ${r.name === "add" ? "1.00" : (per / floor.rps).toFixed(2)} |`);
    }
  }
  lines.push("", "| billable, each | DO requests | rows read | rows written | KV reads | KV writes | $ a million |", "|---|---:|---:|---:|---:|---:|---:|");
  for (const r of counted) {
    // A batch's Worker request and time are shared by its alerts.
    const dollars = (dollarsPerMillion({ ...r, durableObjectRequests: r.durableObjectRequests }, r.ms / r.batch) - PRICES.workerRequestsPerMillion * (1 - 1 / r.batch));
    lines.push(`| ${r.name} | ${r.durableObjectRequests.toFixed(3)} | ${r.rowsRead.toFixed(2)} | ${r.rowsWritten.toFixed(2)} | ${r.kvReads.toFixed(3)} | ${r.kvWrites.toFixed(3)} | ${dollars.toFixed(2)} |`);
  }
  const beat = counted.find((r) => r.name === "heartbeat");
  const perDay = MACHINES * 24 * 60;
  lines.push("", `Heartbeats of ${MACHINES.toLocaleString("en")} machines, one a minute each: ${(perDay / 1e6).toFixed(1)} M requests a day, $${(perDay / 1e6 * dollarsPerMillion(beat, beat.ms)).toFixed(2)} a day at the counts above.`);
  return lines;
}
