// CrowdSec's own Local API and this service, driven by the same wrk script with
// the same requests: a bouncer's live-mode lookup of an unlisted and of a listed
// address, and a stream pull with nothing new since the last. CrowdSec holds 1 000
// decisions in its SQLite database; the service's tokens (scope all) see a list of
// 10 personal entries and an empty global list, since neither lookup nor an empty
// pull grows with the list. The service allows 120 pulls a minute per token, so
// its load spreads over 1 000 tokens (20 for each of 50 holders); CrowdSec has no
// such limit and takes one key.

import { join } from "node:path";
import { CONNECTIONS, SERVICE_VARS, dotted, holder, post, pool, serve, wrk } from "./lib.mjs";
import { startCrowdsec } from "./crowdsec.mjs";

const HOLDERS = 50;
const TOKENS_EACH = 20;
// Apart from load.lua's 20.x addresses: 30.0.0.0 onwards.
const listed = (n) => dotted(30 * 2 ** 24 + n);
const UNLISTED = "20.250.0.1";

export const SCENARIOS = [
  ["live mode, unlisted address", `/v1/decisions?ip=${UNLISTED}`],
  ["live mode, listed address", `/v1/decisions?ip=${listed(7)}`],
  ["stream pull, nothing new", "/v1/decisions/stream"],
];

export async function sideBySide(state) {
  const service = await serve(".", SERVICE_VARS, join(state, "side-service"));
  let crowdsec;
  try {
    const keys = [];
    await pool(HOLDERS, 8, async () => {
      const { token } = await holder(service.url);
      for (let n = 0; n < 10; n++) await post(service.url, "/api/addIpToGreylist", { token, form: { ip: listed(n) } });
      for (let t = 0; t < TOKENS_EACH; t++) {
        const made = await post(service.url, "/api/feedTokens", { token, json: { scope: "all" } });
        keys.push(JSON.parse(made.text).feedToken);
      }
    });
    crowdsec = await startCrowdsec(join(state, "crowdsec"), { decisions: Array.from({ length: 1000 }, (_, n) => listed(n)) });
    // Every key's first pull is its whole list; the pulls measured have nothing new.
    const startup = (url, key) => fetch(`${url}/v1/decisions/stream?startup=true`, { headers: { "X-Api-Key": key } }).then((r) => r.text());
    await pool(keys.length, 8, (n) => startup(service.url, keys[n]));
    await startup(crowdsec.url, crowdsec.key);
    for (const [name, path] of SCENARIOS) {
      const [ours, theirs] = await Promise.all([
        fetch(service.url + path, { headers: { "X-Api-Key": keys[0] } }).then((r) => r.text()),
        fetch(crowdsec.url + path, { headers: { "X-Api-Key": crowdsec.key } }).then((r) => r.text()),
      ]);
      // Both answer alike: nothing (null, or nothing new), or a ban of the address.
      const listedAnswer = (text) => text.includes(`"value":"${listed(7)}"`);
      const alike = name.includes("listed address") && !name.includes("unlisted") ? listedAnswer(ours) && listedAnswer(theirs) : !listedAnswer(ours) && !listedAnswer(theirs);
      if (!alike) throw new Error(`${name}: the service answered ${ours.slice(0, 200)}, CrowdSec ${theirs.slice(0, 200)}`);
    }
    const rows = [];
    for (const [name, path] of SCENARIOS) {
      for (const connections of [1, CONNECTIONS]) {
        const row = { name, connections };
        for (const [label, url, apiKeys] of [
          ["crowdsec", crowdsec.url, [crowdsec.key]],
          ["miniflare", service.url, keys],
          ["workerd", service.direct, keys],
        ]) {
          // Errors are counted and shown beside the row, as in the service's tables.
          row[label] = await wrk(url + path, { BENCH_PATH: path, BENCH_API_KEYS: apiKeys.join(",") }, connections);
        }
        rows.push(row);
      }
    }
    return { rows };
  } finally {
    await crowdsec?.stop();
    await service.mf.dispose();
  }
}
