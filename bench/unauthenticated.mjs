// `make bench`'s unauthenticated section: what a body costs the runtime before
// anyone is known (issue 56). Five gzip bombs (160 MiB of zeros, gzipped to
// about 160 KB: under a route's limit as sent) with a made-up credential,
// against five small bodies with the same credential, on each route that reads
// a body before it proves its caller: `POST /v1/usage-metrics` and
// `POST /v1/watchers/login`. What is measured is the CPU the runtime's process
// spent (user and system, from /proc) on each five, the answers' statuses with
// it: a bomb has to cost what a small body costs, not what inflating it would.

import { gzipSync } from "node:zlib";
import { SERVICE_VARS, serve } from "./lib.mjs";
import { cpuUs, runtimePid } from "./scale.mjs";

const FIVE = 5;
const bomb = gzipSync(Buffer.alloc(160 * 2 ** 20));
const routes = [
  ["/v1/usage-metrics", { Authorization: "Bearer made-up" }, JSON.stringify({ remediation_components: [] })],
  ["/v1/watchers/login", {}, JSON.stringify({ machine_id: "made-up", password: "made-up" })],
];

/** Five posts of `body`: their statuses, and the runtime's CPU seconds for the five. */
async function five(pid, url, headers, body) {
  const statuses = [];
  const before = cpuUs(pid);
  for (let n = 0; n < FIVE; n++) {
    const response = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json", ...headers }, body });
    await response.arrayBuffer();
    statuses.push(response.status);
  }
  return { statuses: [...new Set(statuses)], cpuSeconds: (cpuUs(pid) - before) / 1e6 };
}

export async function unauthenticated(state) {
  const { mf, url } = await serve(".", SERVICE_VARS, state);
  const pid = runtimePid();
  try {
    const rows = [];
    for (const [path, headers, small] of routes) {
      // The first request of a route compiles what it runs: not counted.
      await five(pid, url + path, headers, small);
      rows.push({ path, body: "small", bytes: small.length, ...(await five(pid, url + path, headers, small)) });
      rows.push({ path, body: "gzip bomb", bytes: bomb.length, ...(await five(pid, url + path, { ...headers, "Content-Encoding": "gzip" }, bomb)) });
    }
    return { rows };
  } finally {
    await mf.dispose();
  }
}

export function unauthenticatedLines({ rows }) {
  const lines = [
    `Bodies sent with a made-up credential, ${FIVE} of each in a row, one service (Miniflare): the runtime's CPU for the ${FIVE}`,
    "",
    "| route | body | bytes sent | answers | CPU s |",
    "|---|---|---:|---|---:|",
  ];
  for (const r of rows) lines.push(`| \`POST ${r.path}\` | ${r.body} | ${r.bytes} | ${r.statuses.join(", ")} | ${r.cpuSeconds.toFixed(3)} |`);
  return lines;
}
