// Two builds of the worker, A and B, measured in turns (A, B, then B, A, …
// BENCH_ROUNDS times) on the scenarios that cross a Durable Object call, so that
// each ratio B ÷ A comes with its spread over the rounds: these machines are
// noisy, and a difference inside the spread is no difference.
//
//   node bench/ab.mjs <folder of A's build> <folder of B's build>
// Each folder is inside the repository (Miniflare loads modules from below its
// working folder) and holds either what `make build` leaves in build/ now (the
// two Workers, edge/ and objects/, each with index.js and index_bg.wasm), served
// with the configurations of build/; or one Worker's module (index.js and its
// wasm), as `make build` left it before the service was two Workers, served as
// two Workers the way the floor is, with wrangler.toml's bindings. Either way
// each call crosses from one Worker to another.
//
// Each round also measures, on workerd's own socket one request at a time, the
// floors (a bare answer, an empty Durable Object, one looking up a row that is
// not there) and each build's invalid address and unlisted check: what a build's
// call to the holder's object costs above the runtime's own round trip, for both
// builds against the same minute's floors, in time (the median latency) and in
// the CPU the runtime's process spends a request (user and system time over the
// requests answered: what a request costs the machine, less shaken by the
// scheduling that moves a latency). BENCH_SECONDS (default 5) per row,
// BENCH_ROUNDS (default 2), BENCH_PERSONAL (default 1000) entries seeded;
// BENCH_AB_SCENARIOS=0 measures the call's share alone, in more rounds a minute.

import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { CONNECTIONS, FLOOR, SERVICE_VARS, holder, median, root, seedPersonal, serve, serviceAssets, wrk } from "./lib.mjs";
import { cpuUs, runtimePid } from "./scale.mjs";

const [a, b] = process.argv.slice(2).map((folder) => relative(root, join(process.cwd(), folder)));
if (!a || !b) throw new Error("usage: node bench/ab.mjs <build A> <build B>");
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const PERSONAL = Number(process.env.BENCH_PERSONAL ?? 1000);
const check = "/api/checkIpOnGreylist?result_mode=json";
const add = "/api/addIpToGreylist?result_mode=json";
const remove = "/api/deleteIpFromGreylist?result_mode=json";

/** Each scenario: its name, path, address (a fixed one or "seq:" for new ones), connections. */
const scenarios = [
  ["check, unlisted (1 connection)", check, "20.250.0.1", 1],
  ["add, new addresses (1 connection)", add, "seq:0", 1],
  ["remove, listed addresses (1 connection)", remove, "seq:0", 1],
  ["check, unlisted (8 connections)", check, "20.250.0.1", CONNECTIONS],
  ["add, new addresses (8 connections)", add, "seq:20000000", CONNECTIONS],
  ["list, a page of 100 (1 connection)", "/api/listGreylist?result_mode=json", "", 1],
];
/** The rows of the call's share, on workerd's own socket: a build's, then the floors'. */
const calls = [
  ["invalid", check, "not-an-ip"],
  ["check", check, "20.250.0.1"],
];
const floors = ["bare", "do", "read"];
const run = process.env.BENCH_AB_SCENARIOS === "0" ? [] : scenarios;

/** Serves as `serve` does, with the process of the workerd it started: the newest. */
async function serveCounted(...args) {
  const served = await serve(...args);
  return { ...served, pid: runtimePid() };
}

/** `wrk`, one connection, and the CPU the process spent a request answered. */
async function wrkCounted(pid, url, env) {
  const before = cpuUs(pid);
  const row = await wrk(url, env, 1);
  return { ...row, cpu_us: (cpuUs(pid) - before) / row.requests };
}

/** How a build's folder is served: its Workers (the management Worker where the
 *  build has one, else the current one, which an edge without it never calls),
 *  or its one module as two. */
function script(build) {
  if (existsSync(join(root, build, "edge", "index.js"))) {
    const manage = existsSync(join(root, build, "manage", "index.js")) ? { manage: join(build, "manage") } : {};
    return { edge: join(build, "edge"), ...manage, objects: join(build, "objects") };
  }
  if (existsSync(join(root, build, "index.js"))) return { apart: join(build, "index.js") };
  throw new Error(`${build}: neither edge/index.js and objects/index.js nor index.js`);
}

async function measure(build, round) {
  const state = mkdtempSync(join(tmpdir(), "greylist-ab-"));
  const { mf, url, direct, pid } = await serveCounted(".", SERVICE_VARS, state, script(build));
  try {
    const owner = await holder(url);
    await seedPersonal(url, owner.token, PERSONAL);
    const rows = {};
    for (const [name, path, ip] of calls) {
      rows[name] = await wrkCounted(pid, direct + path, { BENCH_PATH: path, BENCH_TOKENS: owner.token, BENCH_IP: ip, BENCH_FIELD: "ip" });
    }
    for (const [name, path, ip, connections] of run) {
      // Removals take back what the adds before them put on the list, in the same order.
      rows[name] = await wrk(url + path, { BENCH_PATH: path, BENCH_TOKENS: owner.token, BENCH_IP: ip, BENCH_FIELD: "ip" }, connections);
      console.error(`round ${round}, ${build}: ${name}: p50 ${(rows[name].p50_us / 1000).toFixed(2)} ms, ${rows[name].rps.toFixed(0)}/s`);
    }
    return rows;
  } finally {
    await mf.dispose();
    rmSync(state, { recursive: true, force: true });
  }
}

const floorState = mkdtempSync(join(tmpdir(), "greylist-ab-floor-"));
const floor = await serveCounted("bench/floor", {}, floorState, FLOOR, { assets: serviceAssets() });
const runs = { [a]: [], [b]: [] };
const floorRuns = [];
try {
  for (let round = 1; round <= ROUNDS; round++) {
    const measured = {};
    for (const path of floors) measured[path] = await wrkCounted(floor.pid, `${floor.direct}/api/${path}`, { BENCH_PATH: `/api/${path}` });
    floorRuns.push(measured);
    // Each build goes first in every other round: neither gains by its place.
    for (const build of round % 2 ? [a, b] : [b, a]) runs[build].push(await measure(build, round));
  }
} finally {
  await floor.mf.dispose();
  rmSync(floorState, { recursive: true, force: true });
}

const spread = (values) => `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`;
const mean = (values) => values.reduce((sum, v) => sum + v, 0) / values.length;
const lines = [`A = ${a}, B = ${b}; ${ROUNDS} rounds, each build first in turn, ${process.env.BENCH_SECONDS ?? 5} s a row, ${PERSONAL} entries`];
if (run.length) {
  lines.push(
    "",
    "| scenario | A p50 ms | B p50 ms | B ÷ A p50 (spread over rounds) | B ÷ A req/s (spread) | errors A, B |",
    "|---|---:|---:|---:|---:|---:|",
  );
}
for (const [name] of run) {
  const pa = runs[a].map((rows) => rows[name]);
  const pb = runs[b].map((rows) => rows[name]);
  const p50 = pb.map((row, i) => row.p50_us / pa[i].p50_us);
  const rps = pb.map((row, i) => row.rps / pa[i].rps);
  const errors = (rows) => rows.reduce((sum, row) => sum + row.errors, 0);
  lines.push(
    `| ${name} | ${(mean(pa.map((r) => r.p50_us)) / 1000).toFixed(2)} | ${(mean(pb.map((r) => r.p50_us)) / 1000).toFixed(2)} | ` +
      `${mean(p50).toFixed(2)} (${spread(p50)}) | ${mean(rps).toFixed(2)} (${spread(rps)}) | ${errors(pa)}, ${errors(pb)} |`,
  );
}

// Each round's phases from its own floors, in latency and in CPU; the medians
// over rounds, and B − A.
const metrics = [
  ["latency (p50)", "p50_us"],
  ["CPU a request", "cpu_us"],
];
const phases = [
  ["our call above the round trip: check − invalid − (empty object − bare)", (r, f, m) => r.check[m] - r.invalid[m] - (f.do[m] - f.bare[m])],
  ["of which the typed call and dispatch: check − invalid − (lookup floor − bare)", (r, f, m) => r.check[m] - r.invalid[m] - (f.read[m] - f.bare[m])],
];
const ms = (us) => (us / 1000).toFixed(3);
const at = (rows, name, m) => ms(median(rows.map((r) => r[name][m])));
const cell = (values) => `${ms(median(values))} (${ms(Math.min(...values))} to ${ms(Math.max(...values))})`;
for (const [label, m] of metrics) {
  lines.push(
    "",
    `${label}, ms, on workerd's own socket, one request at a time. Floors: bare ${at(floorRuns, "bare", m)}, ` +
      `empty object ${at(floorRuns, "do", m)}, a lookup ${at(floorRuns, "read", m)}; invalid address A ${at(runs[a], "invalid", m)}, ` +
      `B ${at(runs[b], "invalid", m)}; unlisted check A ${at(runs[a], "check", m)}, B ${at(runs[b], "check", m)}`,
    "",
    "| phase | A ms (spread) | B ms (spread) | B − A ms (spread) |",
    "|---|---:|---:|---:|",
  );
  for (const [name, phase] of phases) {
    const pa = runs[a].map((rows, i) => phase(rows, floorRuns[i], m));
    const pb = runs[b].map((rows, i) => phase(rows, floorRuns[i], m));
    lines.push(`| ${name} | ${cell(pa)} | ${cell(pb)} | ${cell(pb.map((value, i) => value - pa[i]))} |`);
  }
}
console.log(lines.join("\n"));
