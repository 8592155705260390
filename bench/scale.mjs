// The rows of `make bench` about size: what the runtime holds while feeds of a
// large global list meet its new version, what one operator edit costs each agent
// in bytes, and what a feed of a large personal list takes in time and memory.
// Memory is the runtime's resident size (workerd's VmRSS), sampled while the
// requests run, against what it was just before.

import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { Agent } from "undici";
import { ADMIN, post, pool } from "./lib.mjs";

// Each pull on a connection of its own, as an agent's run makes it. Reused
// keep-alive connections would measure a race of this client's instead: Miniflare
// closes a connection after a long streamed answer, and undici, unlike Go's
// client (CrowdSec's bouncers), does not retry a request it sent on one.
const agents = new Agent({ pipelining: 0 });

/** The workerd process this Node process started last. */
export function runtimePid() {
  let found;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const status = readFileSync(`/proc/${entry}/status`, "utf8");
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (Number(/PPid:\s+(\d+)/.exec(status)[1]) === process.pid && cmdline.includes("workerd")) {
        found = Math.max(found ?? 0, Number(entry));
      }
    } catch {
      // The process ended while the folder was read.
    }
  }
  if (!found) throw new Error("no workerd process under this one");
  return found;
}

/** The µs in one of the clock ticks /proc counts a process's time in. */
const TICK_US = 1e6 / Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }));

/** The CPU, in µs, that a process has spent, user and system. */
export function cpuUs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

const resident = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) * 1024;

/** The runtime's resident size before `job` and at its peak while `job` ran, with `job`'s answer and seconds. */
export async function sampled(pid, job) {
  const before = resident(pid);
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, resident(pid))), 20);
  const started = performance.now();
  try {
    const value = await job();
    return { value, seconds: (performance.now() - started) / 1000, beforeMB: before / 2 ** 20, growthMB: (peak - before) / 2 ** 20 };
  } finally {
    clearInterval(timer);
  }
}

/** A whole feed's text; a feed cut off throws, with the bytes that came first. */
export async function feed(url, token, query) {
  const chunks = [];
  let received = 0;
  try {
    const response = await fetch(`${url}/api/greylistFeed?${query}`, { headers: { Authorization: `Bearer ${token}` }, dispatcher: agents });
    for await (const chunk of response.body) {
      chunks.push(chunk);
      received += chunk.length;
    }
    const text = Buffer.concat(chunks).toString("utf8");
    if (response.status !== 200) throw new Error(`feed ${query}: ${response.status} ${text.slice(0, 200)}`);
    return text;
  } catch (error) {
    throw Object.assign(new Error(`feed ${query} cut off after ${received} bytes: ${error.cause?.code ?? error.message}`), { received });
  }
}

const bytes = (text) => Buffer.byteLength(text);

const second = () => new Promise((resolve) => setTimeout(resolve, 1000));

/** Eight agents (one a token) pulling the whole global list, each again a second
 *  after its last pull, until each has seen the version `edit` made (the isolate
 *  reads the manifest again within CACHE_SECONDS): the address `marker` added, or
 *  with `{ removed: true }` gone. */
export async function feedsAcrossAVersionChange(url, pid, tokens, marker, { removed = false } = {}) {
  const json = removed ? { remove: [marker] } : { add: [marker] };
  const edit = await post(url, "/admin/global-list", { token: ADMIN, json });
  if (edit.status !== 200) throw new Error(`global edit: ${edit.status} ${edit.text}`);
  let feeds = 0;
  const { seconds, beforeMB, growthMB } = await sampled(pid, () =>
    Promise.all(
      tokens.map(async (token) => {
        for (;;) {
          const text = await feed(url, token, "scope=all");
          feeds++;
          if (text.includes(`\n${marker}\n`) !== removed) return;
          await second();
        }
      }),
    ),
  );
  return { feeds, seconds, beforeMB, growthMB };
}

/** The bytes of a `scope=all` delta after one edit of `list`, beside the whole feed's. */
export async function bytesPerEdit(url, token, list, edit) {
  const whole = await feed(url, token, "scope=all&format=json");
  const cursor = JSON.parse(whole).cursor;
  const answer = await post(url, `/admin/${list}`, { token: ADMIN, json: edit });
  if (answer.status !== 200) throw new Error(`${list} edit: ${answer.status} ${answer.text}`);
  for (;;) {
    const delta = await feed(url, token, `scope=all&format=json&since=${cursor}`);
    const parsed = JSON.parse(delta);
    if (parsed.reset) throw new Error(`the ${list} edit reset the feed`);
    if (parsed.cursor !== cursor) return { wholeBytes: bytes(whole), deltaBytes: bytes(delta), items: parsed.deleted.length + parsed.new.length };
    await second();
  }
}

/** Adds `count` addresses from `first` with a 255-character comment of control characters, 1000 a request. */
export async function seedCommented(url, token, count, address) {
  const comment = "\u0001".repeat(255);
  await pool(Math.ceil(count / 1000), 4, async (batch) => {
    const ips = [];
    for (let n = batch * 1000; n < Math.min(count, (batch + 1) * 1000); n++) ips.push(address(n));
    const { status, text } = await post(url, "/api/addIpsToGreylist?result_mode=json", { token, json: { ips, comment } });
    if (status !== 200 || JSON.parse(text).counts.added !== ips.length) throw new Error(`seeding: ${status} ${text.slice(0, 200)}`);
  });
}

/** One whole personal feed in `format`: seconds, bytes and the runtime's growth, or
 *  where it was cut off (reported, not hidden). */
export async function personalFeed(url, pid, token, format) {
  let received = 0;
  const { value, seconds, beforeMB, growthMB } = await sampled(pid, async () => {
    try {
      return { text: await feed(url, token, `format=${format}`) };
    } catch (error) {
      received = error.received ?? 0;
      return { error: error.message };
    }
  });
  return { seconds, bytes: value.text ? bytes(value.text) : received, error: value.error, beforeMB, growthMB };
}
