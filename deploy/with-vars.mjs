// A Worker's configuration with variables set, written as another file:
// `wrangler dev`'s `--var` reaches only the first Worker it serves, and the
// management Worker reads the same settings as the edge. Its module is named by
// its whole path, so the copy may live anywhere; wrangler reads the `.dev.vars`
// beside the copy, whose values win over these (`make dev` writes the copy
// beside the original, the tests in a folder of their own, with none).
// Usage: node deploy/with-vars.mjs <configuration> <copy> [NAME=VALUE...]

import { readFileSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";

const [from, to, ...pairs] = process.argv.slice(2);
const config = JSON.parse(readFileSync(from, "utf8"));
config.main = resolve(dirname(from), config.main);
for (const pair of pairs) {
  const at = pair.indexOf("=");
  if (at < 1) throw new Error(`${pair}: a variable is NAME=VALUE`);
  config.vars = { ...config.vars, [pair.slice(0, at)]: pair.slice(at + 1) };
}
writeFileSync(to, `${JSON.stringify(config, null, 2)}\n`);
