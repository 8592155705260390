// The service deploys as three Workers, all read from the one wrangler.toml: the
// objects' Worker (the Durable Objects, under the configuration's own name, where
// their data lives), the edge (the HTTP service, `<name>-edge`, which calls them
// across Workers and takes the routes, the assets and the rate limits) and the
// management Worker (`<name>-manage`: the operator's API, a holder's management
// routes, the logins and CrowdSec's usage reports, which the edge forwards to it
// through a service binding, counted first). A
// request's cold start compiles only the edge's module. This writes each one's
// configuration beside its module: build/objects/wrangler.json,
// build/manage/wrangler.json and build/edge/wrangler.json, which `make dev`,
// `make deploy` and the contract run serve. What the file says applies to all
// three but for what only one of them uses.

import { writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { experimental_readRawConfig } from "wrangler";

const root = fileURLToPath(new URL("..", import.meta.url));
/** Where the three Workers' folders are: `make build`'s DEPLOYABLE (build/). */
const deployable = process.argv[2] ?? "build";
const { rawConfig: config } = experimental_readRawConfig({ config: join(root, "wrangler.toml") });

/** What only the edge uses (it answers requests), and what only the objects do. */
const EDGE_ONLY = ["assets", "ratelimits", "route", "routes"];
const OBJECTS_ONLY = ["migrations"];
/** What each Worker's configuration says for itself. */
const OWN = ["name", "main", "build"];
/** What the edge's build says when a deploy runs it: `make deploy-check` looks for it. */
const UNBUILT = "the edge as make built it, with no build of its own";

const shared = Object.fromEntries(
  Object.entries(config).filter(([key]) => ![...EDGE_ONLY, ...OBJECTS_ONLY, ...OWN].includes(key)),
);
const only = (keys) => Object.fromEntries(keys.filter((key) => key in config).map((key) => [key, config[key]]));

/** A path of wrangler.toml's (relative to the repository) as one from the edge's folder. */
const fromEdge = (path) => relative(join(root, deployable, "edge"), join(root, path));

function write(half, worker) {
  const folder = join(deployable, half);
  writeFileSync(join(root, folder, "wrangler.json"), `${JSON.stringify(worker, null, 2)}\n`);
}

write("objects", {
  ...shared,
  ...only(OBJECTS_ONLY),
  name: config.name,
  main: "index.js",
});

/** The objects' bindings as another Worker holds them: in the objects' Worker. */
const durable_objects = {
  bindings: config.durable_objects.bindings.map((binding) => ({ ...binding, script_name: config.name })),
};

// The management Worker has no route and no address of its own, not even a
// preview one (only the edge reaches it, through its binding), and counts
// nothing: the edge counted what it forwards (src/http/manage.rs).
const manage = `${config.name}-manage`;
write("manage", { ...shared, name: manage, main: "index.js", preview_urls: false, durable_objects });

const edge = {
  ...shared,
  ...only(EDGE_ONLY),
  name: `${config.name}-edge`,
  main: "index.js",
  durable_objects,
  services: [{ binding: "MANAGE", service: manage }],
};
if (edge.assets) edge.assets = { ...edge.assets, directory: fromEdge(edge.assets.directory) };
// `wrangler dev` builds the three Workers again when the sources change (wrangler.toml's
// own build command refuses, so that a bare `wrangler deploy` uploads nothing).
// A deploy builds nothing: it uploads the edge `make deploy` built with the
// objects it uploaded a step before, even when the sources changed in between
// (wrangler names its command in WRANGLER_COMMAND). wrangler runs the command
// from where it was started, not from the file's folder: the paths are this
// clone's own.
edge.build = {
  command: `if [ "$WRANGLER_COMMAND" = dev ]; then make --no-print-directory build; else echo "${UNBUILT}"; fi`,
  cwd: root,
  watch_dir: ["src", "Cargo.toml", "Cargo.lock"].map((path) => join(root, path)),
};
write("edge", edge);
