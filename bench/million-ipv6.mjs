// The global list with 1 000 000 IPv6 addresses beside its IPv4 entries: what
// the writer takes in and what one isolate holds once checks touched every IPv6
// shard (16 bytes an address). Part of `make bench` (run.mjs); alone:
// `node bench/million-ipv6.mjs` after `make build` (BENCH_IPV6 sets the count).

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { ADMIN, SERVICE_VARS, holder, post, serve, serviceStatus } from "./lib.mjs";
import { runtimePid, sampled } from "./scale.mjs";

export const IPV6_ENTRIES = Number(process.env.BENCH_IPV6 ?? 1_000_000);

/** The `n`th address: 2a0b:4140::/32 and on, two apart, so that none merge. */
function nth(n) {
  const value = (0x2a0b4140n << 96n) + 2n * BigInt(n);
  const groups = [];
  for (let shift = 112n; shift >= 0n; shift -= 16n) groups.push(((value >> shift) & 0xffffn).toString(16));
  return groups.join(":");
}

const status = async (url) => (await serviceStatus(url)).globalList;

export async function millionIpv6(state) {
  const { mf, url } = await serve(".", SERVICE_VARS, state);
  try {
    const { token } = await holder(url);
    const pid = runtimePid();
    const lines = ["46.0.0.0/24"];
    for (let n = 0; n < IPV6_ENTRIES; n++) lines.push(nth(n));
    const gzipped = gzipSync(Buffer.from(lines.join("\n") + "\n"));
    console.error(`importing ${IPV6_ENTRIES} IPv6 global addresses…`);
    const imported = await sampled(pid, async () => {
      const answer = await fetch(`${url}/admin/global-list`, {
        method: "PUT",
        headers: { Authorization: `Bearer ${ADMIN}`, "Content-Type": "text/plain", "Content-Encoding": "gzip" },
        body: gzipped,
      });
      const text = await answer.text();
      if (answer.status !== 200) throw new Error(`PUT of ${IPV6_ENTRIES} IPv6 addresses: ${answer.status} ${text.slice(0, 300)}`);
    });
    const list = await status(url);
    // Twice as many checks as shards, spread over the addresses: every IPv6 shard is loaded.
    const probes = 2 * list.shards;
    const checked = await sampled(pid, async () => {
      for (let n = 0; n < probes; n++) {
        const ip = nth(Math.floor(((IPV6_ENTRIES - 1) * n) / (probes - 1)));
        const { text: answer } = await post(url, "/api/checkIpOnGreylist", { token, form: { ip } });
        if (!answer.endsWith("is on global greylist")) throw new Error(`check of ${ip}: ${answer}`);
      }
    });
    return {
      entries: list.entries,
      shards: list.shards,
      snapshotBytes: list.snapshotBytes,
      import: { seconds: imported.seconds, growthMB: imported.growthMB },
      checks: { probes, beforeMB: checked.beforeMB, growthMB: checked.growthMB },
    };
  } finally {
    await mf.dispose();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const state = mkdtempSync(join(tmpdir(), "greylist-million-ipv6-"));
  try {
    console.log(JSON.stringify(await millionIpv6(state), null, 2));
  } finally {
    rmSync(state, { recursive: true, force: true });
  }
}
