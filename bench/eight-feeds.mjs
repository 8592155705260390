// What a feed costs the runtime beyond the page it sends: one agent, then eight
// at once, pulling the whole `scope=all` feed of a global list of
// BENCH_EIGHT_FEEDS (2 000 000) entries across an operator's edit, each count on
// a fresh runtime. Memory is the runtime's resident size (workerd's VmRSS, every
// isolate and object in one process) against what it was just before, beside
// the size of the list's snapshot an isolate holds once it has loaded it all
// (from `/admin/status`, which the management Worker answers: its isolate's
// memory is not the edge's that served the feeds). Part of `make bench` (run.mjs); alone:
// `node bench/eight-feeds.mjs` after `make build`.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ADMIN, SERVICE_VARS, globalImport, holder, post, serve, serviceStatus } from "./lib.mjs";
import { feedsAcrossAVersionChange, runtimePid } from "./scale.mjs";

export const EIGHT_FEEDS_ENTRIES = Number(process.env.BENCH_EIGHT_FEEDS ?? 2_000_000);

/** `agents` pulling at once across a version change, on a runtime of its own. */
async function across(state, agents) {
  const { mf, url } = await serve(".", SERVICE_VARS, state);
  try {
    const put = await post(url, "/admin/global-list", { token: ADMIN, method: "PUT", text: globalImport(EIGHT_FEEDS_ENTRIES) });
    if (put.status !== 200) throw new Error(`PUT /admin/global-list: ${put.status} ${put.text}`);
    const tokens = [];
    for (let n = 0; n < agents; n++) tokens.push((await holder(url)).token);
    const run = await feedsAcrossAVersionChange(url, runtimePid(), tokens, "44.0.0.1");
    const after = await serviceStatus(url);
    return { agents, ...run, snapshotBytes: after.globalList.snapshotBytes };
  } finally {
    await mf.dispose();
  }
}

export async function eightFeeds(state) {
  return { entries: EIGHT_FEEDS_ENTRIES, one: await across(join(state, "one"), 1), eight: await across(join(state, "eight"), 8) };
}

export function eightFeedsLines({ entries, one, eight }) {
  const row = (run) =>
    `| ${run.agents} | ${run.feeds} | ${run.seconds.toFixed(1)} | ${run.growthMB.toFixed(1)} | ${(run.snapshotBytes / 2 ** 20).toFixed(1)} |`;
  return [
    `Eight feeds against one (${entries} global entries, \`scope=all\` across an edit, each on a fresh runtime):`,
    "",
    "| agents | feeds | s | runtime's growth, MB | the list's snapshot, MiB |",
    "|---:|---:|---:|---:|---:|",
    row(one),
    row(eight),
    "",
    `Eight grew the runtime ${(eight.growthMB / one.growthMB).toFixed(2)} × what one did.`,
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const state = mkdtempSync(join(tmpdir(), "greylist-eight-feeds-"));
  try {
    console.log(eightFeedsLines(await eightFeeds(state)).join("\n"));
  } finally {
    rmSync(state, { recursive: true, force: true });
  }
}
