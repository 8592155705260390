// A merged feed (`aggregate=1`) beside the whole one: a `scope=all` text pull of
// a global list of BENCH_MERGED (1 000 000) entries, its time, bytes, lines and
// the runtime's resident growth (workerd's VmRSS against just before). Twice,
// each on a fresh runtime: the bench's usual import alone, where nothing touches
// (addresses two apart, /24s 512 apart: what merging costs); and the same with
// a holder's BENCH_MERGED_PERSONAL (100 000) addresses in a row, which merge
// (what merging saves: the operator's list is kept merged already, so a whole
// feed's consecutive entries are a holder's). Beside them, the same feed cut to
// BENCH_CUT (10 000) items (`maxItems`), whole and merged: a cut is counted
// first, so it reads the list more than once. Part of `make bench` (run.mjs);
// alone: `BENCH_ONLY=merged-feeds make bench`.

import { join } from "node:path";
import { ADMIN, SERVICE_VARS, globalImport, holder, post, seeded, serve } from "./lib.mjs";
import { feed, runtimePid, sampled } from "./scale.mjs";

export const MERGED_ENTRIES = Number(process.env.BENCH_MERGED ?? 1_000_000);
export const MERGED_PERSONAL = Number(process.env.BENCH_MERGED_PERSONAL ?? 100_000);
export const CUT = Number(process.env.BENCH_CUT ?? 10_000);

/** Adds `count` addresses in a row from 100.128.0.0 (`seeded`) to a holder's list, a bulk request of 1 000 at a time. */
async function consecutive(url, token, count) {
  for (let first = 0; first < count; first += 1000) {
    const ips = Array.from({ length: Math.min(1000, count - first) }, (_, n) => seeded(first + n));
    const added = await post(url, "/api/addIpsToGreylist?result_mode=json", { token, text: ips.join("\n") });
    if (JSON.parse(added.text).counts.added !== ips.length) throw new Error(`adding: ${added.text.slice(0, 200)}`);
  }
}

async function pulls(state, personal, shape) {
  const { mf, url } = await serve(".", SERVICE_VARS, state);
  try {
    const put = await post(url, "/admin/global-list", { token: ADMIN, method: "PUT", text: globalImport(MERGED_ENTRIES) });
    if (put.status !== 200) throw new Error(`PUT /admin/global-list: ${put.status} ${put.text}`);
    const { token } = await holder(url);
    await consecutive(url, token, personal);
    const pid = runtimePid();
    // The first pull loads the list's snapshot into the isolate: not measured.
    await feed(url, token, "scope=all");
    const measure = async (query) => {
      const { value, seconds, growthMB } = await sampled(pid, () => feed(url, token, query));
      const lines = value.split("\n").filter((line) => line && !line.startsWith("#")).length;
      return { seconds, growthMB, bytes: Buffer.byteLength(value), lines };
    };
    return {
      shape,
      whole: await measure("scope=all"),
      merged: await measure("scope=all&aggregate=1"),
      cut: await measure(`scope=all&maxItems=${CUT}`),
      mergedCut: await measure(`scope=all&aggregate=1&maxItems=${CUT}`),
    };
  } finally {
    await mf.dispose();
  }
}

export async function mergedFeeds(state) {
  return {
    entries: MERGED_ENTRIES,
    apart: await pulls(join(state, "apart"), 0, "the global list alone: nothing touches"),
    touching: await pulls(join(state, "touching"), MERGED_PERSONAL, `and ${MERGED_PERSONAL} personal addresses in a row`),
  };
}

export function mergedFeedsLines({ entries, apart, touching }) {
  const rows = (run) =>
    [["whole", run.whole], ["merged", run.merged], [`cut to ${CUT}`, run.cut], [`merged, cut to ${CUT}`, run.mergedCut]]
      .filter(([, pull]) => pull)
      .map(
      ([name, pull]) =>
        `| ${run.shape} | ${name} | ${pull.lines} | ${(pull.bytes / 2 ** 20).toFixed(1)} | ${pull.seconds.toFixed(2)} | ${pull.growthMB.toFixed(1)} |`,
    );
  return [
    `A merged \`scope=all\` text feed beside the whole one (${entries} global entries, each list on a fresh runtime, after a first pull that loads it):`,
    "",
    "| list | pull | lines | MiB | s | runtime's growth, MB |",
    "|---|---|---:|---:|---:|---:|",
    ...rows(apart),
    ...rows(touching),
    "",
    `Merged, the feed where nothing touches took ${(apart.merged.seconds / apart.whole.seconds).toFixed(2)} × the whole pull's time; with the holder's addresses in a row, ${(touching.merged.seconds / touching.whole.seconds).toFixed(2)} × the time and ${(touching.merged.bytes / touching.whole.bytes).toFixed(2)} × the bytes.`,
    ...(touching.mergedCut
      ? [
          "",
          `Cut to ${CUT} and merged, with the holder's addresses in a row: ${(touching.mergedCut.seconds / touching.whole.seconds).toFixed(2)} × the whole pull's time, the runtime growing ${touching.mergedCut.growthMB.toFixed(1)} MB against the whole pull's ${touching.whole.growthMB.toFixed(1)} MB; cut alone, ${(touching.cut.seconds / touching.whole.seconds).toFixed(2)} × the time.`,
        ]
      : []),
  ];
}
