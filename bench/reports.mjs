// `make bench`'s reports section: what the network's reports cost.
//
// 1. Reports per second, one at a time and under load, beside the add (a holder
//    object's one-row write) on the same service in the same run: a report is a
//    row in the holder's outbox, sent on by its alarm in batches.
// 2. The seconds from the report that completes a consensus to a check that
//    answers from the global list, with the isolate's cache off (CACHE_SECONDS
//    0): the shard's batch, the writer's save and publication. The cache adds
//    up to CACHE_SECONDS on top (docs/api.md).
// 3. Billable calls, counted by the test build's meter: a report amortised over
//    a bulk request of 1000 and the holder's alarm that sends them on; and the
//    writer's requests, KV writes and new versions for 1000 promotions.
// 4. What one report of an address costs beside 4 licenses' reports of it and
//    beside 200 licenses' from one network (which the network rule never lets
//    promote it): a repeated report, and a new license's first, each with the
//    holder's alarm that sends it on. A count that read every report of the
//    address would grow fifty-fold from the first to the second.
// Each of the 4 reporting licenses reports from a network of its own (the
// network rule), as independent holders' tools would arrive at the edge.

import { join } from "node:path";
import { CONNECTIONS, SERVICE_VARS, dotted, holder as newHolder, post, secondsUntilListed, serve, serviceStatus, wrk } from "./lib.mjs";
import { BILLABLE } from "./cost.mjs";

const VARS = { ...SERVICE_VARS, DAILY_REPORTS: "100000000" };
const report = "/api/reportIp?result_mode=json";
const add = "/api/addIpToGreylist?result_mode=json";
export const PROMOTIONS = 1000;
// 49.0.0.0/8, apart from load.lua's 20.x and the other sections' addresses.
const promoted = (n) => dotted(49 * 2 ** 24 + n);
// The client of the nth reporting license: a /24 of its own.
const client = (n) => `10.${n >> 8 & 255}.${n & 255}.7`;

const minus = (a, b) => Object.fromEntries(BILLABLE.map((f) => [f, a[f] - b[f]]));

async function hook(url, path) {
  const response = await fetch(url + path, { method: path.startsWith("/__test/meter") ? "GET" : "POST" });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${path}: ${response.status} ${text}`);
  return text;
}

const meter = async (url, query) => JSON.parse(await hook(url, `/__test/meter?${query}`)).counts;

/** Reports and adds of new addresses by one holder, one at a time and under load. */
async function timed(state) {
  const { mf, url } = await serve(".", VARS, join(state, "reports-timed"));
  try {
    const h = await newHolder(url);
    const rows = [];
    for (const connections of [1, CONNECTIONS]) {
      for (const [name, path, from] of [["add", add, 50000000], ["report", report, 60000000]]) {
        const measured = await wrk(url + path, { BENCH_PATH: path, BENCH_TOKENS: h.token, BENCH_IP: `seq:${from + connections * 1000000}`, BENCH_FIELD: "ip" }, connections);
        rows.push({ name, connections, ...measured });
      }
    }
    return rows;
  } finally {
    await mf.dispose();
  }
}

/** Seconds from the fourth license's report to a check that answers global, `rounds` times. */
async function toGlobal(state, rounds = 3) {
  const { mf, url } = await serve(".", { ...VARS, CACHE_SECONDS: "0" }, join(state, "reports-to-global"));
  try {
    const reporters = [];
    for (let n = 0; n < 4; n++) reporters.push(await newHolder(url));
    const checker = await newHolder(url);
    const seconds = [];
    for (let round = 0; round < rounds; round++) {
      const ip = promoted(2 ** 20 + round);
      for (const [n, r] of reporters.entries()) {
        const { text } = await post(url, report, { token: r.token, form: { ip }, client: client(n) });
        if (!text.includes("has been reported")) throw new Error(`report ${ip}: ${text}`);
        if (n === 2) await new Promise((resolve) => setTimeout(resolve, 1000));
      }
      seconds.push(await secondsUntilListed(url, checker.token, ip));
    }
    return seconds;
  } finally {
    await mf.dispose();
  }
}

/** The billable calls of reports and of the promotions they make, on the test build. */
async function counted(state) {
  const { mf, url } = await serve(".", VARS, join(state, "reports-counted"), "build-test/index.js");
  try {
    const reporters = [];
    for (let n = 0; n < 4; n++) reporters.push(await newHolder(url));
    const ips = Array.from({ length: PROMOTIONS }, (_, n) => promoted(n));
    let perReport;
    for (const [n, r] of reporters.entries()) {
      const before = await meter(url, `license=${r.license}`);
      const { status, text } = await post(url, "/api/reportIps?result_mode=json", { token: r.token, json: { ips }, client: client(n) });
      if (status !== 200 || JSON.parse(text).results.some((row) => !row.result.includes("has been reported"))) throw new Error(`reportIps: ${status} ${text.slice(0, 200)}`);
      await hook(url, `/__test/holders/${r.license}/alarm`);
      const spent = minus(await meter(url, `license=${r.license}`), before);
      // The meter's own reading asks the holder's object once: not the reports' cost.
      if (n === 0) perReport = Object.fromEntries(BILLABLE.map((f) => [f, (spent[f] - (f === "durableObjectRequests" ? 1 : 0)) / PROMOTIONS]));
    }
    const status = async () => (await serviceStatus(url)).globalList;
    const listBefore = await status();
    const before = await meter(url, "writer");
    await hook(url, "/__test/reports/alarm");
    await hook(url, "/__test/lists/alarm");
    const after = await meter(url, "writer");
    const listAfter = await status();
    if (listAfter.promoted - listBefore.promoted !== PROMOTIONS) throw new Error(`promoted ${listAfter.promoted - listBefore.promoted} of ${PROMOTIONS}`);
    const spent = minus(after, before);
    return {
      perReport,
      promotions: {
        // Less the hooks' own: the 16 shards' alarms asked, the writer's alarm, and
        // one meter reading of the writer.
        writerRequests: spent.durableObjectRequests - 16 - 1 - 1,
        kvWrites: spent.kvWrites,
        versions: Number(listAfter.version) - Number(listBefore.version),
      },
    };
  } finally {
    await mf.dispose();
  }
}

/** What one report of an address costs, with the alarm that sends it on, beside
 *  `crowd` licenses' reports of it from one network (the fifth and later) or from
 *  networks of their own (the first four). */
async function beside(state) {
  const { mf, url } = await serve(".", VARS, join(state, "reports-beside"), "build-test/index.js");
  try {
    const rows = [];
    for (const [name, crowd, sameNetwork] of [["4 licenses, 4 networks", 4, false], ["200 licenses, one network", 200, true]]) {
      const ip = promoted(2 ** 21 + crowd);
      const holders = [];
      for (let n = 0; n <= crowd; n++) holders.push(await newHolder(url, client(n)));
      const from = (n) => (sameNetwork ? "203.0.113.7" : client(n));
      const reportOf = async (n) => {
        const { text } = await post(url, report, { token: holders[n].token, form: { ip }, client: from(n) });
        if (!text.includes("has been reported")) throw new Error(`report ${ip}: ${text}`);
        await hook(url, `/__test/holders/${holders[n].license}/alarm`);
      };
      for (let n = 0; n < crowd; n++) await reportOf(n);
      const cost = async (n) => {
        const before = await meter(url, `license=${holders[n].license}`);
        await reportOf(n);
        const spent = minus(await meter(url, `license=${holders[n].license}`), before);
        // The meter's own reading asks the holder's object once: not the report's cost.
        return { ...spent, durableObjectRequests: spent.durableObjectRequests - 1 };
      };
      rows.push({ name, repeated: await cost(0), first: await cost(crowd) });
    }
    return rows;
  } finally {
    await mf.dispose();
  }
}

export async function reports(state) {
  return { timed: await timed(state), toGlobal: await toGlobal(state), counted: await counted(state), beside: await beside(state) };
}

const ms = (us) => (us / 1000).toFixed(2);

/** The section's tables. */
export function reportsLines({ timed, toGlobal, counted, beside }) {
  const lines = [
    "Reports beside adds of new addresses by one holder, on one service (Miniflare)",
    "",
    "| connections | add req/s | report req/s | report ÷ add req/s | add p50 ms | report p50 ms |",
    "|---:|---:|---:|---:|---:|---:|",
  ];
  for (const a of timed.filter((row) => row.name === "add")) {
    const r = timed.find((row) => row.name === "report" && row.connections === a.connections);
    lines.push(`| ${a.connections} | ${a.rps.toFixed(0)} | ${r.rps.toFixed(0)} | ${(r.rps / a.rps).toFixed(2)} | ${ms(a.p50_us)} | ${ms(r.p50_us)} |`);
  }
  const p = counted.promotions;
  lines.push(
    "",
    `From the fourth license's report to a check that answers global, CACHE_SECONDS 0: ${toGlobal.map((s) => s.toFixed(1)).join(", ")} s`,
    "",
    "| billable per report (bulk of 1000, and the alarm that sends them) | DO requests | rows read | rows written | KV reads | KV writes |",
    "|---|---:|---:|---:|---:|---:|",
    `| a report | ${counted.perReport.durableObjectRequests.toFixed(3)} | ${counted.perReport.rowsRead.toFixed(2)} | ${counted.perReport.rowsWritten.toFixed(2)} | ${counted.perReport.kvReads.toFixed(3)} | ${counted.perReport.kvWrites.toFixed(3)} |`,
    "",
    `${PROMOTIONS} promotions (each address reported by 4 licenses): ${p.writerRequests} requests to the lists' writer, ${p.versions} new version(s), ${p.kvWrites} KV writes.`,
  );
  if (beside) {
    lines.push(
      "",
      "| one report of an address, with the alarm that sends it on, beside | DO requests | rows read | rows written |",
      "|---|---:|---:|---:|",
    );
    for (const row of beside) {
      for (const [kind, spent] of [["a repeated report", row.repeated], ["a new license's first", row.first]]) {
        lines.push(`| ${row.name}: ${kind} | ${spent.durableObjectRequests} | ${spent.rowsRead} | ${spent.rowsWritten} |`);
      }
    }
  }
  return lines;
}
