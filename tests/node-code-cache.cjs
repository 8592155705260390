// Preloaded (`node --require`) into every server the tests start: V8's
// compiled code of wrangler's and Miniflare's bundles (16 MB of JavaScript) is kept
// in GREYLIST_CODE_CACHE and reused by the next start, which then skips most of a
// quarter second of compiling. The e2e suite starts some 150 servers on two cores.
// Node 22.1 and later do this themselves (`module.enableCompileCache`); Node 20
// needs the CommonJS loader's compile step wrapped, as v8-compile-cache does.
"use strict";
const Module = require("node:module");
const dir = process.env.GREYLIST_CODE_CACHE;

if (!dir) {
  // Nothing to keep the cache in: compile as usual.
} else if (typeof Module.enableCompileCache === "function") {
  Module.enableCompileCache(dir);
} else {
  const crypto = require("node:crypto");
  const fs = require("node:fs");
  const path = require("node:path");
  const vm = require("node:vm");
  // Only the bundles are worth it; small files compile faster than a cache reads.
  const LARGE = 1 << 20;
  const compile = Module.prototype._compile;
  Module.prototype._compile = function (content, filename, format) {
    // ES modules (Node 20.19 and later pass the format) compile as Node does.
    const commonjs = format === undefined || format === "commonjs";
    if (content.length < LARGE || !commonjs) return compile.apply(this, arguments);
    const digest = crypto.createHash("sha256").update(filename).update(content).digest("hex");
    const file = path.join(dir, `${digest}.v8`);
    let cachedData;
    try {
      cachedData = fs.readFileSync(file);
    } catch {}
    const script = new vm.Script(Module.wrap(content), {
      filename,
      cachedData,
      importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
    });
    if (cachedData === undefined || script.cachedDataRejected) {
      // After the start-up has run, so that the functions it compiled are kept too.
      setTimeout(() => {
        try {
          fs.mkdirSync(dir, { recursive: true });
          fs.writeFileSync(`${file}.${process.pid}`, script.createCachedData());
          fs.renameSync(`${file}.${process.pid}`, file);
        } catch {}
      }, 2000).unref();
    }
    const module = this;
    const require = (id) => module.require(id);
    require.resolve = (request, options) => Module._resolveFilename(request, module, false, options);
    require.resolve.paths = (request) => Module._resolveLookupPaths(request, module);
    require.main = process.mainModule;
    require.extensions = Module._extensions;
    require.cache = Module._cache;
    const wrapper = script.runInThisContext({ displayErrors: true });
    return wrapper.call(module.exports, module.exports, require, module, filename, path.dirname(filename));
  };
}
