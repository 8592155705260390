// `make bench-ab`: two builds of the worker, A and B, measured in turns (A, B, A, B,
// … BENCH_ROUNDS times) on the scenarios that cross a Durable Object call, so that
// each ratio B ÷ A comes with its spread over the rounds: these machines are
// noisy, and a difference inside the spread is no difference.
//
//   node bench/ab.mjs <folder of A's build> <folder of B's build>
// Each folder is a copy of what `make build` leaves in build/ (the two Workers,
// edge/ and objects/, each with index.js and index_bg.wasm), inside the
// repository (Miniflare loads modules from below its working folder); both are
// served with the configurations of build/. BENCH_SECONDS (default 5) per row,
// BENCH_ROUNDS (default 2), BENCH_PERSONAL (default 1000) entries seeded.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { CONNECTIONS, SERVICE_VARS, holder, root, seedPersonal, serve, wrk } from "./lib.mjs";

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

async function measure(build, round) {
  const state = mkdtempSync(join(tmpdir(), "greylist-ab-"));
  const { mf, url } = await serve(".", SERVICE_VARS, state, { edge: join(build, "edge"), objects: join(build, "objects") });
  try {
    const owner = await holder(url);
    await seedPersonal(url, owner.token, PERSONAL);
    const rows = {};
    for (const [name, path, ip, connections] of scenarios) {
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

const runs = { [a]: [], [b]: [] };
for (let round = 1; round <= ROUNDS; round++) {
  for (const build of [a, b]) runs[build].push(await measure(build, round));
}

const spread = (values) => `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`;
const mean = (values) => values.reduce((sum, v) => sum + v, 0) / values.length;
const lines = [
  `A = ${a}, B = ${b}; ${ROUNDS} rounds of A then B, ${process.env.BENCH_SECONDS ?? 5} s a row, ${PERSONAL} entries`,
  "",
  "| scenario | A p50 ms | B p50 ms | B ÷ A p50 (spread over rounds) | B ÷ A req/s (spread) | errors A, B |",
  "|---|---:|---:|---:|---:|---:|",
];
for (const [name] of scenarios) {
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
console.log(lines.join("\n"));
