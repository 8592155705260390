// The headline ratios, measured in several rounds on two ways of serving the same
// workerd: through Miniflare's entry worker (what `wrangler dev` serves) and on a
// socket of workerd's own in front of the worker, as the edge runs it. The floor
// worker and the service run side by side, each behind the service's asset router,
// so every round measures a floor and then its scenarios, on the same machine in
// the same minute; the spread over rounds is what one figure may be off by.
// `runtimes(state, { router: false })` serves both without the asset router, as
// issue 59 measures: the two built Workers and the floor's two, nothing in front.

import { join } from "node:path";
import { ADMIN, CONNECTIONS, DEPLOYED, FLOOR, FLOORS, SERVICE_VARS, median, globalAddress, globalImport, holder, post, secondsUntilListed, serve, serviceAssets, wrk } from "./lib.mjs";

export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_ROUND_SECONDS ?? 3);
const check = "/api/checkIpOnGreylist?result_mode=json";
const add = "/api/addIpToGreylist?result_mode=json";

/** Each scenario with its floor: what it would cost with nothing of ours in it;
 *  the outcome it measures (`X-Greylist-Outcome`), and for the adds the address
 *  its probe adds (this prefix and a number), apart from those wrk adds. */
export const PAIRS = [
  ["invalid ip (no storage)", "bare", check, "not-an-ip", "invalid"],
  ["check, on global list", "bare", check, globalAddress(7), "listed_global"],
  ["check, unlisted", "do", check, "20.250.0.1", "not_listed"],
  ["add, new addresses", "write", add, "seq", "added", "99.0.0."],
  // With IPV6 on: what an IPv6 address costs beside an IPv4 one, against the same floors.
  ["check, unlisted IPv6", "do", check, "2a00:1450:4001:80b::1", "not_listed"],
  ["add, new IPv6 addresses", "write", add, "seq6", "added", "2a00:1451::"],
];

/** Every scenario asked once on `base`, before the rounds and after them, and
 *  answered with the outcome it measures: wrk counts only statuses of 400 and
 *  more as errors, and a 200 with another outcome (a daily limit reached, an
 *  address the global list took) would time something else. An add's probe
 *  adds an address of its own, a new one each time. */
async function probe(base, token, time) {
  for (const [name, , path, ip, expected, own] of PAIRS) {
    const address = own ? `${own}${time + 1}` : ip;
    const response = await post(base, path, { token, form: { ip: address } });
    const outcome = response.headers.get("X-Greylist-Outcome");
    if (outcome !== expected) {
      throw new Error(`${name}: ${address} answered ${response.status} with the outcome ${outcome}, where the scenario measures ${expected}`);
    }
  }
}
export const RUNTIMES = [
  ["Miniflare", "url"],
  ["workerd", "direct"],
];

export async function runtimes(state, { router = true } = {}) {
  const apart = router ? "" : "-unrouted";
  const floor = await serve("bench/floor", {}, join(state, `rounds-floor${apart}`), FLOOR, { assets: router ? serviceAssets() : undefined });
  const service = await serve(".", SERVICE_VARS, join(state, `rounds-service${apart}`), DEPLOYED, router ? {} : { assets: undefined });
  try {
    const { token } = await holder(service.url);
    await post(service.url, "/admin/global-list", { token: ADMIN, method: "PUT", text: globalImport(1000) });
    for (const base of [service.url, service.direct]) await secondsUntilListed(base, token, globalAddress(7));
    await probe(service.url, token, 0);
    const measured = [];
    const floorsMeasured = [];
    let adds = 0;
    for (let round = 0; round < ROUNDS; round++) {
      for (const [runtime, address] of RUNTIMES) {
        for (const connections of [1, CONNECTIONS]) {
          const floors = {};
          for (const path of Object.keys(FLOORS)) {
            floors[path] = await wrk(`${floor[address]}/api/${path}`, { BENCH_PATH: `/api/${path}` }, connections, SECONDS);
            floorsMeasured.push({ round, runtime, connections, floor: path, p50_us: floors[path].p50_us, errors: floors[path].errors });
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
    await probe(service.direct, token, 1);
    const summary = summarize(measured);
    const split = phases(summary, measured, floorsMeasured);
    if (!router) for (const { rows } of split) rows[0].name = "the runtime, answering at once (no asset router)";
    return { rounds: ROUNDS, seconds: SECONDS, router, measured, summary, phases: split };
  } finally {
    await floor.mf.dispose();
    await service.mf.dispose();
  }
}

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

/** Where a request's time goes, one at a time, per runtime: each phase one
 *  median minus another, scenarios and floors of the same rounds; and beside it
 *  the lowest and highest of the same phase within each round (its own rows,
 *  measured in the same minute), what the figure may be off by. */
function phases(summary, measured, floorsMeasured) {
  return RUNTIMES.map(([runtime]) => {
    const quiet = floorsMeasured.filter((f) => f.runtime === runtime && f.connections === 1);
    const floor = Object.fromEntries(Object.keys(FLOORS).map((path) => [path, median(quiet.filter((f) => f.floor === path).map((f) => f.p50_us))]));
    const p50 = (name) => summary.find((s) => s.runtime === runtime && s.connections === 1 && s.name === name).p50_us;
    const rounds = [...new Set(quiet.map((f) => f.round))].map((round) => ({
      floor: Object.fromEntries(Object.keys(FLOORS).map((path) => [path, quiet.find((f) => f.round === round && f.floor === path).p50_us])),
      p50: (name) => measured.find((m) => m.round === round && m.runtime === runtime && m.connections === 1 && m.name === name).p50_us,
    }));
    const rows = ROWS.map(([id, name, of, from]) => {
      const each = rounds.map((r) => of(r.floor, r.p50) / 1000);
      return { id, name, ms: of(floor, p50) / 1000, min: Math.min(...each), max: Math.max(...each), from };
    });
    return { runtime, floorErrors: quiet.reduce((sum, f) => sum + f.errors, 0), rows };
  });
}

/** The phases: each its id, what it is, how it is had from the floors and the
 *  scenarios' p50s (µs), and that said in words. */
const ROWS = [
  ["bare", "the runtime and the asset router, answering at once", (floor) => floor.bare, "the bare floor"],
  ["edge", "our HTTP edge: route, access-token check (HMAC-SHA256), form, address rules, answer, log line", (floor, p50) => p50(INVALID) - floor.bare, "invalid address − bare floor"],
  ["global", "a global-list answer: the snapshot's binary search, from memory", (floor, p50) => p50(GLOBAL) - p50(INVALID), "global-list answer − invalid address"],
  ["round-trip", "a Durable Object round trip in the runtime", (floor) => floor.do - floor.bare, "empty-object floor − bare floor"],
  ["call", "our call to the holder's object, above that round trip: the typed call out and back, the object's dispatch, one SQLite point lookup", (floor, p50) => p50(CHECK) - p50(INVALID) - (floor.do - floor.bare), "unlisted check − invalid address − the round trip"],
  ["lookup", "of which one SQLite point lookup, its rows read", (floor) => floor.read - floor.do, "read floor − empty-object floor"],
  ["typed-call", "of which the typed call and the dispatch", (floor, p50) => p50(CHECK) - p50(INVALID) - (floor.read - floor.bare), "unlisted check − invalid address − (read floor − bare floor)"],
  ["writes", "an add's writes: seven rows in one transaction, the alarm already set", (floor, p50) => p50(ADD) - p50(CHECK), "add − unlisted check"],
];
const [INVALID, GLOBAL, CHECK, ADD] = ["invalid ip (no storage)", "check, on global list", "check, unlisted", "add, new addresses"];
