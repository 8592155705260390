// The headline ratios, measured in several rounds on two ways of serving the same
// workerd: through Miniflare's entry worker (what `wrangler dev` serves) and on a
// socket of workerd's own in front of the worker, as the edge runs it. The floor
// worker and the service run side by side, each behind the service's asset router,
// so every round measures a floor and then its scenarios, on the same machine in
// the same minute; the spread over rounds is what one figure may be off by.

import { join } from "node:path";
import { ADMIN, CONNECTIONS, SERVICE_VARS, globalAddress, globalImport, holder, post, secondsUntilListed, serve, serviceAssets, wrk } from "./lib.mjs";

export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_ROUND_SECONDS ?? 3);
const check = "/api/checkIpOnGreylist?result_mode=json";
const add = "/api/addIpToGreylist?result_mode=json";

/** Each scenario with its floor: what it would cost with nothing of ours in it. */
export const PAIRS = [
  ["invalid ip (no storage)", "bare", check, "not-an-ip"],
  ["check, on global list", "bare", check, globalAddress(7)],
  ["check, unlisted", "do", check, "20.250.0.1"],
  ["add, new addresses", "write", add, "seq"],
  // With IPV6 on: what an IPv6 address costs beside an IPv4 one, against the same floors.
  ["check, unlisted IPv6", "do", check, "2a00:1450:4001:80b::1"],
  ["add, new IPv6 addresses", "write", add, "seq6"],
];
export const RUNTIMES = [
  ["Miniflare", "url"],
  ["workerd", "direct"],
];

export async function runtimes(state) {
  const floor = await serve("bench/floor", {}, join(state, "rounds-floor"), "build/index.js", { assets: serviceAssets() });
  const service = await serve(".", SERVICE_VARS, join(state, "rounds-service"));
  try {
    const { token } = await holder(service.url);
    await post(service.url, "/admin/global-list", { token: ADMIN, method: "PUT", text: globalImport(1000) });
    for (const base of [service.url, service.direct]) await secondsUntilListed(base, token, globalAddress(7));
    const measured = [];
    let adds = 0;
    for (let round = 0; round < ROUNDS; round++) {
      for (const [runtime, address] of RUNTIMES) {
        for (const connections of [1, CONNECTIONS]) {
          const floors = {};
          for (const path of ["bare", "do", "write"]) {
            floors[path] = await wrk(`${floor[address]}/api/${path}`, { BENCH_PATH: `/api/${path}` }, connections, SECONDS);
          }
          for (const [name, floorName, path, ip] of PAIRS) {
            // Addresses 23.0.0.0 onwards, 2 000 000 a run: every add is of a new one.
            const spec = ip === "seq" || ip === "seq6" ? `${ip}:${3 * 2 ** 24 + 2000000 * adds++}` : ip;
            const m = await wrk(service[address] + path, { BENCH_PATH: path, BENCH_TOKENS: token, BENCH_IP: spec, BENCH_FIELD: "ip" }, connections, SECONDS);
            const f = floors[floorName];
            measured.push({ round, runtime, connections, name, floor: floorName, p50_us: m.p50_us, rps: m.rps, errors: m.errors + f.errors, floorP50_us: f.p50_us, floorRps: f.rps });
          }
        }
      }
    }
    return { rounds: ROUNDS, seconds: SECONDS, measured, summary: summarize(measured) };
  } finally {
    await floor.mf.dispose();
    await service.mf.dispose();
  }
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** Per runtime, connections and scenario: the median ratio to its floor, and the
 *  lowest and highest of the rounds. */
function summarize(measured) {
  const groups = new Map();
  for (const m of measured) {
    const key = `${m.runtime}|${m.connections}|${m.name}`;
    if (!groups.has(key)) groups.set(key, { runtime: m.runtime, connections: m.connections, name: m.name, floor: m.floor, all: [] });
    groups.get(key).all.push(m);
  }
  return [...groups.values()].map(({ all, ...group }) => {
    const p50 = all.map((m) => m.p50_us / m.floorP50_us);
    const rps = all.map((m) => m.rps / m.floorRps);
    return {
      ...group,
      errors: all.reduce((sum, m) => sum + m.errors, 0),
      p50_us: median(all.map((m) => m.p50_us)),
      floorP50_us: median(all.map((m) => m.floorP50_us)),
      p50Ratio: { median: median(p50), min: Math.min(...p50), max: Math.max(...p50) },
      rpsRatio: { median: median(rps), min: Math.min(...rps), max: Math.max(...rps) },
    };
  });
}
