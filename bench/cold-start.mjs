// What a module costs a cold start: workerd started on a worker that imports it
// and answers at once, timed from the process's start to its first answer, against
// the same worker with no module. Each module's starts are interleaved with the
// others', so that the machine's drift falls on all alike. The runtime compiles
// the module before the isolate answers; a Worker deployed as two would have each
// of its isolates compile only its half.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, copyFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, median, root } from "./lib.mjs";

const WORKERD = join(root, "node_modules/.bin/workerd");
const STARTS = Number(process.env.BENCH_COLD_STARTS ?? 40);

function config(port, wasm) {
  const modules = wasm
    ? `(name = "worker.js", esModule = embed "with-module.js"), (name = "m.wasm", wasm = embed "${wasm}")`
    : `(name = "worker.js", esModule = embed "without.js")`;
  return `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .w) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ]
);
const w :Workerd.Worker = (modules = [ ${modules} ], compatibilityDate = "2026-04-20");
`;
}

/** Milliseconds from workerd's start to its first answer. */
async function start(dir, name, port) {
  const began = performance.now();
  const child = spawn(WORKERD, ["serve", join(dir, `${name}.capnp`)], { stdio: "ignore" });
  try {
    for (;;) {
      const answered = await fetch(`http://127.0.0.1:${port}/`).then((r) => r.ok, () => false);
      if (answered) return performance.now() - began;
      if (performance.now() - began > 10_000) throw new Error(`workerd did not answer with ${name}`);
    }
  } finally {
    child.kill();
    await new Promise((resolve) => child.once("exit", resolve));
  }
}

/** Each module's cold start, median and least of STARTS, and the same less the
 *  start with no module: what compiling it costs. */
export async function coldStarts(modules) {
  const dir = mkdtempSync(join(tmpdir(), "cold-start-"));
  try {
    const port = await freePort();
    writeFileSync(join(dir, "without.js"), 'export default { fetch() { return new Response("ok"); } };\n');
    writeFileSync(join(dir, "with-module.js"), 'import m from "./m.wasm";\nexport default { fetch() { return new Response(String(m instanceof WebAssembly.Module)); } };\n');
    writeFileSync(join(dir, "none.capnp"), config(port));
    for (const [name, path] of Object.entries(modules)) {
      copyFileSync(join(root, path), join(dir, `${name}.wasm`));
      writeFileSync(join(dir, `${name}.capnp`), config(port, `${name}.wasm`));
    }
    const names = ["none", ...Object.keys(modules)];
    const times = Object.fromEntries(names.map((name) => [name, []]));
    for (let i = 0; i < STARTS; i++) for (const name of names) times[name].push(await start(dir, name, port));
    const none = median(times.none);
    return Object.fromEntries(names.map((name) => [name, { medianMs: median(times[name]), leastMs: Math.min(...times[name]), moduleMs: median(times[name]) - none }]));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
