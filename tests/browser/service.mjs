// The service the browser tests drive: the test build on Miniflare, on a free
// port with a state of its own, its clock at the next 06:00 UTC so that no day
// ends during a run, and Debian's chromium driven by playwright-core; with the
// helpers both test files use to reach it.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { serve } from "../../bench/lib.mjs";

export const ROOT = new URL("../..", import.meta.url).pathname;
export const ADMIN_TOKEN = "browser-admin-token-0123456789abcdef0123";
export const SCREENSHOTS = join(ROOT, "target/screenshots");
export const AXE = join(ROOT, "node_modules/axe-core/axe.min.js");
export const DESKTOP = { width: 1280, height: 900 };
export const PHONE = { width: 390, height: 844 };

let served, state;
/** What the runtime printed, its last 64 KiB at most: a failing page load shows its tail. */
let serverLog = "";
export let base, browser;
/** How far the service's clock runs ahead of this machine's, in milliseconds (set in `before`). */
export let clockOffset = 0;
/** The service's now, in milliseconds since the epoch. */
export const serviceNow = () => Date.now() + clockOffset;

/** Starts the test build on Miniflare with its own state, as the benchmarks serve
 *  it, sets its clock to the next 06:00 UTC, and launches chromium. Not under
 *  `wrangler dev`, which runs Miniflare behind a proxy worker of its own: there a
 *  page's module scripts went unanswered now and then (a load of 30 s in one run
 *  of the suite in three, the scripts never in wrangler's log). */
export async function start() {
  state = mkdtempSync(join(tmpdir(), "greylist-browser-"));
  await startCloudflare();
  const keep = (chunk) => (serverLog = (serverLog + chunk).slice(-65_536));
  served = await serve(".", {
    JWT_SECRET: "browser-jwt-secret-0123456789abcdef0123",
    ADMIN_TOKEN,
    CACHE_SECONDS: "0",
    IPV6: "on",
    // The network's promotions wait for the operator, whose console approves them.
    PROMOTION_REVIEW: "on",
    // The holder's Cloudflare edge, against the tests' stand-in of Cloudflare's API.
    CLOUDFLARE_API: `${cloudflare}/client/v4`,
    CLOUDFLARE_TOKEN_KEY: "browser-cloudflare-token-key-0123456789abcdef",
  }, state, "build-test/index.js", {
    handleRuntimeStdio: (stdout, stderr) => {
      stdout.on("data", keep);
      stderr.on("data", keep);
    },
  });
  base = served.url;
  // The next 06:00 UTC, as the e2e tests do: 18 hours before the daily counters
  // start again, whenever the suite runs, and never behind the real clock.
  const day = 86_400_000;
  const six = Date.now() - (Date.now() % day) + 6 * 3_600_000;
  clockOffset = (six >= Date.now() ? six : six + day) - Date.now();
  const set = await fetch(`${base}/__test/clock`, { method: "POST", body: JSON.stringify({ offsetMs: clockOffset }) });
  assert.equal(set.status, 200, `setting the clock: ${await set.text()}`);
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    // Root in a container has no sandbox; the rest keeps chromium off a network it cannot reach.
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  mkdirSync(SCREENSHOTS, { recursive: true });
}

/** The stand-in of Cloudflare's API (tests/cloudflare/stand-in.mjs): its base URL. */
export let cloudflare;
let standInProcess;

async function startCloudflare() {
  standInProcess = spawn(process.execPath, [join(ROOT, "tests/cloudflare/stand-in.mjs")], { stdio: ["pipe", "pipe", "inherit"] });
  const line = await new Promise((resolve, reject) => {
    standInProcess.stdout.once("data", (chunk) => resolve(String(chunk)));
    standInProcess.once("exit", () => reject(new Error("the Cloudflare stand-in did not start")));
  });
  cloudflare = `http://127.0.0.1:${line.match(/listening (\d+)/)[1]}`;
}

/** One of the stand-in's control routes. */
export async function standIn(method, path, body) {
  const response = await fetch(`${cloudflare}/__standin/${path}`, { method, body: body && JSON.stringify(body) });
  assert.equal(response.status, 200, await response.clone().text());
  return response.json();
}

/** Stops chromium and the server, and removes their files. */
export async function stop() {
  await browser?.close();
  await served?.mf.dispose();
  standInProcess?.kill();
  rmSync(state, { recursive: true, force: true });
}

export async function admin(method, path, body) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, "Content-Type": typeof body === "string" ? "text/plain" : "application/json" },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  assert.ok(response.ok, `${method} ${path}: ${response.status} ${await response.clone().text()}`);
  return response.status === 204 ? null : response.json();
}

/** The address fields' label: "IPv4 address", or "IP address" once the quota says IPv6 is on. */
export const ADDRESS = /^IP(v4)? address$/;
/** The longest canonical IPv6 text, 39 characters: what a phone must show without scrolling sideways. */
export const LONGEST_IPV6 = "2a00:1450:4001:80b:1234:5678:9abc:def0";

/** Every context `open` made that is not closed yet. */
const contexts = [];

/**
 * Closes every page `open` made: run after each test, so that no test's pages
 * (and their connections to the server) outlive it.
 */
export async function closePages() {
  await Promise.all(contexts.splice(0).map((context) => context.close()));
}

/** A page with a fresh context; `dialogs` collects every alert, confirm or prompt it opened. */
/** `bypassCSP` turns the page's Content-Security-Policy off, so that a test of what
 *  the page inserts fails on markup run as HTML even where the policy would block it. */
export async function open(path, viewport = DESKTOP, colorScheme = "light", bypassCSP = false) {
  const context = await browser.newContext({ viewport, colorScheme, bypassCSP });
  contexts.push(context);
  const page = await context.newPage();
  page.dialogs = [];
  page.on("dialog", (dialog) => {
    page.dialogs.push(dialog.message());
    dialog.dismiss();
  });
  page.errors = [];
  page.on("pageerror", (error) => page.errors.push(error.message));
  // Which requests a load that never ends still waits for: two clean-clone runs
  // failed with a page load of 30 s, and their logs could not say on what.
  const pending = new Set();
  page.on("request", (request) => pending.add(request));
  for (const done of ["requestfinished", "requestfailed"]) page.on(done, (request) => pending.delete(request));
  try {
    await page.goto(`${base}${path}`);
  } catch (error) {
    error.message += `\nstill waiting for: ${[...pending].map((request) => request.url()).join(", ") || "nothing"}`;
    error.message += `\nthe runtime's last lines:\n${serverLog.split("\n").slice(-30).join("\n")}`;
    throw error;
  }
  return page;
}

export async function holderPage(key, viewport, colorScheme, bypassCSP) {
  const page = await open("/", viewport, colorScheme, bypassCSP);
  await page.getByLabel("License key", { exact: true }).fill(key);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.locator("#quota dd").first().waitFor();
  return page;
}

/** The operator's console, logged in, at the view `hash` names (the overview by default). */
export async function operatorPage(viewport, colorScheme, bypassCSP, token = ADMIN_TOKEN, hash = "") {
  const page = await open(`/admin/${hash}`, viewport, colorScheme, bypassCSP);
  await page.getByLabel("Admin token or operator key", { exact: true }).fill(token);
  await page.getByRole("button", { name: "Log in" }).click();
  if (hash) await page.locator("#app").waitFor();
  else await page.locator("#status-rows tr").first().waitFor();
  return page;
}

/** Follows a page's link to the view `name` ("Licenses", "Feeds"): its heading takes the focus. */
export async function goTo(page, name) {
  await page.locator("#views").getByRole("link", { name, exact: true }).click();
  await page.waitForFunction((name) => document.querySelector("#views a[aria-current=page]")?.textContent === name
    && document.activeElement?.matches("div.view:not([hidden]) h2"), name);
}

/** A page's view `name` ("Your list", "Licenses"), followed to from its link unless it is shown already. */
export async function onView(page, name) {
  const current = await page.locator("#views a[aria-current=page]").textContent();
  if (current !== name) await goTo(page, name);
}

/** Moves the service's clock `ms` further ahead (the test build's hook), and `serviceNow` with it. */
export async function advanceClock(ms) {
  clockOffset += ms;
  const set = await fetch(`${base}/__test/clock`, { method: "POST", body: JSON.stringify({ offsetMs: clockOffset }) });
  assert.equal(set.status, 200, `setting the clock: ${await set.text()}`);
}

export const text = (page, selector) => page.locator(selector).innerText();

/** Adds `ip` through the list view's "Add an address" form (the allow list's form has a Comment and an Add of its own). */
export async function addOne(page, ip, comment, ttlLabel = "Never") {
  await onView(page, "Your list");
  const form = page.locator("#add-form");
  await form.getByLabel(ADDRESS).fill(ip);
  await form.getByLabel("Expires").selectOption({ label: ttlLabel });
  await form.getByLabel("Comment").fill(comment);
  await form.getByRole("button", { name: "Add", exact: true }).click();
  await page.locator("#add-result", { hasText: ip }).waitFor();
  return text(page, "#add-result");
}

/** A usage report, as crowdsec-firewall-bouncer 0.0.30 posts one every 15 minutes with its feed token. */
export async function reportUsage(token, { type = "crowdsec-firewall-bouncer", version = "v0.0.30", os = "debian", packets = 96, bytes = 6144 } = {}) {
  const now = Math.floor(serviceNow() / 1000);
  const dropped = (unit, value) => ({ name: "dropped", unit, value, labels: { origin: "greylist", ip_type: "ipv4" } });
  const body = {
    log_processors: null,
    remediation_components: [{
      type, version, os: { name: os, version: "12" }, feature_flags: [], utc_startup_timestamp: now - 3600,
      metrics: [{ meta: { window_size_seconds: 900, utc_now_timestamp: now }, items: [dropped("packet", packets), dropped("byte", bytes)] }],
    }],
  };
  const response = await fetch(`${base}/v1/usage-metrics`, {
    method: "POST",
    headers: { "X-Api-Key": token, "Content-Type": "application/json", "User-Agent": "crowdsec-firewall-bouncer/v0.0.30" },
    body: JSON.stringify(body),
  });
  assert.equal(response.status, 201, await response.text());
}
