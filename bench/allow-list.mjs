// `make bench`'s allow-list section: what a holder's own allow list costs.
//
// 1. A greylist check and add by a holder with ALLOW_RANGES allow-list ranges,
//    beside the same by a holder with none, on one service in one run (ratios,
//    not absolute times), one request at a time and under load; and each one's
//    billable calls, counted by the test build's meter: the ranges are held in the
//    holder's object, so a check reads no row more, and only an address the
//    global list holds costs the holder with ranges its object call.
// 2. The delta after the holder allow-lists a /16 that covers DELTA_GLOBAL global
//    entries, and after it removes it: the bytes, the items, the seconds, and the
//    runtime's resident growth while the delta is read.

import { join } from "node:path";
import { ADMIN, CONNECTIONS, SERVICE_VARS, dotted, holder as newHolder, post, serve, wrk } from "./lib.mjs";
import { BILLABLE } from "./cost.mjs";
import { runtimePid, sampled } from "./scale.mjs";

export const ALLOW_RANGES = Number(process.env.BENCH_ALLOW_RANGES ?? 1000);
export const DELTA_GLOBAL = Number(process.env.BENCH_ALLOW_DELTA_GLOBAL ?? 60000);

const check = "/api/checkIpOnGreylist?result_mode=json";
const add = "/api/addIpToGreylist?result_mode=json";
// 47.0.0.0/8: a /24 a range, apart from load.lua's 20.x and the global list's 45.x.
const range = (n) => `${dotted(47 * 2 ** 24 + n * 256)}/24`;
const onGlobal = "45.0.0.2";
// On the global list and one of the ranged holder's ranges: its answer shows that
// the isolate knows the holder has ranges.
const allowedGlobal = "45.0.0.4";

/** `count` allow-list ranges for a holder, 8 requests at a time. */
async function allowRanges(url, token, count) {
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < count) {
        const ip = range(next++);
        const { text } = await post(url, "/api/addIpToAllowlist?result_mode=json", { token, form: { ip } });
        if (!text.includes("has been added to your allow list")) throw new Error(`allow ${ip}: ${text}`);
      }
    }),
  );
}

/** Two holders on one service: one without ranges, one with `ALLOW_RANGES`. */
async function twoHolders(url) {
  const plain = await newHolder(url);
  const ranged = await newHolder(url);
  const edit = await post(url, "/admin/global-list", { token: ADMIN, json: { add: [onGlobal, allowedGlobal] } });
  if (edit.status !== 200) throw new Error(`global edit: ${edit.status} ${edit.text}`);
  await allowRanges(url, ranged.token, ALLOW_RANGES - 1);
  const last = await post(url, "/api/addIpToAllowlist?result_mode=json", { token: ranged.token, form: { ip: allowedGlobal } });
  if (!last.text.includes("has been added")) throw new Error(`allow ${allowedGlobal}: ${last.text}`);
  // The isolate reads the list's new version and the license's record (that the
  // holder has ranges) within CACHE_SECONDS: wait until both show.
  const until = async (token, ip, answer) => {
    for (;;) {
      const { text } = await post(url, check, { token, form: { ip } });
      if (text.includes(answer)) return;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  };
  await until(plain.token, onGlobal, "is on global greylist");
  await until(ranged.token, allowedGlobal, "is on your allow list, no action was taken");
  return { plain, ranged };
}

async function meter(url, license) {
  const response = await fetch(`${url}/__test/meter?license=${license}`);
  if (response.status !== 200) throw new Error(`meter: ${response.status} ${await response.text()}`);
  return (await response.json()).counts;
}

const minus = (a, b) => Object.fromEntries(BILLABLE.map((f) => [f, a[f] - b[f]]));

/** Each scenario's counted calls per request, for both holders, on the test build. */
async function counted(state) {
  const { mf, url } = await serve(".", SERVICE_VARS, join(state, "allow-costs"), "build-test/index.js");
  try {
    const holders = await twoHolders(url);
    const rows = [];
    for (const [who, h] of Object.entries(holders)) {
      const first = await meter(url, h.license);
      const overhead = minus(await meter(url, h.license), first);
      for (const [name, path, ip] of [
        ["check, unlisted", check, () => "20.251.0.1"],
        ["check, on global list", check, () => onGlobal],
        ["add, new addresses", add, (n) => dotted(21 * 2 ** 24 + (who === "plain" ? 0 : 100000) + n)],
      ]) {
        await post(url, path, { token: h.token, form: { ip: ip(1000) } });
        const before = await meter(url, h.license);
        const requests = 20;
        for (let n = 0; n < requests; n++) {
          const { status, text } = await post(url, path, { token: h.token, form: { ip: ip(n) } });
          if (status !== 200) throw new Error(`${name}: ${status} ${text}`);
        }
        const spent = minus(minus(await meter(url, h.license), before), overhead);
        rows.push({ who, name, ...Object.fromEntries(BILLABLE.map((f) => [f, spent[f] / requests])) });
      }
    }
    return rows;
  } finally {
    await mf.dispose();
  }
}

/** Both holders' checks and adds timed on the release build, one at a time and under load. */
async function timed(state) {
  const { mf, url } = await serve(".", SERVICE_VARS, join(state, "allow-timed"));
  try {
    const holders = await twoHolders(url);
    const rows = [];
    for (const connections of [1, CONNECTIONS]) {
      for (const [name, path, ips] of [
        ["check, unlisted", check, ["20.252.0.1", "20.252.0.1"]],
        ["check, on global list", check, [onGlobal, onGlobal]],
        ["add, new addresses", add, [`seq:${30000000 + connections}`, `seq:${40000000 + connections}`]],
      ]) {
        for (const [n, [who, h]] of Object.entries(holders).entries()) {
          const measured = await wrk(url + path, { BENCH_PATH: path, BENCH_TOKENS: h.token, BENCH_IP: ips[n], BENCH_FIELD: "ip" }, connections);
          rows.push({ who, name, connections, ...measured });
        }
      }
    }
    return rows;
  } finally {
    await mf.dispose();
  }
}

/** The delta after allow-listing a /16 that covers `DELTA_GLOBAL` global entries, and after its removal. */
async function delta(state) {
  const rows = [];
  // 48.0.0.0/16 with `DELTA_GLOBAL` addresses (runs of neighbours, which the feed
  // writes as fewer, wider blocks), then every other address of it (none merge:
  // each is a block of its own, the most blocks a /16 can hold).
  const dense = [];
  for (let n = 0; dense.length < DELTA_GLOBAL; n++) if (n % 256 !== 0) dense.push(dotted(48 * 2 ** 24 + n));
  const sparse = Array.from({ length: 2 ** 15 }, (_, n) => dotted(48 * 2 ** 24 + 2 * n + 1));
  for (const [name, entries] of [[`${DELTA_GLOBAL} entries`, dense], [`${sparse.length} entries apart`, sparse]]) {
    rows.push(...(await deltaOf(join(state, `allow-delta-${rows.length}`), name, entries)));
  }
  return rows;
}

async function deltaOf(folder, name, entries) {
  const { mf, url } = await serve(".", { ...SERVICE_VARS, CACHE_SECONDS: "0" }, folder);
  try {
    const pid = runtimePid();
    const put = await post(url, "/admin/global-list", { token: ADMIN, method: "PUT", text: entries.join("\n") + "\n" });
    if (put.status !== 200) throw new Error(`PUT: ${put.status} ${put.text}`);
    const h = await newHolder(url);
    const feed = async (query) => {
      const response = await fetch(`${url}/api/greylistFeed?${query}`, { headers: { Authorization: `Bearer ${h.token}` } });
      const text = await response.text();
      if (response.status !== 200) throw new Error(`feed ${query}: ${response.status} ${text.slice(0, 200)}`);
      return text;
    };
    const whole = await feed("scope=all&format=json");
    let cursor = JSON.parse(whole).cursor;
    const rows = [];
    for (const route of ["addIpToAllowlist", "deleteIpFromAllowlist"]) {
      const changed = await post(url, `/api/${route}?result_mode=json`, { token: h.token, form: { ip: "48.0.0.0/16" } });
      if (changed.status !== 200) throw new Error(`${route}: ${changed.text}`);
      const { value, seconds, beforeMB, growthMB } = await sampled(pid, () => feed(`scope=all&format=json&since=${cursor}`));
      const parsed = JSON.parse(value);
      if (parsed.reset) throw new Error(`${route}: the delta was a reset`);
      cursor = parsed.cursor;
      rows.push({ global: name, change: route, wholeBytes: Buffer.byteLength(whole), bytes: Buffer.byteLength(value), deleted: parsed.deleted.length, new: parsed.new.length, seconds, beforeMB, growthMB });
    }
    return rows;
  } finally {
    await mf.dispose();
  }
}

export async function allowList(state) {
  return { ranges: ALLOW_RANGES, global: DELTA_GLOBAL, counted: await counted(state), timed: await timed(state), delta: await delta(state) };
}

const ms = (us) => (us / 1000).toFixed(2);

/** The section's tables. */
export function allowListLines({ ranges, counted, timed, delta }) {
  const lines = [
    `A holder's own allow list: a holder with ${ranges} ranges beside one without, on one service (Miniflare)`,
    "",
    "| scenario | connections | req/s without | req/s with | p50 ms without | p50 ms with | p50 with ÷ without |",
    "|---|---:|---:|---:|---:|---:|---:|",
  ];
  for (const r of timed.filter((row) => row.who === "plain")) {
    const w = timed.find((row) => row.who === "ranged" && row.name === r.name && row.connections === r.connections);
    lines.push(`| ${r.name} | ${r.connections} | ${r.rps.toFixed(0)} | ${w.rps.toFixed(0)} | ${ms(r.p50_us)} | ${ms(w.p50_us)} | ${(w.p50_us / r.p50_us).toFixed(2)} |`);
  }
  lines.push("", "| scenario | holder | DO requests | rows read | rows written | KV reads |", "|---|---|---:|---:|---:|---:|");
  for (const r of counted) {
    lines.push(`| ${r.name} | ${r.who === "plain" ? "no ranges" : `${ranges} ranges`} | ${r.durableObjectRequests} | ${r.rowsRead} | ${r.rowsWritten} | ${r.kvReads} |`);
  }
  lines.push(
    "",
    "A scope=all delta after the holder allow-lists 48.0.0.0/16, and after it removes it, with the global list holding only addresses of that /16",
    "",
    "| global list | change | whole feed bytes | delta bytes | deleted | new | seconds | runtime before MB | runtime growth MB |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|",
  );
  for (const r of delta) {
    lines.push(`| ${r.global} | ${r.change} | ${r.wholeBytes} | ${r.bytes} | ${r.deleted} | ${r.new} | ${r.seconds.toFixed(2)} | ${r.beforeMB.toFixed(0)} | ${r.growthMB.toFixed(1)} |`);
  }
  return lines;
}
