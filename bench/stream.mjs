// What a CrowdSec bouncer's pull costs: with nothing new (the common case, a
// bouncer pulling every 10 s), and with 1 000 new entries since its last pull.
// Tokens of scope personal, so the global list's size is not part of it.
import { post } from "./lib.mjs";

const NOTHING_NEW = '{"deleted":[],"new":[]}';
/** Pulls with nothing new, spread over the holder's tokens (each may pull 120 times a minute). */
const QUIET_PULLS = 400;
const TOKENS = 20;
const ROUNDS = 5;
const NEW_ENTRIES = 1000;

async function pull(url, key, query) {
  const begun = performance.now();
  const response = await fetch(`${url}/v1/decisions/stream?${query}`, { headers: { "X-Api-Key": key } });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`pull: ${response.status} ${text}`);
  return { ms: performance.now() - begun, text };
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];

/** `accessToken` is a holder's; its list gets 1 000 new addresses a round, from `first` on. */
export async function streamPulls(url, accessToken, first) {
  const keys = [];
  for (let i = 0; i < TOKENS; i += 1) {
    const made = await post(url, "/api/feedTokens", { token: accessToken, json: { scope: "personal" } });
    keys.push(JSON.parse(made.text).feedToken);
  }
  for (const key of keys) await pull(url, key, "startup=true");
  const quiet = [];
  for (let i = 0; i < QUIET_PULLS; i += 1) {
    const { ms, text } = await pull(url, keys[i % TOKENS], "");
    if (text !== NOTHING_NEW) throw new Error(`a pull with nothing new answered ${text.slice(0, 200)}`);
    quiet.push(ms);
  }
  quiet.sort((a, b) => a - b);
  const fresh = [];
  let bytes = 0;
  for (let round = 0; round < ROUNDS; round += 1) {
    const ips = Array.from({ length: NEW_ENTRIES }, (_, n) => {
      const value = first + round * NEW_ENTRIES + n;
      return `${value >>> 24}.${(value >>> 16) & 255}.${(value >>> 8) & 255}.${value & 255}`;
    });
    const added = await post(url, "/api/addIpsToGreylist?result_mode=json", { token: accessToken, json: { ips } });
    if (JSON.parse(added.text).counts.added !== NEW_ENTRIES) throw new Error(`adding: ${added.text.slice(0, 200)}`);
    const { ms, text } = await pull(url, keys[0], "");
    const answer = JSON.parse(text);
    if (answer.new.length !== NEW_ENTRIES) throw new Error(`a pull after ${NEW_ENTRIES} adds had ${answer.new.length}`);
    fresh.push(ms);
    bytes = text.length;
  }
  fresh.sort((a, b) => a - b);
  return {
    quietPulls: QUIET_PULLS,
    quietP50: percentile(quiet, 0.5),
    quietP99: percentile(quiet, 0.99),
    newEntries: NEW_ENTRIES,
    newP50: percentile(fresh, 0.5),
    newBytes: bytes,
  };
}
