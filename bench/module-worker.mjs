// A built Worker as Miniflare serves it: the options wrangler makes of its
// configuration, its module (worker-build's output, whose wasm is imported
// compiled), and the settings given beside the configuration's. Shared by the
// benchmarks (bench/lib.mjs) and the end-to-end tests' servers
// (tests/api/serve.mjs), which load no wrangler of their own.

/** `workerOptions` (from wrangler's `unstable_getMiniflareWorkerOptions`) serving
 *  `scriptPath`, with `vars` over the configuration's and `own` over the rest. */
export function moduleWorker(workerOptions, scriptPath, vars = {}, own = {}) {
  return {
    ...workerOptions,
    ...own,
    scriptPath,
    modules: true,
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
    bindings: { ...workerOptions.bindings, ...vars },
  };
}
