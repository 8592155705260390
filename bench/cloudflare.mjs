// `make bench`'s cloudflare section: what keeping a holder's own Cloudflare list
// costs, in calls to Cloudflare's API (counted by the tests' stand-in of it,
// tests/cloudflare/stand-in.mjs) and in the service's billable units (the test
// build's meter), and the memory of a full comparison of a large list.
//
// 1. One change (an add) of a connected holder, then a burst of 100 adds in one
//    second: the calls each costs Cloudflare, by call, and the service's units.
// 2. From those, a day at CLOUDFLARE_HOLDERS (10 000) holders with 100 changes a
//    day each (each change its own push, the worst case), beside Cloudflare's
//    documented limits, which apply per account (a holder connects their own).
// 3. A holder with COMPARED_ITEMS (500 000) entries connecting to a list that
//    already holds them (every other address, so that none merge): the whole
//    list read, compared and found equal, with the runtime's resident growth
//    (workerd's VmRSS) while it runs, on a runtime started afresh on the seeded
//    storage, and the isolate's WebAssembly memory (its high-water mark, what
//    counts against an isolate's 128 MB), the pages read and the seconds.

import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { join } from "node:path";
import { SERVICE_VARS, dotted, holder as newHolder, post, root, serve } from "./lib.mjs";
import { BILLABLE } from "./cost.mjs";
import { runtimePid, sampled } from "./scale.mjs";

export const COMPARED_ITEMS = Number(process.env.BENCH_CLOUDFLARE_ITEMS ?? 500_000);
export const CLOUDFLARE_HOLDERS = 10_000;
export const CHANGES_A_DAY = 100;

/** Cloudflare's documented limits that a holder's sync meets, each per account or token. */
export const CLOUDFLARE_LIMITS = {
  requestsPerFiveMinutes: 1200,
  requestsSource: "https://developers.cloudflare.com/fundamentals/api/reference/limits/ (1200 requests per 5 minutes per user or account token)",
  itemChangesPer12Hours: 1_000_000,
  changeRequestsPer12Hours: 30_000,
  listsSource: "https://developers.cloudflare.com/waf/tools/lists/lists-api/ (at most 1 000 000 list item changes and 30 000 requests changing items in 12 hours; one pending bulk operation per account)",
};

const KEY = "bench-cloudflare-token-key-0123456789abcdef";
// 100.128.0.0 on, every other address: apart from the other sections' addresses, and none merge.
const FIRST = 100 * 2 ** 24 + 128 * 2 ** 16;
const address = (n) => dotted(FIRST + 2 * n);
const CHANGING = ["POST /accounts/{account_id}/rules/lists/{list_id}/items", "DELETE /accounts/{account_id}/rules/lists/{list_id}/items"];

/** The stand-in, on a port of its own; it ends when this process does. */
async function standIn() {
  const child = spawn("node", [join(root, "tests/cloudflare/stand-in.mjs")], { stdio: ["pipe", "pipe", "inherit"] });
  const [line] = await new Promise((resolve) => createInterface({ input: child.stdout }).once("line", (l) => resolve([l])));
  const port = /^listening (\d+)$/.exec(line.trim())?.[1];
  if (!port) throw new Error(`the stand-in did not start: ${line}`);
  const base = `http://127.0.0.1:${port}`;
  const control = async (method, path, body) => {
    const response = await fetch(`${base}/__standin/${path}`, { method, headers: { "Content-Type": "application/json" }, body: body && JSON.stringify(body) });
    if (response.status !== 200) throw new Error(`stand-in ${path}: ${response.status} ${await response.text()}`);
    return response.json();
  };
  return { base, control, stop: () => child.kill() };
}

let accounts = 0;
const accountId = () => (0xbe0000 + accounts++).toString(16).padStart(32, "0");

async function meter(url, license) {
  const response = await fetch(`${url}/__test/meter?license=${license}`);
  return (await response.json()).counts;
}

const minus = (a, b) => Object.fromEntries(Object.keys(a).map((k) => [k, a[k] - (b[k] ?? 0)]));
const sum = (calls) => Object.values(calls).reduce((a, b) => a + b, 0);

/** Polls `probe` every 200 ms until `done` says so, for at most `seconds`. */
async function until(probe, done, seconds, what) {
  const deadline = performance.now() + seconds * 1000;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (performance.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value).slice(0, 300)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** A holder of `url` and a fresh account of the stand-in with a token for it. */
async function linked(url, stand, extra = {}) {
  const holder = await newHolder(url);
  const account = accountId();
  const apiToken = `bench-cf-token-${account}`;
  await stand.control("POST", "tokens", { token: apiToken, accounts: [account], zones: [], lists: true });
  return on(url, { holder, account, apiToken, extra });
}

/** A link's calls to the service at `url` (a runtime started again answers at another). */
function on(url, link) {
  const { holder, account, apiToken, extra } = link;
  return {
    ...link,
    status: async () => JSON.parse((await post(url, "/api/cloudflare", { token: holder.token, method: "GET" })).text),
    connect: async () => {
      const put = await post(url, "/api/cloudflare", { token: holder.token, method: "PUT", json: { accountId: account, apiToken, ...extra } });
      if (put.status !== 200) throw new Error(`connect: ${put.status} ${put.text}`);
    },
  };
}

const calls = async (stand, account) => (await stand.control("GET", `accounts/${account}`)).calls;

/** What `change` costs once the list has followed it: Cloudflare's calls and the
 *  service's units. Watched at the stand-in, so that no request of the service's
 *  is the watching's; counted once the sync has gone quiet (its last step, the
 *  comparison that finds nothing more to send, follows the operation's end). */
async function costOf(url, stand, link, change, items) {
  const [calls0, units0] = [await calls(stand, link.account), await meter(url, link.holder.license)];
  await change();
  const listed = async () => {
    const account = await stand.control("GET", `accounts/${link.account}`);
    return { pending: account.pending, items: account.lists[0]?.items.length, calls: sum(account.calls) };
  };
  await until(listed, (a) => !a.pending && a.items === items, 60, "the list never followed");
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const [calls1, units1] = [await calls(stand, link.account), await meter(url, link.holder.license)];
  const byCall = minus(calls1, calls0);
  for (const [call, n] of Object.entries(byCall)) if (n === 0) delete byCall[call];
  const units = minus(units1, units0);
  return { calls: sum(byCall), byCall, units: Object.fromEntries(BILLABLE.map((f) => [f, units[f]])) };
}

/** Adds `ips` in bulk requests of 1000, the most one takes. */
async function addAll(url, token, ips) {
  for (let at = 0; at < ips.length; at += 1000) {
    const form = ips.slice(at, at + 1000).map((ip) => ["ip", ip]);
    const { status, text } = await post(url, "/api/addIpsToGreylist?result_mode=json", { token, form });
    if (status !== 200) throw new Error(`bulk add: ${status} ${text.slice(0, 200)}`);
  }
}

export async function cloudflare(state) {
  const stand = await standIn();
  const vars = { ...SERVICE_VARS, CLOUDFLARE_API: `${stand.base}/client/v4`, CLOUDFLARE_TOKEN_KEY: KEY, PERSONAL_LIST_ENTRIES: String(COMPARED_ITEMS * 2) };
  let { mf, url } = await serve(".", vars, join(state, "cloudflare"), "build-test/index.js");
  try {
    const link = await linked(url, stand);
    await link.connect();
    await until(link.status, (s) => s.state === "in sync", 30, "never in sync");
    const one = await costOf(url, stand, link, () => post(url, "/api/addIpToGreylist", { token: link.holder.token, form: { ip: address(0) } }), 1);
    const burst = await costOf(url, stand, link, async () => {
      for (let n = 1; n <= 100; n++) await post(url, "/api/addIpToGreylist", { token: link.holder.token, form: { ip: address(n) } });
    }, 101);

    let large = await linked(url, stand, { takeOver: true, maxItems: COMPARED_ITEMS });
    const ips = Array.from({ length: COMPARED_ITEMS }, (_, n) => address(n + 1));
    const seedStarted = performance.now();
    await addAll(url, large.holder.token, ips);
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    await stand.control("POST", "fill", { account: large.account, name: "greylist", count: COMPARED_ITEMS, first: FIRST, step: 2 });
    // A fresh runtime on the same storage: what the seeding grew is not what the comparison needs.
    await mf.dispose();
    ({ mf, url } = await serve(".", vars, join(state, "cloudflare"), "build-test/index.js"));
    large = on(url, large);
    const wasm = async () => (await (await fetch(`${url}/__test/memory?license=${large.holder.license}`)).json()).holder;
    const wasmBefore = await wasm();
    const before = await calls(stand, large.account);
    const compared = await sampled(runtimePid(), async () => {
      await large.connect();
      return until(large.status, (s) => s.state === "in sync" && s.items === COMPARED_ITEMS, 900, "the large list never compared");
    });
    const spent = minus(await calls(stand, large.account), before);
    const changed = CHANGING.reduce((n, call) => n + (spent[call] ?? 0), 0);
    if (changed !== 0) throw new Error(`a list equal to what is wanted was changed: ${JSON.stringify(spent)}`);
    return {
      one,
      burst,
      compared: {
        items: COMPARED_ITEMS,
        pages: spent["GET /accounts/{account_id}/rules/lists/{list_id}/items"] ?? 0,
        calls: sum(spent),
        seconds: compared.seconds,
        growthMB: compared.growthMB,
        beforeMB: compared.beforeMB,
        seedSeconds,
        wasmBefore,
        wasmAfter: await wasm(),
      },
      limits: CLOUDFLARE_LIMITS,
    };
  } finally {
    await mf.dispose();
    stand.stop();
  }
}

export function cloudflareLines({ one, burst, compared, limits }) {
  const byCall = (c) => Object.entries(c.byCall).map(([call, n]) => `${n} × ${call}`).join(", ");
  const units = (c) => BILLABLE.map((f) => `${c.units[f]} ${f}`).join(", ");
  // Each change its own push, and the hourly look: one call each hour.
  const perDay = CHANGES_A_DAY * one.calls + 24;
  const changeRequests = CHANGES_A_DAY * CHANGING.reduce((n, call) => n + (one.byCall[call] ?? 0), 0);
  return [
    "The holder's own Cloudflare list (calls counted by the stand-in of Cloudflare's API; the service's units by the test build's meter):",
    "",
    "| change | Cloudflare calls | which | the service's billable units |",
    "|---|---:|---|---|",
    `| one add | ${one.calls} | ${byCall(one)} | ${units(one)} |`,
    `| 100 adds in a burst (one push) | ${burst.calls} | ${byCall(burst)} | ${units(burst)} |`,
    "",
    `A day of ${CHANGES_A_DAY} changes, each its own push, and 24 hourly looks: ${perDay} calls to the holder's account ` +
      `(${(perDay / 288).toFixed(1)} a 5 minutes on average against ${limits.requestsPerFiveMinutes}; the busiest 5 minutes of a push every 10 s: ${Math.ceil(300 / 10) * one.calls}); ` +
      `${changeRequests} requests changing items against ${limits.changeRequestsPer12Hours} in 12 hours, ${CHANGES_A_DAY} item changes against ${limits.itemChangesPer12Hours}. ` +
      `At ${CLOUDFLARE_HOLDERS} holders: ${(perDay * CLOUDFLARE_HOLDERS / 1e6).toFixed(2)} million calls a day from the service, each against its own holder's account. Limits: ${limits.requestsSource}; ${limits.listsSource}.`,
    "",
    `A full comparison of a ${compared.items}-item list (it holds what is wanted): ${compared.pages} pages in ${compared.calls} calls, ` +
      `${compared.seconds.toFixed(1)} s; the runtime grew ${compared.growthMB.toFixed(1)} MB (from ${compared.beforeMB.toFixed(1)} MB, started afresh on the seeded storage), ` +
      `the isolate's WebAssembly memory from ${(compared.wasmBefore / 2 ** 20).toFixed(1)} to ${(compared.wasmAfter / 2 ** 20).toFixed(1)} MiB (against an isolate's 128 MB); seeding the holder's ${compared.items} entries took ${compared.seedSeconds.toFixed(1)} s.`,
  ];
}
