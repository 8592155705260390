// A Worker's configuration with variables set, written as another file beside
// it (so that its relative paths and its .dev.vars still hold): `wrangler dev`'s
// `--var` reaches only the first Worker it serves, and the management Worker
// reads the same settings as the edge.
// Usage: node deploy/with-vars.mjs <configuration> <copy> [NAME=VALUE...]

import { readFileSync, writeFileSync } from "node:fs";

const [from, to, ...pairs] = process.argv.slice(2);
const config = JSON.parse(readFileSync(from, "utf8"));
for (const pair of pairs) {
  const at = pair.indexOf("=");
  if (at < 1) throw new Error(`${pair}: a variable is NAME=VALUE`);
  config.vars = { ...config.vars, [pair.slice(0, at)]: pair.slice(at + 1) };
}
writeFileSync(to, `${JSON.stringify(config, null, 2)}\n`);
