// One end-to-end test's server (tests/api/helpers.rs starts some 150 a run): the
// test build on Miniflare, as `wrangler dev` serves it (the same options, from
// wrangler's own reading of the configuration, and its state's layout), without
// wrangler's proxy in front or wrangler's 16 MB of JavaScript loaded at each start.
//
//   node serve.mjs CONFIG STATE VARS_JSON
//
// CONFIG is a wrangler configuration; the Miniflare options wrangler makes of it
// are kept beside it (CONFIG.miniflare.json), so that the servers of a
// configuration that start once they are there load no wrangler. STATE is the folder `wrangler dev --persist-to`
// would be given. Prints `ready on <url>` once the Worker answers there; the
// runtime's output follows, for the tests that read the log.
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { moduleWorker } from "../../bench/module-worker.mjs";

// The bundles are CommonJS: `require` loads them as they are, where `import`
// first scans Miniflare's 16 MB for its names (cjs-module-lexer) and its format,
// about half of a server's start (1.55 s of CPU on these machines with
// `import`, 0.87 with `require`, the start measured whole).
const require = createRequire(import.meta.url);
const [config, state, vars] = process.argv.slice(2);
const kept = `${config}.miniflare.json`;
let options;
if (existsSync(kept)) {
  options = JSON.parse(readFileSync(kept, "utf8"));
} else {
  const { unstable_getMiniflareWorkerOptions } = require("wrangler");
  const { workerOptions, main } = unstable_getMiniflareWorkerOptions(config);
  options = { workerOptions, main };
  // Written whole or not at all: servers of one configuration start at once.
  const partial = `${kept}.${process.pid}`;
  writeFileSync(partial, JSON.stringify(options));
  renameSync(partial, kept);
}

const { Miniflare } = require("miniflare");
const { workerOptions, main } = options;
const mf = new Miniflare({
  workers: [
    {
      ...moduleWorker(workerOptions, main, JSON.parse(vars)),
      // The name wrangler.toml gives the Worker (wrangler leaves it out of the
      // options): the Durable Objects' state folders are named by it, and the
      // tests that prepare state (an upgrade's) look there.
      name: "greylist",
    },
  ],
  // `--persist-to STATE`'s layout: a server started on state an earlier one left
  // (a restart, an upgrade's test) finds it where wrangler put it.
  defaultPersistRoot: join(state, "v3"),
  host: "127.0.0.1",
  port: 0,
  handleRuntimeStdio: (stdout, stderr) => {
    stdout.pipe(process.stdout);
    stderr.pipe(process.stderr);
  },
});
const url = await mf.ready;
console.log(`ready on ${url.toString().replace(/\/$/, "")}`);
