// CrowdSec's own Local API (Debian's crowdsec 1.4.6, unpacked by the Makefile into its
// tools folder), run alone beside the service so that wrk measures both the same way.

import { execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "./lib.mjs";

/** Where the Makefile unpacked the pinned package's binaries. */
const CROWDSEC_BIN = process.env.CROWDSEC_BIN ?? "";
const CROWDSEC = join(CROWDSEC_BIN, "crowdsec");
const CSCLI = join(CROWDSEC_BIN, "cscli");
const READY_MS = 30_000;
const STOP_MS = 10_000;

/** Everything under `folder`: without its own paths, cscli and the LAPI read
 *  /etc/crowdsec and write /var/lib/crowdsec. */
function config(folder, port) {
  return `common:
  daemonize: false
  log_media: stdout
  log_level: info
  working_dir: ${folder}
# cscli refuses to run without config_paths and a data_dir; the LAPI alone (-no-cs)
# reads no hub, simulation, acquisition or pattern files, so none are written.
config_paths:
  config_dir: ${folder}/
  data_dir: ${folder}/data/
  simulation_path: ${folder}/simulation.yaml
  hub_dir: ${folder}/hub/
  index_path: ${folder}/hub/.index.json
  notification_dir: ${folder}/notifications/
  plugin_dir: ${folder}/plugins/
# No flush section: its max_items would delete the imported decisions' alerts on a timer.
# WAL, as CrowdSec's own warning asks of a database on a local disk.
db_config:
  log_level: info
  type: sqlite
  db_path: ${folder}/data/crowdsec.db
  use_wal: true
# No online_client: the Central API is never called (and -no-capi says so again).
api:
  client:
    credentials_path: ${folder}/local_api_credentials.yaml
  server:
    log_level: info
    listen_uri: 127.0.0.1:${port}
    profiles_path: ${folder}/profiles.yaml
    console_path: ${folder}/console.yaml
prometheus:
  enabled: false
`;
}

// The LAPI fails to start without at least one profile; this is Debian's, which only
// applies to alerts that come without decisions (cscli's come with theirs).
const PROFILES = `name: default_ip_remediation
filters:
 - Alert.Remediation == true && Alert.GetScope() == "Ip"
decisions:
 - type: ban
   duration: 4h
on_success: break
`;

function tail(log, lines = 30) {
  return readFileSync(log, "utf8").split("\n").slice(-lines - 1).join("\n");
}

/** Starts the LAPI with its configuration, database and log (`crowdsec.log`) in
 *  `folder`, a bouncer key, and a 24-hour ban for each address in `decisions`. */
export async function startCrowdsec(folder, { decisions = [] } = {}) {
  if (!existsSync(CROWDSEC)) throw new Error(`${CROWDSEC} is missing: make bench unpacks it and sets CROWDSEC_BIN`);
  mkdirSync(join(folder, "data"), { recursive: true });
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const key = randomBytes(16).toString("hex");
  const file = join(folder, "config.yaml");
  const log = join(folder, "crowdsec.log");
  writeFileSync(file, config(folder, port));
  writeFileSync(join(folder, "profiles.yaml"), PROFILES);
  writeFileSync(log, "");

  const cscli = async (...args) => {
    try {
      const { stdout, stderr } = await promisify(execFile)(CSCLI, ["-c", file, "--color", "no", ...args], { encoding: "utf8" });
      appendFileSync(log, `$ cscli ${args.join(" ")}\n${stdout}${stderr}`);
    } catch (error) {
      throw new Error(`cscli ${args.join(" ")} failed: ${error.stderr || error.message}`);
    }
  };
  // Both write the database directly, so they run before the LAPI starts. The machine
  // is cscli's own login to the LAPI, which it needs to add decisions.
  await cscli("bouncers", "add", "bench", "-k", key);
  await cscli("machines", "add", "bench-cscli", "--password", randomBytes(16).toString("hex"), "-f", join(folder, "local_api_credentials.yaml"));

  // The log file itself, not a pipe: nothing in this process has to drain it.
  const fd = openSync(log, "a");
  const child = spawn(CROWDSEC, ["-c", file, "-no-cs", "-no-capi"], { stdio: ["ignore", fd, fd] });
  closeSync(fd);
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve(signal ?? code)));
  // A bench that throws must not leave the LAPI running behind it.
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);

  const stop = async () => {
    process.off("exit", killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      // It exits within milliseconds (once, under load, two seconds); a stuck one is killed.
      const timer = setTimeout(() => child.kill("SIGKILL"), STOP_MS);
      await exited;
      clearTimeout(timer);
    }
  };

  try {
    await ready(url, key, exited, log);
    // One alert carrying every decision, through the LAPI (cscli has no offline way):
    // 10,000 take under a second.
    if (decisions.length) {
      const input = join(folder, "decisions.json");
      writeFileSync(input, JSON.stringify(decisions.map((value) => ({ duration: "24h", scope: "ip", type: "ban", value }))));
      await cscli("decisions", "import", "-i", input);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, key, stop };
}

/** Polls until the LAPI answers a bouncer's query, or fails with its log's tail. */
async function ready(url, key, exited, log) {
  let gone;
  exited.then((how) => (gone = how));
  const deadline = Date.now() + READY_MS;
  while (Date.now() < deadline) {
    if (gone !== undefined) throw new Error(`crowdsec exited (${gone}) before it answered; ${log}:\n${tail(log)}`);
    try {
      // A user agent other than name/version costs a warning in the log on every request.
      const response = await fetch(`${url}/v1/decisions?ip=127.0.0.1`, { headers: { "X-Api-Key": key, "User-Agent": "bench/1" } });
      await response.arrayBuffer();
      if (response.ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`crowdsec did not answer at ${url} within ${READY_MS / 1000} s; ${log}:\n${tail(log)}`);
}
