// The global list at 10 000 000 entries: an import sent gzipped, timed, with the
// runtime's memory while the writer takes it in; then what the runtime holds while
// checks touch every shard, the operator's lookup of one address beside the
// status, and while eight agents pull `scope=all` across a new version. Part of `make bench` (run.mjs); alone: `node bench/ten-million.mjs`
// after `make build` (BENCH_TEN_MILLION sets the size).

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "node:http";
import { gzipSync } from "node:zlib";
import { ADMIN, SERVICE_VARS, dotted, globalAddress, globalImport, holder, median, post, serve, serviceStatus } from "./lib.mjs";
import { feedsAcrossAVersionChange, runtimePid, sampled } from "./scale.mjs";

export const TEN_MILLION = Number(process.env.BENCH_TEN_MILLION ?? 10_000_000);

// Ranges are /28s from 60.0.0.0: /24s apart would run into private space at this size.
const RANGES = { from: 60 * 2 ** 24, prefix: 28, step: 32 };

/** The address of the `i`th entry of the list in address order (singles come first). */
function nth(i) {
  const singles = TEN_MILLION - Math.floor(TEN_MILLION / 4);
  return i < singles ? globalAddress(i) : dotted(RANGES.from + RANGES.step * (i - singles));
}

/** A gzipped import with its length declared, as curl sends a file. (undici's
 *  fetch broke off uploads of this size to Miniflare with EPIPE.) */
function put(url, body) {
  const target = new URL(url);
  const headers = { Authorization: `Bearer ${ADMIN}`, "Content-Type": "text/plain", "Content-Encoding": "gzip", "Content-Length": body.length };
  return new Promise((resolve, reject) => {
    const sent = request({ host: target.hostname, port: target.port, path: target.pathname, method: "PUT", headers }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (part) => (text += part));
      response.on("end", () => resolve({ status: response.statusCode, text }));
    });
    sent.on("error", reject);
    sent.end(body);
  });
}

/** The median milliseconds of `count` operator GETs, each of `path(n)`. */
async function medianMs(url, count, path) {
  const times = [];
  for (let n = 0; n < count; n++) {
    const started = performance.now();
    const response = await fetch(`${url}${path(n)}`, { headers: { Authorization: `Bearer ${ADMIN}` } });
    const body = await response.text();
    if (response.status !== 200) throw new Error(`${path(n)}: ${response.status} ${body.slice(0, 200)}`);
    times.push(performance.now() - started);
  }
  return median(times);
}

const status = async (url) => (await serviceStatus(url)).globalList;

/** The rows of the 10 000 000-entry global list, on a runtime of its own. */
export async function tenMillion(state) {
  const { mf, url } = await serve(".", SERVICE_VARS, state);
  try {
    const agents = await Promise.all(Array.from({ length: 8 }, () => holder(url)));
    const pid = runtimePid();
    const text = globalImport(TEN_MILLION, RANGES);
    const gzipped = gzipSync(Buffer.from(text));
    console.error(`importing ${TEN_MILLION} global entries (${(text.length / 2 ** 20).toFixed(0)} MiB of text, ${(gzipped.length / 2 ** 20).toFixed(0)} MiB gzipped)…`);
    const imported = await sampled(pid, async () => {
      const { status: code, text: answer } = await put(`${url}/admin/global-list`, gzipped);
      if (code !== 200) throw new Error(`PUT of ${TEN_MILLION}: ${code} ${answer.slice(0, 300)}`);
      return JSON.parse(answer);
    });
    const list = await status(url);
    // Checks spread over the list twice as densely as its shards: each shard holds
    // one at least, and the isolate then holds the whole snapshot.
    const probes = 2 * list.shards;
    const checked = await sampled(pid, async () => {
      for (let n = 0; n < probes; n++) {
        const ip = nth(Math.floor(((TEN_MILLION - 1) * n) / (probes - 1)));
        const { text: answer } = await post(url, "/api/checkIpOnGreylist", { token: agents[0].token, form: { ip } });
        if (!answer.endsWith("is on global greylist")) throw new Error(`check of ${ip}: ${answer}`);
      }
    });
    // "Why is this address listed?" asks the writer, which reads the chunks whose
    // span reaches the address (one here); the status asks the writer and the
    // directory, and reads nothing of the list.
    const lookups = 41;
    const lookupMs = await medianMs(url, lookups, (n) => `/admin/lookup?ip=${nth(Math.floor(((TEN_MILLION - 1) * n) / (lookups - 1)))}`);
    const statusMs = await medianMs(url, lookups, () => "/admin/status");
    console.error("8 scope=all feeds at a time across a new version of the 10 000 000-entry list…");
    // The list is full: the new version is one entry fewer.
    const gone = globalAddress(1000);
    const across = await feedsAcrossAVersionChange(url, pid, agents.map((a) => a.token), gone, { removed: true });
    const edited = await status(url);
    return {
      entries: list.entries,
      shards: list.shards,
      snapshotBytes: list.snapshotBytes,
      textBytes: text.length,
      gzipBytes: gzipped.length,
      import: { seconds: imported.seconds, beforeMB: imported.beforeMB, growthMB: imported.growthMB },
      checks: { probes, beforeMB: checked.beforeMB, growthMB: checked.growthMB },
      lookup: { medianMs: lookupMs, statusMedianMs: statusMs, ratio: lookupMs / statusMs },
      feedsAcrossVersion: across,
      edit: { shards: edited.shards, shardsWritten: edited.shardsWritten },
    };
  } finally {
    await mf.dispose();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const state = mkdtempSync(join(tmpdir(), "greylist-ten-million-"));
  try {
    console.log(JSON.stringify(await tenMillion(state), null, 2));
  } finally {
    rmSync(state, { recursive: true, force: true });
  }
}
