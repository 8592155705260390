// `make bench`'s unauthenticated section: what a body costs the runtime before
// anyone is known (issue 56). Five gzip bombs with a made-up credential, each
// zeros gzipped to just under the route's limit as sent (so that the Worker
// reads it and inflates it until the limit), against five small bodies with the
// same credential, on each route that reads a body before it proves its caller:
// `POST /v1/usage-metrics` (256 KiB: 160 MiB of zeros, 163 KB gzipped) and
// `POST /v1/watchers/login` (64 KiB: 60 MiB, 61 KB gzipped). What is measured is
// the CPU the runtime's process spent (user and system, from /proc) on each
// five, the answers' statuses with it, after five of each unmeasured (the first
// request of a path compiles what it runs): a bomb has to cost what a small body
// costs, not what inflating it would.

import { gzipSync } from "node:zlib";
import { SERVICE_VARS, serve } from "./lib.mjs";
import { cpuUs, runtimePid } from "./scale.mjs";

const FIVE = 5;
const MiB = 2 ** 20;
const routes = [
  ["/v1/usage-metrics", { Authorization: "Bearer made-up" }, JSON.stringify({ remediation_components: [] }), 160 * MiB, 256 * 1024],
  ["/v1/watchers/login", {}, JSON.stringify({ machine_id: "made-up", password: "made-up" }), 60 * MiB, 64 * 1024],
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
    for (const [path, headers, small, zeros, limit] of routes) {
      const bomb = gzipSync(Buffer.alloc(zeros));
      if (bomb.length >= limit) throw new Error(`${path}: a bomb of ${bomb.length} bytes is not under the limit of ${limit}`);
      const gzipped = { ...headers, "Content-Encoding": "gzip" };
      await five(pid, url + path, headers, small);
      await five(pid, url + path, gzipped, bomb);
      rows.push({ path, body: "small", bytes: small.length, ...(await five(pid, url + path, headers, small)) });
      rows.push({ path, body: "gzip bomb", bytes: bomb.length, inflatesTo: zeros, ...(await five(pid, url + path, gzipped, bomb)) });
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
  for (const r of rows) lines.push(`| \`POST ${r.path}\` | ${r.body}${r.inflatesTo ? ` of ${r.inflatesTo / MiB} MiB of zeros` : ""} | ${r.bytes} | ${r.statuses.join(", ")} | ${r.cpuSeconds.toFixed(3)} |`);
  return lines;
}
