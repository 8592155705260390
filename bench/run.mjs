// `make bench`: serves the built worker and the floor worker with Miniflare
// directly (wrangler dev would add ~3 ms to every request), seeds lists, drives
// load with wrk and reports each scenario against its floor.
//
// Sizes: BENCH_PERSONAL (default 100000), BENCH_GLOBAL (default 100000),
// BENCH_SECONDS per scenario (default 5), BENCH_CONNECTIONS (default 8).

import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, statSync } from "node:fs";
import { tmpdir, cpus } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { Miniflare } from "miniflare";
import { unstable_getMiniflareWorkerOptions } from "wrangler";

const PERSONAL = Number(process.env.BENCH_PERSONAL ?? 100000);
const GLOBAL = Number(process.env.BENCH_GLOBAL ?? 100000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8);
const SMALL = 1000;
const ADMIN = "bench-admin-token";
const root = new URL("..", import.meta.url).pathname;
const state = mkdtempSync(join(tmpdir(), "greylist-bench-"));

/** Starts a worker from its folder, with the bindings its wrangler.toml declares. */
async function serve(folder, vars) {
  process.chdir(join(root, folder));
  const { workerOptions } = unstable_getMiniflareWorkerOptions("wrangler.toml");
  const mf = new Miniflare({
    ...workerOptions,
    name: undefined,
    scriptPath: "build/index.js",
    modules: true,
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
    bindings: { ...workerOptions.bindings, ...vars },
    kvPersist: join(state, folder, "kv"),
    durableObjectsPersist: join(state, folder, "do"),
    host: "127.0.0.1",
    port: 0,
    // The service still writes its log line per request; only printing them here is skipped.
    handleRuntimeStdio: (stdout, stderr) => {
      stdout.resume();
      stderr.resume();
    },
  });
  const url = (await mf.ready).toString().replace(/\/$/, "");
  process.chdir(root);
  return { mf, url };
}

/** Asynchronous on purpose: Miniflare drains workerd's output in this process, and a
 *  blocked event loop would stall the worker on a full stdout pipe. */
async function wrk(url, env) {
  const { stdout } = await promisify(execFile)(
    "wrk",
    ["-t", "2", "-c", String(CONNECTIONS), "-d", `${SECONDS}s`, "--latency", "-s", join(root, "bench/load.lua"), url],
    { env: { ...process.env, ...env }, encoding: "utf8" },
  );
  return JSON.parse(stdout.trim().split("\n").pop());
}

async function post(url, path, { token, form, json } = {}) {
  const headers = {};
  if (token) headers.Authorization = `Bearer ${token}`;
  let body;
  if (json !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(json);
  } else if (form) {
    headers["Content-Type"] = "application/x-www-form-urlencoded";
    body = new URLSearchParams(form).toString();
  }
  const response = await fetch(url + path, { method: "POST", headers, body });
  return { status: response.status, text: await response.text() };
}

async function holder(url) {
  const license = JSON.parse((await post(url, "/admin/licenses", { token: ADMIN })).text);
  const login = await post(url, "/v2/authentication/login/license", { json: { licenseKey: license.licenseKey } });
  return { key: license.licenseKey, token: JSON.parse(login.text).accessToken };
}

/** Runs `count` jobs with at most `width` in flight. */
async function pool(count, width, job) {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < count) await job(next++);
  }));
}

// 100.0.0.0 onwards: public, and apart from load.lua's 20.x addresses.
const seeded = (n) => `100.${128 + ((n >> 16) & 63)}.${(n >> 8) & 255}.${n & 255}`;
const globalAddress = (n) => `45.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;

async function seedPersonal(url, token, count) {
  await pool(count, 32, async (n) => {
    const { text } = await post(url, "/api/addIpToGreylist", { token, form: { ip: seeded(n) } });
    if (!text.endsWith("has been added to greylist")) throw new Error(`seeding: ${text}`);
  });
}

const results = { date: new Date().toISOString(), machine: `${cpus().length} × ${cpus()[0].model}`, connections: CONNECTIONS, seconds: SECONDS, personal: PERSONAL, global: GLOBAL, rows: [] };
const row = async (name, floor, measured, note) => results.rows.push({ name, floor, ...(await measured), note });

try {
  // Floors first, alone on the machine.
  const floor = await serve("bench/floor", {});
  const floors = { bare: await wrk(`${floor.url}/bare`, {}), do: await wrk(`${floor.url}/do`, {}) };
  await floor.mf.dispose();

  const { mf, url } = await serve(".", {
    JWT_SECRET: "bench-jwt-secret-0123456789abcdef0123456789abcdef",
    ADMIN_TOKEN: ADMIN,
    CACHE_SECONDS: "60",
    DAILY_ADDITIONS: "100000000",
    DAILY_REMOVALS: "100000000",
  });
  const big = await holder(url);
  const small = await holder(url);
  const spread = await Promise.all(Array.from({ length: 8 }, () => holder(url)));
  console.error(`seeding ${PERSONAL} personal entries, ${SMALL} for the small list, ${GLOBAL} global entries…`);
  const globalList = await mf.getKVNamespace("GLOBAL_LIST");
  await pool(GLOBAL, 64, (n) => globalList.put(globalAddress(n), "1"));
  await seedPersonal(url, big.token, PERSONAL);
  await seedPersonal(url, small.token, SMALL);
  await post(url, "/admin/allow-list", { token: ADMIN, json: { add: ["104.16.0.0/13"] } });

  const check = "/api/checkIpOnGreylist?result_mode=json";
  const add = "/api/addIpToGreylist?result_mode=json";
  const remove = "/api/deleteIpFromGreylist?result_mode=json";
  const run = async (path, tokens, ip, field) => wrk(url + path, { BENCH_PATH: path, BENCH_TOKENS: tokens.join(","), BENCH_IP: ip, BENCH_FIELD: field ?? "ip" });

  await row("invalid ip (no storage)", "bare", run(check, [big.token], "not-an-ip"));
  await row("private ip (no storage)", "bare", run(check, [big.token], "10.1.2.3"));
  await row("allow-listed ip (cached)", "bare", run(check, [big.token], "104.16.1.1"));
  await row("check, unlisted", "do", run(check, [big.token], "20.250.0.1"), `${PERSONAL} personal entries`);
  await row("check, on global list", "do", run(check, [big.token], globalAddress(7)));
  await row("add, global answers (no DO)", "bare", run(add, [big.token], globalAddress(8)));
  await row("add, new addresses", "do", run(add, [big.token], "seq:0"), `${PERSONAL} personal entries`);
  await row("remove, listed addresses", "do", run(remove, [big.token], "seq:0"));
  await row("login", "bare", run("/v2/authentication/login/license", [], big.key, "licenseKey"));
  await row("check, 8 holders", "do", run(check, spread.map((h) => h.token), "20.250.0.1"));
  await row("add, 8 holders", "do", run(add, spread.map((h) => h.token), "seq:0"));
  await row(`check, ${SMALL} entries`, "do", run(check, [small.token], "20.250.0.1"));
  await row(`add, ${SMALL} entries`, "do", run(add, [small.token], "seq:20000000"));
  await row(`check, ${PERSONAL} entries`, "do", run(check, [big.token], "20.250.0.1"));
  await row(`add, ${PERSONAL} entries`, "do", run(add, [big.token], "seq:40000000"));
  await mf.dispose();

  const wasm = readFileSync(join(root, "build/index_bg.wasm"));
  results.floors = floors;
  results.wasm = { raw: statSync(join(root, "build/index_bg.wasm")).size, gzip: gzipSync(wasm, { level: 9 }).length };
  writeFileSync(join(root, "bench/results.json"), JSON.stringify(results, null, 2) + "\n");
  print(results);
} finally {
  rmSync(state, { recursive: true, force: true });
}

function print({ rows, floors, wasm, date, machine }) {
  const ms = (us) => (us / 1000).toFixed(2);
  const lines = [
    `greylist bench, ${date}, ${machine}, ${CONNECTIONS} connections, ${SECONDS} s per row`,
    "",
    "| scenario | req/s | p50 ms | p99 ms | floor | req/s ÷ floor | p50 ÷ floor | p99 ÷ floor | errors |",
    "|---|---:|---:|---:|---|---:|---:|---:|---:|",
  ];
  for (const [name, f] of [["floor: bare answer", floors.bare], ["floor: empty Durable Object", floors.do]]) {
    lines.push(`| ${name} | ${f.rps.toFixed(0)} | ${ms(f.p50_us)} | ${ms(f.p99_us)} | | | | | ${f.errors} |`);
  }
  for (const r of rows) {
    const f = floors[r.floor];
    lines.push(
      `| ${r.name} | ${r.rps.toFixed(0)} | ${ms(r.p50_us)} | ${ms(r.p99_us)} | ${r.floor === "do" ? "DO" : "bare"} | ` +
        `${(r.rps / f.rps).toFixed(2)} | ${(r.p50_us / f.p50_us).toFixed(2)} | ${(r.p99_us / f.p99_us).toFixed(2)} | ${r.errors} |`,
    );
  }
  lines.push("", `wasm module: ${(wasm.raw / 1024).toFixed(1)} KiB raw, ${(wasm.gzip / 1024).toFixed(1)} KiB gzipped`);
  console.log(lines.join("\n"));
}
