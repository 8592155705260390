// Where an unlisted check, an add and an invalid address (an answer without
// storage) spend the isolate's CPU, and the bare floor's answer beside them: workerd's inspector
// (Miniflare's `inspectorPort`, on 127.0.0.1) samples the service's two isolates,
// the edge's and its Durable Objects', every 50 µs while one connection sends the
// requests for BENCH_PROFILE_SECONDS (5), and counts their samples together. The
// modules served are the release builds with their function names
// (`target/<part>_bg.named.wasm` for each of the three Workers, the code
// build/<part>/ holds), so the samples name our functions.
// Then what the log line costs, measured rather than sampled (the inspector also
// receives every console line, which makes it look dearer than it is): the same
// checks against the bare and empty-object floors, with `REQUEST_LOG` at `all`
// and at `refusals`, one connection and eight, on workerd's own socket.
//   node bench/profile.mjs        after `make build named`, as BENCH_ONLY=profile make bench prints it

import { copyFileSync, cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { ADMIN, CONNECTIONS, DEPLOYED, FLOOR, FLOOR_WORKERS, SERVICE_VARS, globalAddress, globalImport, holder, post, root, secondsUntilListed, serve, serviceAssets, workerName, wrk } from "./lib.mjs";

const SECONDS = Number(process.env.BENCH_PROFILE_SECONDS ?? 5);
const INSPECTOR = 9239;

/** Where a sample's time goes: the first phase, in this order, that a frame of
 *  its stack belongs to (a check's every sample has the route's handler on its
 *  stack, so the narrower phases come first). */
export const PHASES = [
  ["the log line (the runtime's console)", (f) => /http::log::|__wbg_log/.test(f.functionName)],
  ["the object's SQLite work (`sql.exec`, its cursor)", (f) => /^(exec|toArray|raw|next|one)$/.test(f.functionName) || /store::sql::/.test(f.functionName)],
  ["postcard: encoding and decoding calls and answers", (f) => /postcard|objects::protocol::(encode|decode|frame|read_reply|one_frame)|base64ct/.test(f.functionName)],
  ["the call's exchange: request, fetch, the answer's body", (f) => /objects::protocol::|fetch_with_request|__wbg_fetch|array_?[bB]uffer/.test(f.functionName)],
  ["the object's dispatch and the holder's rules", (f) => /objects::holder|domain::personal|domain::precedence|store::holder|holderlist_fetch/.test(f.functionName)],
  ["the access token (HMAC-SHA256, its JSON)", (f) => /jwt_compact|sha2|hmac|access::token|caller::bearer/.test(f.functionName)],
  ["the request's form and address, the answer's JSON", (f) => /http::wire|net::address|serde_json|Body::read/.test(f.functionName)],
  ["the snapshots' lookup and the license's standing", (f) => /operator_lists::client|snapshots|licenses::standing/.test(f.functionName)],
  ["routing and the rest of our HTTP edge", (f) => /greylist::/.test(f.functionName)],
  ["JavaScript glue (wasm-bindgen, worker-rs)", (f) => /wasm_bindgen|js_sys|web_sys|worker::|__wbg|__wbindgen|externref/.test(f.functionName)],
  ["other WebAssembly (allocation, core)", (f) => /^wasm:/.test(f.url)],
  ["the runtime: promises, Request and Response, streams, garbage collection", () => true],
];

function send(socket, method, params = {}) {
  const id = (send.next = (send.next ?? 0) + 1);
  return new Promise((resolve, reject) => {
    const listen = (data) => {
      const message = JSON.parse(data);
      if (message.id !== id) return;
      socket.off("message", listen);
      message.error ? reject(new Error(`${method}: ${message.error.message}`)) : resolve(message.result);
    };
    socket.on("message", listen);
    socket.send(JSON.stringify({ id, method, params }));
  });
}

/** The share of samples in each phase, and the heaviest frames by self time. */
export function attribute(profile) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const phases = new Map(PHASES.map(([name]) => [name, 0]));
  const self = new Map();
  let total = 0;
  for (const id of profile.samples) {
    const leaf = byId.get(id);
    if (leaf.callFrame.functionName === "(idle)" || leaf.callFrame.functionName === "(program)") continue;
    total++;
    self.set(leaf.callFrame.functionName, (self.get(leaf.callFrame.functionName) ?? 0) + 1);
    const stack = [];
    for (let at = id; at !== undefined; at = parent.get(at)) stack.push(byId.get(at).callFrame);
    const phase = PHASES.find(([, test]) => stack.some(test))[0];
    phases.set(phase, phases.get(phase) + 1);
  }
  return {
    samples: total,
    phases: [...phases].map(([name, count]) => ({ name, share: count / total })),
    heaviest: [...self].sort((a, b) => b[1] - a[1]).slice(0, 15).map(([name, count]) => ({ name, share: count / total })),
  };
}

/** The isolates' samples of the Workers `names` (by default the service's two,
 *  the edge's and its objects'), while `connections` send the requests. */
async function profiled(url, path, spec, token, names = Object.values(DEPLOYED).map(workerName), connections = 1) {
  const targets = (await (await fetch(`http://127.0.0.1:${INSPECTOR}/json`)).json())
    .filter((t) => names.some((name) => t.title === `workerd: worker core:user:${name}`));
  if (targets.length !== names.length) throw new Error(`the inspector's targets are not the two Workers': ${JSON.stringify(targets.map((t) => t.title))}`);
  const sockets = [];
  for (const target of targets) {
    const socket = new WebSocket(target.webSocketDebuggerUrl);
    await new Promise((resolve, reject) => (socket.once("open", resolve), socket.once("error", reject)));
    sockets.push(socket);
  }
  try {
    for (const socket of sockets) {
      await send(socket, "Profiler.enable");
      await send(socket, "Profiler.setSamplingInterval", { interval: 50 });
      await send(socket, "Profiler.start");
    }
    const measured = await wrk(url + path, { BENCH_PATH: path, BENCH_TOKENS: token, BENCH_IP: spec, BENCH_FIELD: "ip" }, connections, SECONDS);
    const each = [];
    for (const socket of sockets) each.push(attribute((await send(socket, "Profiler.stop")).profile));
    return { targets: targets.map((t) => t.title), connections, rps: measured.rps, p50_us: measured.p50_us, ...merged(each) };
  } finally {
    for (const socket of sockets) socket.close();
  }
}

/** Attributions of several isolates' profiles as one: shares over all their
 *  samples (an isolate that took none, as the objects' for an invalid address,
 *  adds nothing). */
function merged(all) {
  const each = all.filter((one) => one.samples > 0);
  const samples = each.reduce((sum, one) => sum + one.samples, 0);
  const sum = (lists) => {
    const counts = new Map();
    for (const [one, list] of lists) for (const { name, share } of list) counts.set(name, (counts.get(name) ?? 0) + share * one.samples);
    return [...counts].map(([name, count]) => ({ name, share: samples ? count / samples : 0 }));
  };
  return {
    samples,
    phases: sum(each.map((one) => [one, one.phases])),
    heaviest: sum(each.map((one) => [one, one.heaviest])).sort((a, b) => b.share - a.share).slice(0, 15),
  };
}

export async function profile() {
  // Beside build/, as Miniflare names a module by its path from the folder it serves.
  const build = join(root, "target/profile-build");
  rmSync(build, { recursive: true, force: true });
  const folders = {};
  for (const [half, folder] of Object.entries(DEPLOYED)) {
    folders[half] = join(build, half);
    cpSync(join(root, folder), folders[half], { recursive: true });
    copyFileSync(join(root, `target/${half}_bg.named.wasm`), join(folders[half], "index_bg.wasm"));
  }
  const state = mkdtempSync(join(tmpdir(), "greylist-profile-state-"));
  try {
    const phases = {};
    const service = await serve(".", SERVICE_VARS, state, folders, { assets: serviceAssets(), inspectorPort: INSPECTOR });
    try {
      const { token } = await holder(service.url);
      const check = "/api/checkIpOnGreylist?result_mode=json";
      const add = "/api/addIpToGreylist?result_mode=json";
      await wrk(service.direct + check, { BENCH_PATH: check, BENCH_TOKENS: token, BENCH_IP: "20.250.0.1", BENCH_FIELD: "ip" }, 1, 2);
      phases.check = await profiled(service.direct, check, "20.250.0.1", token);
      phases.add = await profiled(service.direct, add, `seq:${5 * 2 ** 24}`, token);
      phases.invalid = await profiled(service.direct, check, "not-an-ip", token);
      // Issue 59: the answers without storage and from the snapshot, one at a
      // time and under load, against the bare floor's under the same load: what
      // the isolate does beyond the floor's, and how much is the runtime's own.
      await post(service.url, "/admin/global-list", { token: ADMIN, method: "PUT", text: globalImport(1000) });
      await secondsUntilListed(service.direct, token, globalAddress(7));
      phases.global = await profiled(service.direct, check, globalAddress(7), token);
      phases.invalidLoaded = await profiled(service.direct, check, "not-an-ip", token, undefined, CONNECTIONS);
      phases.globalLoaded = await profiled(service.direct, check, globalAddress(7), token, undefined, CONNECTIONS);
    } finally {
      await service.mf.dispose();
      rmSync(build, { recursive: true, force: true });
    }
    // The bare floor under the same profiler: what the runtime spends on a request
    // that the Worker answers at once, against which the invalid address's is read.
    const floor = await serve("bench/floor", {}, join(state, "floor"), FLOOR, { assets: serviceAssets(), inspectorPort: INSPECTOR });
    try {
      phases.bare = await profiled(floor.direct, "/api/bare", "", "", FLOOR_WORKERS);
      phases.bareLoaded = await profiled(floor.direct, "/api/bare", "", "", FLOOR_WORKERS, CONNECTIONS);
    } finally {
      await floor.mf.dispose();
    }
    return phases;
  } finally {
    rmSync(state, { recursive: true, force: true });
  }
}

/** The isolate's JavaScript and WebAssembly time a request took: its busy samples
 *  over the requests sent (the runtime's own C++ samples as `(program)`, not counted). */
const cpuPerRequest = (run) => (run.samples * 50) / (run.rps * SECONDS);

/** The checks with and without their log line, each against its floor. */
export async function logCost() {
  const state = mkdtempSync(join(tmpdir(), "greylist-log-cost-"));
  const floor = await serve("bench/floor", {}, join(state, "floor"), FLOOR, { assets: serviceAssets() });
  const services = {};
  for (const level of ["all", "refusals"]) services[level] = await serve(".", { ...SERVICE_VARS, REQUEST_LOG: level }, join(state, level), DEPLOYED, { assets: serviceAssets() });
  try {
    const tokens = {};
    for (const [level, service] of Object.entries(services)) tokens[level] = (await holder(service.url)).token;
    const check = "/api/checkIpOnGreylist?result_mode=json";
    const rows = [];
    for (const connections of [1, CONNECTIONS]) {
      const floors = {};
      for (const path of ["bare", "do"]) floors[path] = await wrk(`${floor.direct}/api/${path}`, { BENCH_PATH: `/api/${path}` }, connections, 3);
      for (const [name, floorName, ip] of [["invalid ip (no storage)", "bare", "not-an-ip"], ["check, unlisted", "do", "20.250.0.1"]]) {
        for (const level of ["all", "refusals"]) {
          const m = await wrk(services[level].direct + check, { BENCH_PATH: check, BENCH_TOKENS: tokens[level], BENCH_IP: ip, BENCH_FIELD: "ip" }, connections, 3);
          const f = floors[floorName];
          rows.push({ connections, name, level, p50_us: m.p50_us, rps: m.rps, p50Ratio: m.p50_us / f.p50_us, rpsRatio: m.rps / f.rps });
        }
      }
    }
    return rows;
  } finally {
    await floor.mf.dispose();
    for (const service of Object.values(services)) await service.mf.dispose();
    rmSync(state, { recursive: true, force: true });
  }
}

export function profileLines({ phases, log }) {
  const lines = [];
  const what = {
    check: "an unlisted check",
    add: "an add",
    invalid: "an invalid address (no storage)",
    global: "a global-list answer (from the isolate's snapshot)",
    bare: "the bare floor's answer",
  };
  for (const [name, run] of Object.entries(phases)) {
    // A run under load is named as its one-at-a-time twin; its line says the connections.
    lines.push(
      `Where ${what[name.replace(/Loaded$/, "")]}'s CPU goes: ${run.samples} samples of the two Workers' isolates (the edge's and its objects') over ${SECONDS} s, ${run.connections === 1 ? "one connection" : `${run.connections} connections`}, ${run.rps.toFixed(0)} req/s under the inspector (p50 ${(run.p50_us / 1000).toFixed(2)} ms), ${cpuPerRequest(run).toFixed(0)} µs of JavaScript and WebAssembly a request`,
      "",
      "| phase | share |",
      "|---|---:|",
    );
    for (const p of run.phases) lines.push(`| ${p.name} | ${(100 * p.share).toFixed(1)} % |`);
    lines.push("", "| heaviest frames (self time) | share |", "|---|---:|");
    for (const h of run.heaviest) lines.push(`| \`${h.name.replace(/\[[0-9a-f]{16}\]/g, "").replace(/::h[0-9a-f]{16}/, "").slice(0, 100)}\` | ${(100 * h.share).toFixed(1)} % |`);
    lines.push("");
  }
  lines.push("The log line's cost, on workerd's own socket (3 s a measurement)", "", "| connections | scenario | REQUEST_LOG | p50 ms | req/s | p50 ÷ floor | req/s ÷ floor |", "|---:|---|---|---:|---:|---:|---:|");
  for (const r of log) lines.push(`| ${r.connections} | ${r.name} | ${r.level} | ${(r.p50_us / 1000).toFixed(2)} | ${r.rps.toFixed(0)} | ${r.p50Ratio.toFixed(2)} | ${r.rpsRatio.toFixed(2)} |`);
  return lines;
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(profileLines({ phases: await profile(), log: await logCost() }).join("\n"));
