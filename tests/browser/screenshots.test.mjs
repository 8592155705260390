// The screenshots in docs/, made from data a customer could have (no test's
// payloads, on a service of their own), at desktop and phone width, light and dark:
// each view of the holder's page and of the operator's console; and no page or view
// wider than a phone. Run by `make browser`; `make screenshots` copies them into docs/.
import { after, afterEach, before, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  DESKTOP, LONGEST_IPV6, PHONE, SCREENSHOTS, closePages,
  addOne, admin, advanceClock, base, goTo, holderPage, onView, operatorPage, reportUsage, serviceNow, standIn, start, stop,
} from "./service.mjs";

before(start);
afterEach(closePages);
after(stop);

const DAY = 86_400_000;

/** A holder's access token. */
async function accessToken(licenseKey) {
  const login = await fetch(`${base}/v2/authentication/login/license`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ licenseKey }),
  }).then((r) => r.json());
  return login.accessToken;
}

/** A holder route's JSON answer, with the holder's token. */
async function holderCall(token, path, body) {
  return fetch(`${base}${path}`, {
    method: "POST", headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" }, body: JSON.stringify(body),
  }).then((r) => r.json());
}

/** The operator's lists and licenses, a holder whose bouncer has pulled and
 *  reported a week of drops, and whose engine reported itself. */
async function plausibleService() {
  await admin("PUT", "/admin/global-list", [
    "; scanners and brute-force sources, from the operator's feeds",
    "80.94.95.0/24", "141.98.10.0/24", "185.224.128.0/24", "193.142.146.0/24",
    "45.148.10.174", "2a0b:4140:ff00::/48",
  ].join("\n"));
  await admin("POST", "/admin/allow-list", { add: ["104.16.0.0/13", "162.158.0.0/15"] });
  const acme = await admin("POST", "/admin/licenses", { label: "Acme GmbH", note: "Berlin office; renews in March" });
  const nordwind = await admin("POST", "/admin/licenses", { label: "Nordwind Hosting", note: "Hamburg, 40 servers" });
  await admin("POST", "/admin/licenses", { label: "Café Sommer", note: "web shop" });
  await admin("POST", "/admin/keys", { name: "Sam from support", role: "read" });
  const token = await accessToken(acme.licenseKey);
  const made = await holderCall(token, "/api/feedTokens", { scope: "all" });
  // A week of the firewall bouncer's reports, a day at a time on the service's clock.
  for (const [day, packets] of [1840, 2210, 960, 4730, 3120, 2680, 1490].entries()) {
    if (day > 0) await advanceClock(DAY);
    await reportUsage(made.feedToken, { packets, bytes: packets * 64 });
  }
  const pulled = await fetch(`${base}/v1/decisions/stream?startup=true`, { headers: { "X-Api-Key": made.feedToken, "User-Agent": "crowdsec-firewall-bouncer/v0.0.30" } });
  assert.equal(pulled.status, 200);
  // The week moved the clock past the access token's lifetime (an hour): the
  // holder logs in again, or its call is refused with a 401 in plain text.
  const again = await accessToken(acme.licenseKey);
  const machine = await holderCall(again, "/api/machines", { name: "web-1" });
  // The office's own range on the holder's allow list.
  const allowed = await fetch(`${base}/api/addIpToAllowlist?result_mode=json`, {
    method: "POST", headers: { Authorization: `Bearer ${again}` }, body: new URLSearchParams({ ip: "85.214.132.0/24", comment: "Berlin office" }),
  }).then((r) => r.json());
  assert.equal(allowed.result, "[85.214.132.0/24] has been added to your allow list");
  const engine = await fetch(`${base}/v1/watchers/login`, {
    method: "POST", body: JSON.stringify({ machine_id: machine.machineId, password: machine.password, scenarios: ["crowdsecurity/ssh-bf"] }),
  }).then((r) => r.json());
  const metrics = {
    log_processors: [{
      version: "v1.6.3-debian", os: { name: "debian", version: "12" }, utc_startup_timestamp: Math.floor(serviceNow() / 1000) - 7200,
      datasources: { file: 2, journalctl: 1 }, feature_flags: [], hub_items: {}, metrics: [],
    }],
  };
  const reported = await fetch(`${base}/v1/usage-metrics`, {
    method: "POST", headers: { Authorization: `Bearer ${engine.token}`, "Content-Type": "application/json" }, body: JSON.stringify(metrics),
  });
  assert.equal(reported.status, 201, await reported.text());
  // A colleague's refused change and a revoked license, for the audit log.
  const { key } = await admin("POST", "/admin/keys", { name: "Alex, night shift", role: "read" });
  await fetch(`${base}/admin/licenses/${nordwind.license}`, { method: "PATCH", headers: { Authorization: `Bearer ${key}` }, body: "{}" });
  await admin("PATCH", `/admin/licenses/${nordwind.license}`, { note: "Hamburg, 40 servers; moved to the new rack" });
  return acme;
}

/** The holder's Cloudflare account connected (on the tests' stand-in), the
 *  global list too, a zone challenging it, and the list in sync: the holder's
 *  alarm run by the test hook, since the clock is days ahead of the runtime's. */
async function connectCloudflare({ license, licenseKey }) {
  const [account, zone, apiToken] = ["5e8a1c7b2d9f4e6a8b3c1d0e7f2a9b4c", "0c4d8e2f6a1b3c5d7e9f1a2b4c6d8e0f", "acme-lists-and-waf-edit-7Qx2"];
  await standIn("POST", "tokens", { token: apiToken, accounts: [account], zones: [zone] });
  const token = await accessToken(licenseKey);
  const call = (method, body) => fetch(`${base}/api/cloudflare`, {
    method, headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" }, body: body && JSON.stringify(body),
  });
  const put = await call("PUT", { accountId: account, apiToken, zoneId: zone, scope: "all" });
  assert.equal(put.status, 200, await put.text());
  for (let i = 0; i < 80 && (await call("GET").then((r) => r.json())).state !== "in sync"; i++) {
    await fetch(`${base}/__test/holders/${license}/alarm`, { method: "POST", body: "" });
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  assert.equal((await call("GET").then((r) => r.json())).state, "in sync");
}

/** Fails when `page` scrolls sideways. */
async function fitsItsWidth(page, what) {
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `${what} scrolls sideways by ${overflow}px`);
}

/**
 * Each view of `page` (`views`: its file name, its link and what shows once it
 * has loaded), opened from its link: a screenshot of it as
 * `<prefix>-<file>-<width>.png`, and no sideways scrolling.
 */
async function eachView(page, prefix, width, views) {
  for (const [file, link, loaded] of views) {
    await onView(page, link);
    await page.locator(loaded).first().waitFor();
    await page.screenshot({ path: join(SCREENSHOTS, `${prefix}-${file}-${width}.png`), fullPage: true });
    await fitsItsWidth(page, `the ${prefix}'s ${link} at ${width} width`);
  }
}

test("screenshots at desktop and phone width, one of each holder view and each console view, and nothing wider than a phone", async () => {
  const acme = await plausibleService();
  for (const [name, viewport] of [["desktop", DESKTOP], ["phone", PHONE]]) {
    // Each view of the holder's page, as its link opens it, once what it shows has loaded.
    const holder = await holderPage(acme.licenseKey, viewport);
    if (name === "desktop") {
      await addOne(holder, "91.92.240.17", "seen probing SSH");
      await addOne(holder, "178.128.94.12", "credential stuffing on the shop's login", "After 7 days");
      await addOne(holder, LONGEST_IPV6, "IPv6 scanner");
      await connectCloudflare(acme);
    }
    await eachView(holder, `holder`, name, [
      ["overview", "Overview", "#activity-chart svg.chart rect.bar.added"],
      ["list", "Your list", "#list-rows tr >> nth=2"],
      ["allow", "Allow list", "#allow-rows tr"],
      ["report", "Report", "#report-form"],
      ["feeds", "Feeds", "#token-rows svg.chart"],
      ["engines", "Engines", "#machine-rows tr"],
      ["cloudflare", "Cloudflare", "#cloudflare-status dd:has-text('in sync')"],
      ["history", "History", "#history-rows tr >> nth=2"],
    ]);
    if (name === "desktop") {
      const dark = await holderPage(acme.licenseKey, viewport, "dark");
      await dark.locator("#activity-chart svg.chart rect.bar.added").waitFor();
      await dark.screenshot({ path: join(SCREENSHOTS, "holder-overview-dark.png"), fullPage: true });
    }
    // Each view of the console, as its address opens it, once what it shows has loaded.
    const operator = await operatorPage(viewport);
    await eachView(operator, "console", name, [
      ["overview", "Overview", "#sizes-chart svg.chart"],
      ["licenses", "Licenses", "#license-rows tr >> nth=2"],
      ["lists", "Lists", "#promoted-count:not(:empty)"],
      ["keys", "Operator keys", "#key-rows tr >> nth=1"],
      ["audit", "Audit log", "#audit-rows tr >> nth=4"],
    ]);
    await goTo(operator, "Licenses");
    await operator.locator("#license-rows tr", { hasText: "Acme GmbH" }).getByRole("link", { name: /^Open/ }).click();
    await operator.locator("#license-agents svg.chart").waitFor();
    await operator.locator("#license-audit-rows tr").first().waitFor();
    await operator.screenshot({ path: join(SCREENSHOTS, `console-license-${name}.png`), fullPage: true });
    await fitsItsWidth(operator, `a license's view at ${name} width`);
    await goTo(operator, "Lookup");
    await operator.getByLabel("Address", { exact: true }).fill("80.94.95.14");
    await operator.getByRole("button", { name: "Look up" }).click();
    await operator.locator("#lookup-result", { hasText: "80.94.95.14" }).waitFor();
    await operator.screenshot({ path: join(SCREENSHOTS, `console-lookup-${name}.png`), fullPage: true });
    await fitsItsWidth(operator, `the lookup at ${name} width`);
  }
});
