// The dashboard in a real browser: Debian's chromium driven by playwright-core,
// against the test build on Miniflare (tests/browser/service.mjs). Run by
// `make browser`.
import { after, afterEach, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  ADDRESS, ADMIN_TOKEN, AXE, DESKTOP, LONGEST_IPV6, PHONE, closePages,
  addOne, admin, base, goTo, holderPage, onView, open, operatorPage, reportUsage, serviceNow, standIn, start, stop, text,
} from "./service.mjs";

before(start);
afterEach(closePages);
after(stop);

let lastIp = 0;
/** A public address no other test of this file uses. */
function uniqueIp() {
  lastIp += 1;
  return `45.67.${lastIp >> 8}.${lastIp & 255}`;
}

const listRow = (page, ip) => page.locator("#list-rows tr", { hasText: ip });

/** Checks, adds or removes `ip` (`button` names which) through the allow list's form; resolves to its answer. */
async function allowForm(page, button, ip, comment = "") {
  await onView(page, "Allow list");
  const form = page.locator("#allow-form");
  await form.getByLabel("Address or range").fill(ip);
  await form.getByLabel("Comment").fill(comment);
  await form.getByRole("button", { name: button, exact: true }).click();
  await page.locator("#allow-result", { hasText: ip }).waitFor();
  return text(page, "#allow-result");
}

/** The API paths under `under` the page asks for while `work` runs, once the
 *  `expected` ones are answered and a moment more has passed for any other. */
async function asked(page, expected, work, under = "/admin/") {
  const paths = [];
  const seen = (request) => {
    const url = new URL(request.url());
    if (url.pathname.startsWith(under) && url.pathname !== under) paths.push(url.pathname);
  };
  page.on("request", seen);
  const answered = expected.map((path) => page.waitForResponse((response) => new URL(response.url()).pathname === path));
  await work();
  await Promise.all(answered);
  await page.waitForTimeout(300);
  page.off("request", seen);
  return paths.sort();
}

/** Whether `locator` comes to show within ten seconds: polled, so that a view
 *  that never comes fails by the assertion naming it, not by a time-out. */
async function comesToShow(locator) {
  for (const until = Date.now() + 10_000; Date.now() < until;) {
    if (await locator.first().isVisible()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return locator.first().isVisible();
}

describe("holder page", () => {
  test("log in, add with a comment and a ttl, see it listed, check it, remove it, see the history", async () => {
    const { licenseKey } = await admin("POST", "/admin/licenses");
    const page = await holderPage(licenseKey);
    assert.match(await text(page, "#quota"), /Additions\s+0 used, 6000 left of 6000/);
    const ip = uniqueIp();

    assert.equal(await addOne(page, ip, "scanner seen on port 22", "After 1 day"), `[${ip}] has been added to greylist`);
    const row = listRow(page, ip);
    await row.waitFor();
    assert.match(await row.innerText(), /scanner seen on port 22/);
    const expires = await row.locator("td").nth(3).locator("time").getAttribute("datetime");
    const hoursLeft = (Date.parse(expires) - serviceNow()) / 3_600_000;
    assert.ok(hoursLeft > 23.9 && hoursLeft <= 24, `expires in a day: ${expires}`);
    await onView(page, "Overview");
    await page.locator("#quota", { hasText: "1 used, 5999 left" }).waitFor();

    await page.getByLabel(ADDRESS).first().fill(ip);
    await page.locator("#check-form").getByRole("button", { name: "Check" }).click();
    await page.locator("#check-result", { hasText: ip }).waitFor();
    assert.equal(await text(page, "#check-result"), `[${ip}] is currently on your personal greylist`);

    await onView(page, "Your list");
    await page.getByRole("button", { name: `Remove ${ip}` }).click();
    await page.locator("#list-result", { hasText: "removed" }).waitFor();
    assert.equal(await text(page, "#list-result"), `[${ip}] has been removed from greylist`);
    await row.waitFor({ state: "detached" });

    await onView(page, "History");
    const history = page.locator("#history-rows tr", { hasText: ip });
    await history.nth(1).waitFor();
    assert.deepEqual(await history.locator("td:nth-child(2)").allInnerTexts(), ["removed", "added"]);
    assert.deepEqual(page.errors, []);
  });

  test("the allow list: a range with a comment is listed, holds the addresses in it, takes the challenge list's entries inside it away, and goes from its row", async () => {
    const { licenseKey } = await admin("POST", "/admin/licenses");
    const page = await holderPage(licenseKey);
    const range = "45.67.89.0/24";
    assert.equal(await allowForm(page, "Add", range, "office"), `[${range}] has been added to your allow list`);
    const row = page.locator("#allow-rows tr", { hasText: range });
    await row.waitFor();
    assert.match(await row.innerText(), /office/);
    assert.equal(await allowForm(page, "Check", "45.67.89.7"), "[45.67.89.7] is on your allow list");
    // The challenge list's own form leaves an address the holder allows alone.
    assert.equal(await addOne(page, "45.67.89.8", ""), "[45.67.89.8] is on your allow list, no action was taken");

    // A range allowed later takes the challenge list's entry inside it away, as a removal of the day.
    assert.equal(await addOne(page, "45.67.90.1", "soon allowed"), "[45.67.90.1] has been added to greylist");
    await listRow(page, "45.67.90.1").waitFor();
    assert.equal(await allowForm(page, "Add", "45.67.90.0/24"), "[45.67.90.0/24] has been added to your allow list");
    await onView(page, "Your list");
    await page.locator("#list-result", { hasText: "0 addresses" }).waitFor();
    assert.equal(await listRow(page, "45.67.90.1").count(), 0);
    await onView(page, "Overview");
    await page.locator("#quota", { hasText: /Removals\s*1 used/ }).waitFor();

    await onView(page, "Allow list");
    await row.getByRole("button", { name: `Remove ${range} from your allow list` }).click();
    await page.locator("#allow-result", { hasText: "removed" }).waitFor();
    assert.equal(await text(page, "#allow-result"), `[${range}] has been removed from your allow list`);
    await row.waitFor({ state: "detached" });
    await onView(page, "History");
    const history = page.locator("#history-rows tr", { hasText: range });
    await history.nth(1).waitFor();
    assert.deepEqual(await history.locator("td:nth-child(2)").allInnerTexts(), ["no longer allowed", "allowed"]);
    assert.deepEqual(page.errors, []);
  });

  test("with IPv6 on, the address fields say so, take an IPv6 address and show it in full", async () => {
    const { licenseKey } = await admin("POST", "/admin/licenses");
    const page = await holderPage(licenseKey, PHONE);
    for (const id of ["check-ip", "add-ip"]) {
      const input = page.locator(`#${id}`);
      assert.equal(await input.getAttribute("inputmode"), "text", `${id}: a keyboard with letters and colons`);
      assert.equal(await page.locator(`label[for=${id}]`).innerText(), "IP address");
    }
    const ip = "2A00:1450:4001:080B:0:0:0:200E";
    assert.equal(await addOne(page, ip, "v6 scanner"), `[${ip}] has been added to greylist`);
    await listRow(page, "2a00:1450:4001:80b::200e").waitFor();
    assert.equal(await addOne(page, LONGEST_IPV6, "longest"), `[${LONGEST_IPV6}] has been added to greylist`);
    await listRow(page, LONGEST_IPV6).waitFor();
    // Neither the page nor the list and the history within their own scrolling boxes
    // scroll sideways, each measured in its view.
    const sideways = (rows) => page.evaluate((rows) => {
      const wrap = document.querySelector(`.table-wrap:has(#${rows})`);
      return [document.documentElement.scrollWidth - window.innerWidth, wrap.scrollWidth - wrap.clientWidth, wrap.clientWidth];
    }, rows);
    const list = await sideways("list-rows");
    await onView(page, "History");
    await page.locator("#history-rows tr", { hasText: LONGEST_IPV6 }).first().waitFor();
    const history = await sideways("history-rows");
    for (const [[page, table, width], name] of [[list, "list"], [history, "history"]]) {
      assert.ok(page <= 0, `the phone page of the ${name} scrolls sideways by ${page}px`);
      assert.ok(width > 0 && table <= 0, `the ${name} scrolls sideways by ${table}px in a box ${width}px wide`);
    }
    assert.deepEqual(page.errors, []);
  });

  test("every view has an address, a link in the nav and the focus on its heading; back and forward move between them; a fresh link opens its view; each loads only what it shows", async () => {
    const { licenseKey } = await admin("POST", "/admin/licenses");
    const page = await holderPage(licenseKey);
    assert.equal(await page.evaluate(() => document.activeElement.id), "quota-title", "the overview's heading takes the focus");
    for (const [name, hash, heading, title, loads] of [
      ["Your list", "#/list", "add-title", "Your challenge list", ["/api/listGreylist"]],
      ["Allow list", "#/allow", "allow-title", "Your allow list", ["/api/listAllowlist"]],
      ["Report", "#/report", "report-title", "Report an attacker", []],
      ["Feeds", "#/feeds", "tokens-title", "Feed tokens", ["/api/feedTokens"]],
      ["Engines", "#/engines", "machines-title", "CrowdSec engines", ["/api/machines"]],
      ["Cloudflare", "#/cloudflare", "cloudflare-title", "Your Cloudflare edge", ["/api/cloudflare"]],
      ["History", "#/history", "history-title", "History", ["/api/greylistHistory"]],
      ["Overview", "#/", "quota-title", "Overview", ["/api/activity", "/api/quota"]],
    ]) {
      const paths = await asked(page, loads, () => goTo(page, name), "/api/");
      assert.deepEqual(paths, loads, `${name} asks for what it shows and nothing more`);
      assert.equal(await page.evaluate(() => location.hash), hash);
      assert.equal(await page.evaluate(() => document.activeElement.id), heading, `${name}: the focus on its heading`);
      assert.equal(await page.locator("#views a[aria-current=page]").innerText(), name);
      assert.equal(await page.title(), `${title} — Greylist`);
      assert.equal(await page.locator("div.view:not([hidden])").count(), 1, "one view at a time");
    }
    // Back and forward: the views in the order they were opened.
    await goTo(page, "Feeds");
    await goTo(page, "History");
    await page.goBack();
    assert.ok(await comesToShow(page.locator("#tokens-title:focus")), "back shows the view its address names");
    await page.goBack();
    assert.ok(await comesToShow(page.locator("#quota-title:focus")), "back shows the view its address names");
    await page.goForward();
    assert.ok(await comesToShow(page.locator("#tokens-title:focus")), "forward shows the view its address names");
    assert.equal(await page.evaluate(() => location.hash), "#/feeds");
    // The keyboard alone: the nav's links in tab order, each opening its view.
    await page.locator("#views a").first().focus();
    await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    await page.locator("#add-title:focus").waitFor();
    // An address opened fresh lands on its view once logged in, and on it again
    // after a reload while the tab holds the session.
    const linked = await open("/#/engines");
    await linked.getByLabel("License key", { exact: true }).fill(licenseKey);
    await linked.getByRole("button", { name: "Log in" }).click();
    assert.ok(await comesToShow(linked.locator("#machines-title:focus")), "a fresh link lands on the view it names");
    assert.ok(await comesToShow(linked.locator("#machines-result", { hasText: "No machines yet." })));
    await linked.reload();
    assert.ok(await comesToShow(linked.locator("#machines-title:focus")), "a reload stays on its view");
    // Any other address is the overview.
    await linked.evaluate(() => { location.hash = "#/no-such-view"; });
    assert.ok(await comesToShow(linked.locator("#quota-title:focus")), "an unknown address shows the overview");
    assert.deepEqual(page.errors, []);
    assert.deepEqual(linked.errors, []);
  });

  test("a wrong key shows the service's refusal", async () => {
    const page = await open("/");
    await page.getByLabel("License key", { exact: true }).fill("glk_not-a-key");
    await page.getByRole("button", { name: "Log in" }).click();
    await page.locator("#login-result", { hasText: "Unauthorized" }).waitFor();
    assert.equal(await text(page, "#login-result"), "Unauthorized: the license key is unknown or revoked");
    assert.ok(await page.locator("#app").isHidden());
  });

  test("a token the service no longer takes sends the page back to login with a message", async () => {
    const { licenseKey } = await admin("POST", "/admin/licenses");
    const page = await holderPage(licenseKey);
    await page.evaluate(() => sessionStorage.setItem("greylist.holder", JSON.stringify({ token: "e30.e30.bad", expiresAt: null })));
    await page.getByLabel(ADDRESS).first().fill("8.8.8.8");
    await page.locator("#check-form").getByRole("button", { name: "Check" }).click();
    await page.locator("#login-result", { hasText: "Log in again" }).waitFor();
    assert.equal(await text(page, "#login-result"), "Unauthorized: the access token is missing or invalid. Log in again.");

    await page.evaluate(() => sessionStorage.setItem("greylist.holder", JSON.stringify({ token: "x", expiresAt: Date.now() - 1 })));
    await page.reload();
    assert.equal(await text(page, "#login-result"), "Your session has expired. Log in again.");
    assert.equal(await page.evaluate(() => localStorage.length + document.cookie.length), 0, "nothing kept beyond the tab");
  });

  test("the keyboard alone logs in and checks an address", async () => {
    const { licenseKey } = await admin("POST", "/admin/licenses");
    const page = await open("/");
    await page.keyboard.type(licenseKey);
    await page.keyboard.press("Enter");
    await page.locator("#quota dd").first().waitFor();
    await page.locator("#check-ip").focus();
    await page.keyboard.type("10.1.2.3");
    await page.keyboard.press("Enter");
    await page.locator("#check-result", { hasText: "10.1.2.3" }).waitFor();
    assert.equal(await text(page, "#check-result"), "[10.1.2.3] is private");
  });

  test("pasted addresses are answered line by line through the bulk route", async () => {
    const { licenseKey } = await admin("POST", "/admin/licenses");
    const page = await holderPage(licenseKey);
    const [a, b] = [uniqueIp(), uniqueIp()];
    await onView(page, "Your list");
    await page.getByLabel("Addresses, one a line").fill(`${a}\n\n${b}\n${a}\n300.1.1.1\n`);
    await page.getByRole("button", { name: "Add all" }).click();
    await page.locator("#bulk-result", { hasText: "answered" }).waitFor();
    const results = await page.locator("#bulk-table tbody tr td:nth-child(2)").allInnerTexts();
    assert.deepEqual(results.slice(0, 3), [`[${a}] has been added to greylist`, `[${b}] has been added to greylist`, `[${a}] is already on your greylist`]);
    assert.equal(results.length, 4);
    await listRow(page, b).waitFor();
    await onView(page, "Overview");
    await page.locator("#quota", { hasText: "2 used" }).waitFor();
  });

  test("an attacker is reported with its categories and a comment, and the challenge list does not gain it", async () => {
    const { licenseKey } = await admin("POST", "/admin/licenses");
    const page = await holderPage(licenseKey);
    const ip = "45.67.100.1";
    await onView(page, "Report");
    const form = page.locator("#report-form");
    await form.getByLabel("Address", { exact: true }).fill(ip);
    await form.getByRole("checkbox", { name: "SSH", exact: true }).check();
    await form.getByRole("checkbox", { name: "Brute force", exact: true }).check();
    await form.getByLabel("Comment").fill("password guessing on port 22");
    await form.getByRole("button", { name: "Report", exact: true }).click();
    await page.locator("#report-result", { hasText: ip }).waitFor();
    assert.equal(await text(page, "#report-result"), `[${ip}] has been reported`);

    // A report changes nothing on the holder's lists: the list, loaded again, is still empty, and nothing was added today.
    const again = await holderPage(licenseKey);
    assert.match(await text(again, "#quota"), /Additions\s+0 used/);
    await onView(again, "Your list");
    await again.locator("#list-result", { hasText: "0 addresses" }).waitFor();
    assert.equal(await listRow(again, ip).count(), 0);
    assert.deepEqual(page.errors, []);
    assert.deepEqual(again.errors, []);
  });

  test("a check of an address the network promoted says so, and by how many holders", async () => {
    const ip = "45.67.101.1";
    // Four other licenses report it through the API, each from a network of its
    // own as the edge names it, and each object and shard sends on what it kept.
    for (let i = 0; i < 4; i += 1) {
      const { license, licenseKey } = await admin("POST", "/admin/licenses");
      const login = await fetch(`${base}/v2/authentication/login/license`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ licenseKey }),
      });
      const { accessToken } = await login.json();
      const report = await fetch(`${base}/api/reportIp?result_mode=json`, {
        method: "POST",
        headers: { Authorization: `Bearer ${accessToken}`, "CF-Connecting-IP": `10.45.${i}.7` },
        body: new URLSearchParams({ ip }),
      });
      assert.equal((await report.json()).result, `[${ip}] has been reported`);
      assert.equal((await fetch(`${base}/__test/holders/${license}/alarm`, { method: "POST" })).status, 200);
    }
    const hook = async (path) => assert.equal((await fetch(`${base}${path}`, { method: "POST" })).status, 200);
    await hook("/__test/reports/alarm");
    await hook("/__test/lists/alarm");
    const { licenseKey } = await admin("POST", "/admin/licenses");
    const page = await holderPage(licenseKey);
    const check = async (expected) => {
      await page.getByLabel(ADDRESS).first().fill(ip);
      await page.locator("#check-form").getByRole("button", { name: "Check" }).click();
      await page.locator("#check-result", { hasText: expected }).waitFor();
      return text(page, "#check-result");
    };
    assert.equal(await check(ip), `[${ip}] is currently not on global greylist`, "under review, it waits for the operator");

    // The operator sees the settings in force and the promotion waiting, with who reported it from where, and approves it.
    const console = await operatorPage();
    await console.locator("#network-settings", { hasText: "promoted now" }).waitFor();
    assert.match(await text(console, "#network-settings"),
      /^In force: an address reported by 4 distinct licenses from 4 distinct networks within 7 days is promoted; it stays while the reports of the last 7 days still make that\. Each promotion waits for review: [1-9]\d* waiting\. \d+ promoted now\.$/);
    await goTo(console, "Lists");
    const waiting = console.locator("#review-rows tr", { hasText: ip });
    await waiting.waitFor();
    assert.match(await waiting.innerText(), /4 of 4, 4 of 4/);
    assert.match(await waiting.innerText(), /from 10\.45\.0\.0\/24: 1 report, no category/);
    await waiting.getByRole("button", { name: `Approve ${ip}` }).click();
    await console.locator("#review-result", { hasText: "approved" }).waitFor();
    assert.equal(await console.locator("#review-rows tr", { hasText: ip }).count(), 0);
    await hook("/__test/lists/alarm");
    assert.equal(await check("promoted"),
      `[${ip}] is on global greylist (promoted by the network: reported by 4 license holders)`);
    assert.deepEqual(page.errors, []);

    await goTo(console, "Overview");
    // The rows of the overview's first load stay until its new load answers:
    // read them once they can be the new ones.
    const promotedRow = /Global list\s+\d+ \([1-9]\d* promoted\)/;
    for (const until = Date.now() + 10_000; !promotedRow.test(await text(console, "#status-rows")) && Date.now() < until;) {
      await console.waitForTimeout(100);
    }
    assert.match(await text(console, "#status-rows"), promotedRow, "the overview counts the promoted entry");
    await goTo(console, "Lookup");
    await console.getByLabel("Address", { exact: true }).fill(ip);
    await console.getByRole("button", { name: "Look up" }).click();
    await console.locator("#lookup-result", { hasText: ip }).waitFor();
    const answer = await text(console, "#lookup-answer");
    assert.match(answer, new RegExp(`${ip.replaceAll(".", "\\.")}\\s+Promoted by holders' reports`));
    assert.match(answer, /Counting now: 4 licenses from 4 networks, of the 4 licenses from 4 networks the consensus needs: it holds since /);
    assert.match(answer, /10\.45\.0\.0\/24\s+counting/);
    assert.equal(await console.locator("#lookup-answer tbody tr").last().locator("td").count(), 7);
    await goTo(console, "Lists");
    await console.locator("#promoted-count", { hasText: "promoted now" }).waitFor();
    await console.getByLabel("Promoted addresses to take off, one a line").fill(ip);
    await console.getByRole("button", { name: "Take off", exact: true }).click();
    await console.locator("#promoted-result", { hasText: "Took off" }).waitFor();
    assert.equal(await text(console, "#promoted-result"), "Took off 1 promoted entry.");
    assert.deepEqual(console.errors, []);
  });

  test("feed tokens are created (shown once) with what they read, whether they merge and how many entries they carry, listed and revoked", async () => {
    const { licenseKey } = await admin("POST", "/admin/licenses");
    const page = await holderPage(licenseKey);
    await onView(page, "Feeds");
    const pull = (token, query = "") => fetch(`${base}/api/greylistFeed${query}`, { headers: { Authorization: `Bearer ${token}` } });
    await page.getByLabel("What it reads").selectOption("all");
    await page.getByRole("button", { name: "Create a feed token" }).click();
    const shown = page.locator("#token-new input");
    await shown.waitFor();
    const everything = await shown.inputValue();
    assert.match(everything, /^glf_/);
    assert.equal((await pull(everything, "?scope=all")).status, 200, "a token of scope all opens the global feed");
    const row = page.locator("#token-rows tr");
    await row.first().waitFor();
    await page.getByLabel("What it reads").selectOption("personal");
    await page.getByLabel("Its feeds").selectOption("true");
    await page.getByLabel("Most entries").fill("1");
    await page.getByRole("button", { name: "Create a feed token" }).click();
    await row.nth(1).waitFor();
    const token = await shown.inputValue();
    assert.notEqual(token, everything);
    assert.equal((await pull(token)).status, 200, "the token shown opens the feed");
    assert.equal((await pull(token, "?scope=all")).status, 403, "but not the global list");
    const merged = await pull(token, "?format=json");
    assert.equal(merged.headers.get("x-greylist-left-out"), "0", "the token chosen to carry at most one entry cuts its feeds");
    assert.equal((await merged.json()).merged, true, "the token chosen to merge its feeds merges them");
    // Two tokens made within a second list in the order of their ids.
    assert.deepEqual((await row.locator("td:nth-child(2)").allInnerTexts()).sort(), ["Your list and the global list", "Your list, merged\nat most 1 entry"]);
    for (const left of [1, 0]) {
      await row.first().getByRole("button", { name: /^Revoke/ }).click();
      await page.getByRole("dialog").getByRole("button", { name: "Revoke" }).click();
      await row.nth(left).waitFor({ state: "detached" });
      assert.equal(await row.count(), left);
    }
    await page.locator("#tokens-result", { hasText: "revoked" }).waitFor();
    for (const revoked of [token, everything]) assert.equal((await pull(revoked)).status, 401);
  });
  test("a bouncer's pull shows on its token: when, what it read, its client, what its decisions say, and what it reports it dropped", async () => {
    const { licenseKey } = await admin("POST", "/admin/licenses");
    let page = await holderPage(licenseKey);
    await onView(page, "Feeds");
    await page.getByLabel("What it reads").selectOption("all");
    await page.getByLabel("CrowdSec decisions").selectOption("captcha");
    await page.getByRole("button", { name: "Create a feed token" }).click();
    const shown = page.locator("#token-new input");
    await shown.waitFor();
    const token = await shown.inputValue();
    const row = page.locator("#token-rows tr").first();
    await row.waitFor();
    assert.match(await row.innerText(), /Challenge[\s\S]*Never/);
    const agent = "crowdsec-firewall-bouncer/v0.0.25";
    const pulled = await fetch(`${base}/v1/decisions/stream?startup=true`, { headers: { "X-Api-Key": token, "User-Agent": agent } });
    assert.equal(pulled.status, 200);
    assert.equal(await text(page, "#token-rows tr:first-child td:nth-child(7)"), "—", "no report yet");
    // Its usage metrics, as the firewall bouncer 0.0.30 sends them every 15 minutes.
    await reportUsage(token);
    page = await holderPage(licenseKey);
    await onView(page, "Feeds");
    await page.locator("#token-rows tr", { hasText: agent }).waitFor();
    const cells = await page.locator("#token-rows tr").first().locator("td").allInnerTexts();
    assert.equal(cells[2], "Challenge");
    assert.match(cells[4], /CrowdSec decisions/);
    assert.equal(cells[5], agent);
    assert.match(cells[6], /^crowdsec-firewall-bouncer v0\.0\.30\s+debian 12, started .+\s+Dropped 96 packets \(6\.0 KiB\) in 15 min, reported /);
    const chart = page.locator("#token-rows tr").first().locator("svg.chart");
    assert.equal(await chart.locator("g").count(), 30, "a bar a day");
    assert.match(await chart.getAttribute("aria-label"), /^30 days from .*: 96 packets \(6\.0 KiB\) dropped, as the bouncer reported them\.$/);
    assert.deepEqual(page.errors, []);
  });

  test("a CrowdSec engine's machine is made with its credentials file shown once, counts its alert, reports only when told, and is revoked", async () => {
    const { licenseKey } = await admin("POST", "/admin/licenses");
    let page = await holderPage(licenseKey);
    await onView(page, "Engines");
    await page.locator("#machine-name").fill("web-1");
    await page.getByRole("button", { name: "Make a machine" }).click();
    const shown = page.locator("#machine-new input");
    await shown.waitFor();
    const password = await shown.inputValue();
    assert.match(password, /^[0-9A-Za-z]{32}$/);
    const file = await text(page, "#machine-new pre");
    const [, machineId] = file.match(/login: (glm_[0-9a-f]{32})/);
    assert.ok(file.includes(`password: ${password}`), file);
    const row = page.locator("#machine-rows tr").first();
    await row.waitFor();
    assert.match(await row.innerText(), /web-1[\s\S]*glm_[\s\S]*Never[\s\S]*Never/);
    // The engine logs in and sends an alert, as crowdsec -no-api would.
    const login = await fetch(`${base}/v1/watchers/login`, {
      method: "POST",
      body: JSON.stringify({ machine_id: machineId, password, scenarios: ["crowdsecurity/ssh-bf"] }),
    }).then((r) => r.json());
    const ip = uniqueIp();
    const alert = { scenario: "crowdsecurity/ssh-bf", source: { scope: "Ip", value: ip, ip }, remediation: true, simulated: false, decisions: null };
    const posted = await fetch(`${base}/v1/alerts`, { method: "POST", headers: { Authorization: `Bearer ${login.token}` }, body: JSON.stringify([alert]) });
    assert.deepEqual(await posted.json(), ["1"]);
    page = await holderPage(licenseKey);
    await onView(page, "Your list");
    await listRow(page, ip).waitFor();
    await onView(page, "Engines");
    await page.locator("#machine-rows tr", { hasText: "1 reported, 1 added, 0 ignored" }).waitFor();
    // Report only, then revoked after a confirmation: its next login is refused.
    await page.getByLabel("What the alerts of web-1 do").selectOption("off");
    await page.locator("#machines-result", { hasText: "Saved." }).waitFor();
    const listed = await fetch(`${base}/api/machines`, { headers: { Authorization: `Bearer ${await page.evaluate(() => JSON.parse(sessionStorage.getItem("greylist.holder")).token)}` } }).then((r) => r.json());
    assert.equal(listed.machines[0].adds, false);
    await page.getByRole("button", { name: `Revoke ${machineId}` }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Revoke" }).click();
    await page.locator("#machines-result", { hasText: "revoked" }).waitFor();
    const again = await fetch(`${base}/v1/watchers/login`, { method: "POST", body: JSON.stringify({ machine_id: machineId, password }) });
    assert.equal(again.status, 401);
  });

  test("the Cloudflare edge is connected, shows its status and last push, a refusal in Cloudflare's words, and is disconnected", async () => {
    const { license, licenseKey } = await admin("POST", "/admin/licenses");
    const account = "b".repeat(24) + String(lastIp + 10_000_000).padStart(8, "0");
    const token = `browser-cloudflare-${account}`;
    await standIn("POST", "tokens", { token, accounts: [account], zones: [] });
    const page = await holderPage(licenseKey);
    await onView(page, "Cloudflare");
    await page.locator("#cloudflare-result", { hasText: "Not connected." }).waitFor();
    const form = page.locator("#cloudflare-form");
    // A token Cloudflare refuses: its own words, and nothing kept.
    await form.getByLabel("Account ID").fill(account);
    await form.getByLabel("API token").fill("not-a-token-cloudflare-knows");
    await form.getByRole("button", { name: "Connect" }).click();
    await page.locator("#cloudflare-result", { hasText: "Invalid access token" }).waitFor();
    await form.getByLabel("API token").fill(token);
    await form.getByRole("button", { name: "Connect" }).click();
    await page.locator("#cloudflare-result", { hasText: "Connected" }).waitFor();
    const status = page.locator("#cloudflare-status");
    assert.match(await status.innerText(), new RegExp(`State\\s+syncing[\\s\\S]*${account}[\\s\\S]*greylist[\\s\\S]*…${token.slice(-4)}`));
    assert.match(await status.innerText(), /Holds\s+your list only/, "the scope the form left as it was");
    assert.ok(!(await page.content()).includes(token), "the token is never on the page");
    assert.equal(await form.getByLabel("API token").inputValue(), "", "the token field is emptied");
    // An add reaches the list: the holder's alarm, run by the test hook (the clock is hours ahead).
    const ip = uniqueIp();
    await addOne(page, ip, "");
    const session = await page.evaluate(() => JSON.parse(sessionStorage.getItem("greylist.holder")).token);
    const state = async () => (await fetch(`${base}/api/cloudflare`, { headers: { Authorization: `Bearer ${session}` } }).then((r) => r.json())).state;
    for (let i = 0; i < 80 && (await state()) !== "in sync"; i++) {
      await fetch(`${base}/__test/holders/${license}/alarm`, { method: "POST", body: "" });
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    assert.deepEqual((await standIn("GET", `accounts/${account}`)).lists[0].items, [ip]);
    // A fresh load of the view's own address shows that view again.
    await onView(page, "Cloudflare");
    await page.reload();
    await status.locator("dd", { hasText: "1 added, 0 removed, completed" }).waitFor();
    assert.match(await status.innerText(), /State\s+in sync/);
    await page.getByRole("button", { name: "Disconnect" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Disconnect" }).click();
    await page.locator("#cloudflare-result", { hasText: "Disconnected" }).waitFor();
    assert.equal(await status.innerText(), "");
    // Connected again to hold the global list too: the scope is what the form chose
    // (the list it left holds items no connection put there now: taken over; the
    // page was loaded again since the form was filled).
    await form.getByLabel("Account ID").fill(account);
    await form.getByLabel("API token").fill(token);
    await form.getByLabel("What it holds").selectOption("all");
    await form.getByLabel("Take over a list of that name").check();
    await form.getByRole("button", { name: "Connect" }).click();
    await status.locator("dd", { hasText: "your list and the global list" }).waitFor();
    assert.equal((await fetch(`${base}/api/cloudflare`, { headers: { Authorization: `Bearer ${session}` } }).then((r) => r.json())).scope, "all");
  });

  test("the last 30 days are drawn as bars, with the same counts in a table", async () => {
    const { licenseKey } = await admin("POST", "/admin/licenses");
    const page = await holderPage(licenseKey);
    const [one, two] = [uniqueIp(), uniqueIp()];
    await addOne(page, one, "first");
    await addOne(page, two, "second");
    await listRow(page, one).getByRole("button", { name: `Remove ${one}` }).click();
    await page.locator("#list-result", { hasText: "removed" }).waitFor();
    await onView(page, "Overview");
    await page.locator("#activity-chart svg.chart rect.bar.removed").waitFor();
    assert.equal(await page.locator("#activity-chart svg.chart g").count(), 30, "a bar a day");
    const label = await page.locator("#activity-chart svg.chart").getAttribute("aria-label");
    assert.match(label, /^30 days from .*: 2 added, 1 removed, 0 expired, 0 refused; busiest day 3\.$/);
    await page.getByText("The same as a table").click();
    const rows = page.locator("#activity-rows tr");
    assert.equal(await rows.count(), 30);
    const today = new Date(serviceNow()).toISOString().slice(0, 10);
    const first = await rows.first().locator("td").allInnerTexts();
    assert.equal(first[0], today, "the service's today first");
    assert.deepEqual(first.slice(1), ["2", "1", "0", "0"]);
    assert.deepEqual(page.errors, []);
  });
});

describe("text from a user or the API is shown as text, never run (the CSP turned off)", () => {
  // Runs and counts itself if it is ever inserted as HTML: an image whose source
  // fails to load, and a script element.
  const markup = (n) => `<img src=x class=xss onerror="window.__xss=(window.__xss||0)+1">${n}<script>window.__xss=9</script>`;
  // The same without spaces or commas, which the list editor takes as separators:
  // an element whose handler runs as soon as it is inserted.
  const tight = (n) => `<svg/onload=window.__xss=${n}>`;

  /** Waits for `text` in `selector`, then checks nothing was inserted as markup anywhere. */
  async function shownAsText(page, selector, text) {
    // Polled rather than waited for, so that markup inserted as such fails by the
    // assertion below (what the breaks name), never by a locator's time-out.
    const shows = async () => (await page.locator(selector).allInnerTexts()).some((shown) => shown.includes(text));
    for (const until = Date.now() + 15_000; !(await shows()) && Date.now() < until;) await page.waitForTimeout(100);
    assert.ok(await shows(), `${selector} never showed as text what it was given: ${text}`);
    await page.waitForTimeout(200);
    assert.equal(await page.locator("img.xss, script:not([src]), svg[onload]").count(), 0, `no element made from ${selector}`);
    assert.equal(await page.evaluate(() => window.__xss), undefined, `nothing ran from ${selector}`);
  }

  test("on the holder page: check, add and report answers, bulk results, the list, its comments, the allow list's comments, the history and its clients, feed token details and their bouncers' reports", async () => {
    const { licenseKey } = await admin("POST", "/admin/licenses");
    const page = await holderPage(licenseKey, DESKTOP, "light", true);
    assert.equal(await page.evaluate(() => document.querySelectorAll("img").length), 0, "the page itself has no image");

    await page.getByLabel(ADDRESS).first().fill(markup(1));
    await page.locator("#check-form").getByRole("button", { name: "Check" }).click();
    await shownAsText(page, "#check-result", `[${markup(1)}] is invalid`);

    await onView(page, "Your list");
    await page.locator("#add-form").getByLabel(ADDRESS).fill(markup(2));
    await page.locator("#add-form").getByRole("button", { name: "Add", exact: true }).click();
    await shownAsText(page, "#add-result", `[${markup(2)}] is invalid`);

    await onView(page, "Report");
    await page.locator("#report-form").getByLabel("Address", { exact: true }).fill(markup(18));
    await page.locator("#report-form").getByRole("button", { name: "Report", exact: true }).click();
    await shownAsText(page, "#report-result", `[${markup(18)}] is invalid`);

    const ip = uniqueIp();
    await addOne(page, ip, markup(3));
    await shownAsText(page, "#list-rows", markup(3));
    await allowForm(page, "Add", uniqueIp(), markup(16));
    await shownAsText(page, "#allow-rows", markup(16));

    await onView(page, "Your list");
    await page.getByLabel("Addresses, one a line").fill(`${uniqueIp()}\n${tight(12)}`);
    await page.getByRole("button", { name: "Add all" }).click();
    await shownAsText(page, "#bulk-table", `[${tight(12)}] is invalid`);

    await shownAsText(page, "#list-result", "address");
    await onView(page, "History");
    await shownAsText(page, "#history-rows", ip);
    await onView(page, "Feeds");
    await page.getByRole("button", { name: "Create a feed token" }).click();
    await page.locator("#token-new input").waitFor();
    await shownAsText(page, "#token-rows", "ft_");
    // A client names itself: its User-Agent is shown as text, and so is what its usage report says.
    const token = await page.locator("#token-new input").inputValue();
    const pulled = await fetch(`${base}/v1/decisions/stream`, { headers: { "X-Api-Key": token, "User-Agent": markup(4) } });
    assert.equal(pulled.status, 200);
    await reportUsage(token, { type: markup(19), version: markup(20), os: markup(21) });
    // The history names the client that made each change, as its edge gave it.
    const login = await fetch(`${base}/v2/authentication/login/license`, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ licenseKey }),
    }).then((r) => r.json());
    const added = await fetch(`${base}/api/addIpsToGreylist`, {
      method: "POST",
      headers: { Authorization: `Bearer ${login.accessToken}`, "Content-Type": "application/json", "CF-Connecting-IP": markup(13) },
      body: JSON.stringify({ ips: [uniqueIp()] }),
    });
    assert.equal(added.status, 200);
    const again = await holderPage(licenseKey, DESKTOP, "light", true);
    await onView(again, "Feeds");
    await shownAsText(again, "#token-rows", markup(4));
    for (const n of [19, 20, 21]) await shownAsText(again, "#token-rows", markup(n));
    await onView(again, "History");
    await shownAsText(again, "#history-rows", markup(13));
    assert.deepEqual(again.errors, []);
    assert.deepEqual(page.errors, []);
  });

  test("on the operator page: edit and import refusals naming the entry, licenses and list status", async () => {
    const page = await operatorPage(DESKTOP, "light", true);
    await goTo(page, "Lists");
    const section = page.locator("[data-list=allow-list]");
    await section.getByLabel("Addresses or ranges, one a line").fill(tight(4));
    await section.getByRole("button", { name: "Add", exact: true }).click();
    await shownAsText(page, "[data-list=allow-list] .result", tight(4));

    const global = page.locator("[data-list=global-list]");
    await global.getByLabel(/Import a file/).setInputFiles({ name: "bad.txt", mimeType: "text/plain", buffer: Buffer.from(`45.68.0.1\n${tight(5)}\n`) });
    await global.getByRole("button", { name: "Replace list" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Replace" }).click();
    await shownAsText(page, "[data-list=global-list] .result", "line 2");
    assert.ok((await global.locator(".result").innerText()).includes(tight(5)));

    await goTo(page, "Licenses");
    await page.getByRole("button", { name: "Create a license" }).click();
    await page.locator("#license-new input").waitFor();
    await shownAsText(page, "#license-rows", "lic_");
    await goTo(page, "Overview");
    await shownAsText(page, "#status-rows", "Global list");
    assert.deepEqual(page.errors, []);
  });

  test("on the operator console: labels, notes, the search, a license's agents and what its bouncers report, its audit rows, key names, the audit log's actors, clients and key filter, the lookup's keys and comments, and addresses that name what does not exist", async () => {
    const page = await operatorPage(DESKTOP, "light", true);
    await goTo(page, "Licenses");
    await page.getByLabel("Label", { exact: true }).first().fill(markup(6));
    await page.getByLabel("Note", { exact: true }).first().fill(markup(7));
    await page.getByRole("button", { name: "Create a license" }).click();
    await page.locator("#license-new input").waitFor();
    await shownAsText(page, "#license-rows", markup(6));
    const license = (await page.locator("#license-new label").innerText()).match(/\((lic_[0-9a-f]+)\)$/)[1];
    // An agent names itself with its User-Agent, and its bouncer reports its type,
    // version and system: the license's picture shows them as text.
    const key = (await page.locator("#license-new input").inputValue());
    const login = await fetch(`${base}/v2/authentication/login/license`, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ licenseKey: key }),
    }).then((r) => r.json());
    const made = await fetch(`${base}/api/feedTokens`, {
      method: "POST", headers: { Authorization: `Bearer ${login.accessToken}`, "Content-Type": "application/json" }, body: JSON.stringify({ scope: "all" }),
    }).then((r) => r.json());
    await fetch(`${base}/v1/decisions/stream`, { headers: { "X-Api-Key": made.feedToken, "User-Agent": markup(8) } });
    await reportUsage(made.feedToken, { type: markup(22), version: markup(23), os: markup(24) });
    await page.locator("#license-rows tr", { hasText: license }).getByRole("link", { name: /^Open/ }).click();
    await shownAsText(page, "#license-facts", markup(7));
    await shownAsText(page, "#license-title", markup(6));
    await shownAsText(page, "#license-agents", markup(8));
    for (const n of [22, 23, 24]) await shownAsText(page, "#license-agents", markup(n));
    // Its audit rows: its creation, with the label it was given, which the
    // service's detail quotes (`label "…"`, a quote in it escaped as \").
    await shownAsText(page, "#license-audit-rows", `label ${JSON.stringify(markup(6))}`);

    await goTo(page, "Operator keys");
    await page.getByLabel("Name", { exact: true }).fill(markup(9));
    await page.getByRole("button", { name: "Create a key" }).click();
    await page.locator("#key-new input").waitFor();
    await shownAsText(page, "#key-rows", markup(9));
    // A refused call records the key's name and the client its edge gave.
    const keyValue = await page.locator("#key-new input").inputValue();
    const refused = await fetch(`${base}/admin/licenses`, { method: "POST", headers: { Authorization: `Bearer ${keyValue}`, "CF-Connecting-IP": markup(10) } });
    assert.equal(refused.status, 403);
    await goTo(page, "Audit log");
    await shownAsText(page, "#audit-rows", markup(9));
    await shownAsText(page, "#audit-rows", markup(10));
    // The key's rows alone, from its name in the list of keys: the filter names it as text.
    await goTo(page, "Operator keys");
    await page.getByRole("link", { name: `The audit rows of ${markup(9)}` }).click();
    await page.locator("#audit-rows tr", { hasText: "Refused" }).first().waitFor();
    await shownAsText(page, "#audit-rows", markup(10));
    assert.ok((await page.evaluate(() => document.querySelector("#audit-key").selectedOptions[0].textContent)).includes(markup(9)));

    await goTo(page, "Licenses");
    await page.getByLabel("Find by label").fill(markup(11));
    await page.getByRole("button", { name: "Search" }).click();
    await shownAsText(page, "#licenses-result", markup(11));

    // The lookup names the key that listed an entry, and the comment a holder gave it.
    const { key: changer } = await admin("POST", "/admin/keys", { name: markup(14), role: "admin" });
    const allowed = uniqueIp();
    const edit = await fetch(`${base}/admin/allow-list`, {
      method: "POST", headers: { Authorization: `Bearer ${changer}`, "Content-Type": "application/json" }, body: JSON.stringify({ add: [allowed] }),
    });
    assert.equal(edit.status, 200, await edit.text());
    await goTo(page, "Lookup");
    await page.getByLabel("Address", { exact: true }).fill(allowed);
    await page.getByRole("button", { name: "Look up" }).click();
    await shownAsText(page, "#lookup-answer", markup(14));
    await admin("POST", "/admin/allow-list", { remove: [allowed] });
    const held = uniqueIp();
    const holderAdd = await fetch(`${base}/api/addIpsToGreylist`, {
      method: "POST", headers: { Authorization: `Bearer ${login.accessToken}`, "Content-Type": "application/json" }, body: JSON.stringify({ ips: [held], comment: markup(15) }),
    });
    assert.equal(holderAdd.status, 200);
    await page.getByLabel("Address", { exact: true }).fill(held);
    await page.getByLabel("License (optional)").fill(license);
    await page.getByRole("button", { name: "Look up" }).click();
    await shownAsText(page, "#lookup-answer", markup(15));
    // And the comment of the holder's allow entry that holds it.
    const allowedHere = uniqueIp();
    const holderAllow = await fetch(`${base}/api/addIpToAllowlist?result_mode=json`, {
      method: "POST", headers: { Authorization: `Bearer ${login.accessToken}` }, body: new URLSearchParams({ ip: allowedHere, comment: markup(17) }),
    });
    assert.equal((await holderAllow.json()).result, `[${allowedHere}] has been added to your allow list`);
    await page.getByLabel("Address", { exact: true }).fill(allowedHere);
    await page.getByRole("button", { name: "Look up" }).click();
    await shownAsText(page, "#lookup-answer", markup(17));

    // Addresses that name what is not there: what they name is shown as text, and nothing runs.
    await page.goto(`${base}/admin/#/licenses/${encodeURIComponent(markup(25))}`);
    await shownAsText(page, "#license-title", markup(25));
    await shownAsText(page, "#license-result", "Not found");
    await page.goto(`${base}/admin/#/audit?license=${encodeURIComponent(markup(26))}&key=${encodeURIComponent(markup(27))}`);
    await shownAsText(page, "#audit-result", "Bad request");
    const offered = await page.evaluate(() => [...document.querySelectorAll("#audit-key option")].map((option) => option.textContent));
    assert.ok(offered.includes(markup(27)), "the key the address names is offered, as text");
    assert.equal(await page.locator("#audit-filters").getByLabel("License", { exact: true }).inputValue(), markup(26));
    await page.goto(`${base}/admin/#/lookup?ip=${encodeURIComponent(markup(28))}`);
    await shownAsText(page, "#lookup-result", "Bad request");
    assert.equal(await page.getByLabel("Address", { exact: true }).inputValue(), markup(28));
    assert.deepEqual(page.errors, []);
  });
});

describe("operator page", () => {
  test("a wrong admin token is refused", async () => {
    const page = await open("/admin/");
    await page.getByLabel("Admin token or operator key", { exact: true }).fill("not-the-token");
    await page.getByRole("button", { name: "Log in" }).click();
    await page.locator("#login-result", { hasText: "Unauthorized" }).waitFor();
    assert.equal(await text(page, "#login-result"), "Unauthorized: the admin token or operator key is missing or invalid");
  });

  test("creates a license whose key logs in, imports the global list, and the holder's check sees it", async () => {
    const page = await operatorPage();
    await goTo(page, "Licenses");
    await page.getByRole("button", { name: "Create a license" }).click();
    const keyBox = page.locator("#license-new input");
    await keyBox.waitFor();
    const key = await keyBox.inputValue();
    const license = (await page.locator("#license-new label").innerText()).replace("Key of ", "");
    await page.locator("#license-rows tr", { hasText: license }).waitFor();

    const [listed, ranged] = ["46.1.2.3", "46.2.0.0/16"];
    const file = `# a test list\n${listed}\n${ranged} ; a range\n`;
    await goTo(page, "Lists");
    const section = page.locator("[data-list=global-list]");
    await section.getByLabel(/Import a file/).setInputFiles({ name: "global.txt", mimeType: "text/plain", buffer: Buffer.from(file) });
    await section.getByRole("button", { name: "Replace list" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Replace" }).click();
    await section.locator(".result", { hasText: "now holds" }).waitFor();
    assert.match(await section.locator(".result").innerText(), /^The global list now holds 2 entries \(added 2, removed 0\); version \d+\.$/);
    await page.locator("#global-list-summary", { hasText: /^2 entries, version \d+$/ }).waitFor();
    await goTo(page, "Overview");
    await page.locator("#status-rows tr", { hasText: "Global list" }).locator("td:nth-child(2)", { hasText: /^2$/ }).waitFor();
    // What the answering isolate holds, beside the snapshot's size.
    assert.match(await text(page, "#isolate-memory"),
      /^The isolate that answered holds [1-9]\d*\.\d MiB of WebAssembly memory, of the 128 MB an isolate has for everything; the global list's snapshot takes \d+\.\d MiB in each isolate that has loaded all of it\.$/,
      "the overview names the WebAssembly memory of the isolate that answered");
    // The global list's size after its last change leads the chart's table, and the chart names it.
    await page.getByText("The same as a table").click();
    await page.locator("#sizes-rows tr").first().locator("td:nth-child(2)", { hasText: /^2$/ }).waitFor();
    const summary = await page.locator("#sizes-chart svg.chart").getAttribute("aria-label");
    assert.match(summary, /^\d+ changes? from \d.* to \d.*: from [\d,]+ to 2 entries, at most [\d,]+\.$/);
    assert.match(await page.locator("#sizes-chart svg.chart text.axis").last().textContent(), /^\d/);

    const holder = await holderPage(key);
    for (const ip of [listed, "46.2.200.1"]) {
      await holder.getByLabel(ADDRESS).first().fill(ip);
      await holder.locator("#check-form").getByRole("button", { name: "Check" }).click();
      await holder.locator("#check-result", { hasText: ip }).waitFor();
      assert.equal(await text(holder, "#check-result"), `[${ip}] is on global greylist`);
    }

    await goTo(page, "Lists");
    const [download] = await Promise.all([page.waitForEvent("download"), section.getByRole("button", { name: "Export" }).click()]);
    assert.equal(download.suggestedFilename(), "global-list.txt");
    const exported = readFileSync(await download.path(), "utf8");
    assert.ok(exported.includes(`${listed}\n`) && exported.includes(`${ranged}\n`), exported);
  });

  test("edits the allow list and revokes a license after a confirmation", async () => {
    const page = await operatorPage(DESKTOP, "light", false, ADMIN_TOKEN, "#/lists");
    const section = page.locator("[data-list=allow-list]");
    await section.getByLabel("Addresses or ranges, one a line").fill("47.1.1.1\n47.2.0.0/24");
    await section.getByRole("button", { name: "Add", exact: true }).click();
    await section.locator(".result", { hasText: "Added" }).waitFor();
    assert.equal(await section.locator(".result").innerText(), "Added 2, removed 0.");

    const { license } = await admin("POST", "/admin/licenses");
    await page.reload();
    // The address kept the view: the lists again, the session still open.
    await page.locator("#lists-title:focus").waitFor();
    await goTo(page, "Licenses");
    const row = page.locator("#license-rows tr", { hasText: license });
    await row.waitFor();
    await row.getByRole("button", { name: `Revoke ${license}` }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click();
    assert.equal(await row.getByRole("button", { name: `Revoke ${license}` }).count(), 1, "cancel keeps the license");
    await row.getByRole("button", { name: `Revoke ${license}` }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Revoke" }).click();
    await page.locator("#licenses-result", { hasText: "revoked" }).waitFor();
    await row.locator("time").nth(1).waitFor();
  });
});

describe("operator console", () => {
  test("every view has an address, a link in the nav and the focus on its heading; back and forward move between them; each loads only what it shows", async () => {
    // A license of its own for the licenses' view to show, whichever tests ran before.
    await admin("POST", "/admin/licenses", { label: "Views Ltd" });
    const page = await operatorPage();
    assert.equal(await page.evaluate(() => document.activeElement.id), "overview-title", "the first view's heading takes the focus");
    for (const [name, hash, heading, loads] of [
      ["Licenses", "#/licenses", "licenses-title", ["/admin/licenses"]],
      ["Lists", "#/lists", "lists-title", ["/admin/canaries", "/admin/promotions", "/admin/status"]],
      ["Lookup", "#/lookup", "lookup-title", []],
      ["Operator keys", "#/keys", "keys-title", ["/admin/keys"]],
      ["Audit log", "#/audit", "audit-title", ["/admin/audit", "/admin/keys"]],
      ["Overview", "#/", "overview-title", ["/admin/status"]],
    ]) {
      const paths = await asked(page, loads, () => goTo(page, name));
      assert.deepEqual(paths, loads, `${name} asks for what it shows and nothing more`);
      assert.equal(await page.evaluate(() => location.hash), hash);
      assert.equal(await page.evaluate(() => document.activeElement.id), heading, `${name}: the focus on its heading`);
      assert.equal(await page.locator("#views a[aria-current=page]").innerText(), name);
      assert.equal(await page.title(), `${name} — Greylist operator`);
      assert.equal(await page.locator("div.view:not([hidden])").count(), 1, "one view at a time");
    }
    // Back and forward, through the views and a search kept in the address.
    await goTo(page, "Licenses");
    await page.getByLabel("Find by label").fill("no such label at all");
    await page.getByRole("button", { name: "Search" }).click();
    const found = page.locator("#licenses-result", { hasText: "No license's label starts with" });
    assert.ok(await comesToShow(found), "a search shows the view its address names, with its search");
    assert.equal(await page.evaluate(() => location.hash), "#/licenses?q=no+such+label+at+all");
    await goTo(page, "Lookup");
    await page.goBack();
    const searched = page.locator("#licenses-result", { hasText: "No license's label starts with" });
    assert.ok(await comesToShow(searched), "back shows the view its address names, with its search");
    assert.equal(await page.getByLabel("Find by label").inputValue(), "no such label at all");
    await page.goBack();
    assert.ok(await comesToShow(page.locator("#license-rows tr")), "back shows the view its address names");
    assert.equal(await page.getByLabel("Find by label").inputValue(), "", "the search before it");
    assert.equal(await page.evaluate(() => document.activeElement.id), "licenses-title");
    await page.goBack();
    assert.ok(await comesToShow(page.locator("#overview-title:focus")), "back shows the view its address names");
    await page.goForward();
    assert.ok(await comesToShow(page.locator("#licenses-title:focus")), "forward shows the view its address names");
    await page.goForward();
    assert.ok(await comesToShow(searched), "forward shows the view its address names, with its search");
    // The keyboard alone: the nav's links in tab order, each opening its view.
    await page.locator("#views a").first().focus();
    await page.keyboard.press("Tab");
    await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    await page.locator("#lists-title:focus").waitFor();
    // An address opened fresh lands on its view once logged in, as a colleague's link does.
    const linked = await operatorPage(DESKTOP, "light", false, ADMIN_TOKEN, "#/audit?kind=changes");
    await linked.locator("#audit-title:focus").waitFor();
    await linked.locator("#audit-rows tr").first().waitFor();
    assert.equal(await linked.getByLabel("Kind", { exact: true }).inputValue(), "changes");
    assert.equal(await linked.locator("#audit-rows tr", { hasText: "Refused" }).count(), 0);
    assert.deepEqual(page.errors, []);
    assert.deepEqual(linked.errors, []);
  });

  test("labels a license, finds it by the start of its label in any case, opens its whole picture at its own address and edits its note", async () => {
    const page = await operatorPage();
    await goTo(page, "Licenses");
    const brand = `Acme ${Date.now()}`;
    await page.getByLabel("Label", { exact: true }).first().fill(`${brand} GmbH`);
    await page.getByLabel("Note", { exact: true }).first().fill("Berlin office");
    await page.getByRole("button", { name: "Create a license" }).click();
    await page.locator("#license-new input").waitFor();
    const key = await page.locator("#license-new input").inputValue();
    const holder = await holderPage(key);
    await addOne(holder, uniqueIp(), "seen scanning");

    await page.getByLabel("Find by label").fill(brand.toLowerCase());
    await page.getByRole("button", { name: "Search" }).click();
    // Only the license whose label starts so: every other row goes.
    await page.waitForFunction(() => document.querySelectorAll("#license-rows tr").length === 1);
    const row = page.locator("#license-rows tr", { hasText: `${brand} GmbH` });
    await row.waitFor();
    await row.getByRole("link", { name: `Open ${brand} GmbH` }).click();
    await page.locator("#license-title", { hasText: brand }).waitFor();
    assert.match(await page.evaluate(() => location.hash), /^#\/licenses\/lic_[0-9a-f]{24}$/);
    const facts = await text(page, "#license-facts");
    assert.match(facts, /Live entries\s+1 of 1,000,000/);
    assert.match(facts, /Added today\s+1 of 6,000/);
    assert.match(facts, /Note\s+Berlin office/);
    assert.equal(await page.evaluate(() => document.activeElement.id), "license-title", "the picture takes the focus");
    // Its audit rows: the license made with its label.
    await page.locator("#license-audit-rows tr", { hasText: "License created" }).waitFor();

    await page.getByLabel("Note", { exact: true }).last().fill("Moved to Munich");
    await page.getByRole("button", { name: "Save label and note" }).click();
    await page.locator("#license-result", { hasText: "Saved." }).waitFor();
    assert.match(await text(page, "#license-facts"), /Note\s+Moved to Munich/);
    await page.locator("#license-audit-rows tr", { hasText: "License labelled" }).waitFor();
    // Back to the search it was found by; forward to the license again.
    await page.goBack();
    await page.locator("#license-rows tr", { hasText: `${brand} GmbH` }).waitFor();
    assert.equal(await page.getByLabel("Find by label").inputValue(), brand.toLowerCase());
    await page.goForward();
    await page.locator("#license-facts", { hasText: "Moved to Munich" }).waitFor();
    assert.equal(await page.evaluate(() => document.activeElement.id), "license-title");
    // Its whole audit log, one link away.
    await page.getByRole("link", { name: "Its whole audit log" }).click();
    await page.locator("#audit-rows tr", { hasText: "License labelled" }).waitFor();
    assert.equal(await page.locator("#audit-filters").getByLabel("License", { exact: true }).inputValue(), (await page.evaluate(() => location.hash)).split("license=")[1]);
    await goTo(page, "Licenses");
    await page.getByLabel("Find by label").fill("no such label at all");
    await page.getByRole("button", { name: "Search" }).click();
    await page.locator("#licenses-result", { hasText: "No license's label starts with" }).waitFor();
  });

  test("a license's standing in the network is shown, suspended and reinstated from its view, each in its audit rows", async () => {
    const { license } = await admin("POST", "/admin/licenses", { label: "Standing Ltd" });
    const page = await operatorPage(DESKTOP, "light", false, ADMIN_TOKEN, `#/licenses/${license}`);
    await page.locator("#license-title", { hasText: "Standing Ltd" }).waitFor();
    assert.equal(await text(page, "#license-network"), "Counting: its reports count towards promotions.");
    assert.equal(await page.getByRole("button", { name: "Reinstate in the network" }).count(), 0);
    await page.getByRole("button", { name: "Suspend from the network" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Suspend" }).click();
    await page.locator("#license-result", { hasText: "Suspended from the network." }).waitFor();
    assert.match(await text(page, "#license-network"), /^Suspended by the operator since .+: its reports count for nothing\.$/);
    await page.getByRole("button", { name: "Reinstate in the network" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Reinstate" }).click();
    await page.locator("#license-result", { hasText: "Reinstated in the network." }).waitFor();
    assert.match(await text(page, "#license-network"), /^Counting: its reports count towards promotions, since .+\.$/);
    // Each change's audit row goes to the directory from the holder's object, by its alarm.
    assert.equal((await fetch(`${base}/__test/holders/${license}/alarm`, { method: "POST" })).status, 200);
    await page.reload();
    await page.locator("#license-audit-rows tr", { hasText: "network: counting" }).waitFor();
    assert.equal(await page.locator("#license-audit-rows tr", { hasText: "network: suspended" }).count(), 1);
    assert.deepEqual(page.errors, []);
  });

  test("a license's view shows what its bouncers and engines report of themselves, with a chart, and is revoked from there", async () => {
    const { license, licenseKey } = await admin("POST", "/admin/licenses", { label: "Bouncing Ltd" });
    const login = await fetch(`${base}/v2/authentication/login/license`, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ licenseKey }),
    }).then((r) => r.json());
    const holderCall = (path, body) => fetch(`${base}${path}`, {
      method: "POST", headers: { Authorization: `Bearer ${login.accessToken}`, "Content-Type": "application/json" }, body: JSON.stringify(body),
    }).then((r) => r.json());
    const token = await holderCall("/api/feedTokens", { scope: "all" });
    await reportUsage(token.feedToken, { packets: 1200, bytes: 72_000 });
    const machine = await holderCall("/api/machines", { name: "web-1" });
    const engine = await fetch(`${base}/v1/watchers/login`, {
      method: "POST", body: JSON.stringify({ machine_id: machine.machineId, password: machine.password }),
    }).then((r) => r.json());
    const metrics = {
      log_processors: [{
        version: "v1.6.3", os: { name: "ubuntu", version: "24.04" }, utc_startup_timestamp: Math.floor(serviceNow() / 1000) - 60,
        datasources: { file: 2 }, feature_flags: [], hub_items: {}, metrics: [],
      }],
    };
    const reported = await fetch(`${base}/v1/usage-metrics`, {
      method: "POST", headers: { Authorization: `Bearer ${engine.token}`, "Content-Type": "application/json" }, body: JSON.stringify(metrics),
    });
    assert.equal(reported.status, 201, await reported.text());

    const page = await operatorPage(DESKTOP, "light", false, ADMIN_TOKEN, `#/licenses/${license}`);
    await page.locator("#license-title", { hasText: "Bouncing Ltd" }).waitFor();
    const agent = page.locator("#license-agents tr").first();
    await agent.locator("svg.chart").waitFor();
    assert.match(await agent.innerText(), /crowdsec-firewall-bouncer v0\.0\.30[\s\S]*Dropped 1,200 packets \(70\.3 KiB\) in 15 min/);
    assert.equal(await agent.locator("svg.chart g").count(), 30, "a bar a day");
    assert.match(await page.locator("#license-machines tr").first().innerText(), /web-1[\s\S]*v1\.6\.3[\s\S]*ubuntu 24\.04, started [\s\S]*2 data sources/);
    await page.getByRole("button", { name: "Revoke this license" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Revoke" }).click();
    await page.locator("#license-result", { hasText: "revoked" }).waitFor();
    assert.match(await text(page, "#license-facts"), /Revoked\s+\S/);
    assert.equal(await page.getByRole("button", { name: "Revoke this license" }).count(), 0, "revoked once");
    await page.locator("#license-audit-rows tr", { hasText: "License revoked" }).waitFor();
    assert.deepEqual(page.errors, []);
  });

  test("the audit log is filtered by kind, key, license and time, each kept in an address a colleague can open", async () => {
    const { license } = await admin("POST", "/admin/licenses", { label: "Filtered Ltd" });
    const { id: keyId, key } = await admin("POST", "/admin/keys", { name: "Robin", role: "read" });
    const refused = await fetch(`${base}/admin/licenses`, { method: "POST", headers: { Authorization: `Bearer ${key}` } });
    assert.equal(refused.status, 403);
    const page = await operatorPage(DESKTOP, "light", false, ADMIN_TOKEN, "#/audit");
    await page.locator("#audit-rows tr", { hasText: "Robin" }).first().waitFor();
    // The audit view's own fields: every view is in the page, and a hidden one's
    // labels (the license view's section is labelled "License") still count.
    const filters = page.locator("#audit-filters");

    await filters.getByLabel("Kind", { exact: true }).selectOption("changes");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForFunction(() => location.hash === "#/audit?kind=changes");
    // The unfiltered page shows until the filtered one's answer replaces it, and it
    // has a "License created" row too: wait for its refusals to go, then count.
    await page.locator("#audit-rows tr", { hasText: "Refused" }).first().waitFor({ state: "detached" });
    await page.locator("#audit-rows tr", { hasText: "License created" }).first().waitFor();
    assert.equal(await page.locator("#audit-rows tr", { hasText: "Refused" }).count(), 0, "changes only");

    await filters.getByLabel("Kind", { exact: true }).selectOption({ label: "Everything" });
    await filters.getByLabel("Key", { exact: true }).selectOption(keyId);
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForFunction((id) => location.hash === `#/audit?key=${id}`, keyId);
    await page.locator("#audit-rows tr", { hasText: "Refused" }).first().waitFor();
    const byKey = await page.locator("#audit-rows tr td:nth-child(3)").allInnerTexts();
    assert.ok(byKey.length > 0 && byKey.every((by) => by === "Robin"), byKey.join(", "));

    await filters.getByLabel("Key", { exact: true }).selectOption({ label: "Any key" });
    await filters.getByLabel("License", { exact: true }).fill(license);
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForFunction((id) => location.hash === `#/audit?license=${id}`, license);
    await page.locator("#audit-rows tr", { hasText: "License created" }).waitFor();
    assert.deepEqual(await page.locator("#audit-rows tr td:nth-child(5)").allInnerTexts(), [license]);

    // Nothing is recorded a day ahead of the service's clock.
    const ahead = new Date(serviceNow() + 86_400_000);
    const local = (at) => new Date(at.getTime() - at.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    await filters.getByLabel("From", { exact: true }).fill(local(ahead));
    await page.getByRole("button", { name: "Filter" }).click();
    await page.locator("#audit-result", { hasText: "No row matches these filters." }).waitFor();
    // The time as URLSearchParams writes it: its colons escaped.
    assert.match(await page.evaluate(() => location.hash), /^#\/audit\?license=lic_[0-9a-f]{24}&from=\d{4}-\d\d-\d\dT\d\d%3A\d\d%3A\d\dZ$/);
    // Before that moment, the license's row again; the address a colleague is sent opens the same.
    await filters.getByLabel("From", { exact: true }).fill("");
    await filters.getByLabel("Before", { exact: true }).fill(local(ahead));
    await page.getByRole("button", { name: "Filter" }).click();
    await page.locator("#audit-rows tr", { hasText: "License created" }).waitFor();
    const shared = await page.evaluate(() => location.hash);
    const colleague = await operatorPage(DESKTOP, "light", false, ADMIN_TOKEN, shared);
    await colleague.locator("#audit-rows tr", { hasText: "License created" }).waitFor();
    assert.equal(await colleague.locator("#audit-filters").getByLabel("License", { exact: true }).inputValue(), license);
    assert.equal(await colleague.locator("#audit-filters").getByLabel("Before", { exact: true }).inputValue(), local(ahead),
      "the address a colleague opens keeps the Before time");
    await colleague.getByRole("link", { name: "Clear" }).click();
    await colleague.locator("#audit-rows tr", { hasText: "Refused" }).first().waitFor();
    assert.deepEqual(page.errors, []);
  });

  test("a colleague's read key sees everything, and a change it tries is refused with why and recorded", async () => {
    const page = await operatorPage(DESKTOP, "light", false, ADMIN_TOKEN, "#/keys");
    await page.getByLabel("Name", { exact: true }).fill("Sam from support");
    await page.getByLabel("Role").selectOption("read");
    await page.getByRole("button", { name: "Create a key" }).click();
    await page.locator("#key-new input").waitFor();
    const key = await page.locator("#key-new input").inputValue();
    assert.match(key, /^gok_[0-9a-f]{64}$/);

    const reader = await operatorPage(DESKTOP, "light", false, key);
    await goTo(reader, "Audit log");
    await reader.locator("#audit-rows tr").first().waitFor();
    await goTo(reader, "Licenses");
    await reader.locator("#license-rows tr").first().waitFor();
    await reader.getByRole("button", { name: "Create a license" }).click();
    await reader.locator("#licenses-result", { hasText: "Forbidden" }).waitFor();
    assert.equal(await text(reader, "#licenses-result"), 'Forbidden: the operator key "Sam from support" has the role read: it can see everything and change nothing');
    // To the overview, its status loaded, while the key stands: once it is
    // revoked, showing a view is itself a call the service refuses.
    await Promise.all([
      reader.waitForResponse((response) => new URL(response.url()).pathname === "/admin/status"),
      goTo(reader, "Overview"),
    ]);

    await goTo(page, "Audit log");
    const refused = page.locator("#audit-rows tr", { hasText: "Refused" }).filter({ hasText: "Sam from support" }).first();
    await refused.waitFor();
    assert.match(await refused.innerText(), /Sam from support[\s\S]*POST \/admin\/licenses[\s\S]*403/);
    await goTo(page, "Operator keys");
    const keyRow = page.locator("#key-rows tr", { hasText: "Sam from support" });
    await keyRow.getByRole("button", { name: "Revoke the key Sam from support" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Revoke" }).click();
    await page.locator("#keys-result", { hasText: "revoked" }).waitFor();
    await reader.locator("div.view[data-view=overview]").getByRole("button", { name: "Refresh" }).click();
    await reader.locator("#login-view").waitFor({ state: "visible" });
    assert.equal(await text(reader, "#login-result"), "Unauthorized: the admin token or operator key is missing or invalid. Log in again.");
  });

  test("the lookup box says which entry lists an address, when and by whom, and whether a license holds or allows it", async () => {
    const { license, licenseKey } = await admin("POST", "/admin/licenses", { label: "Lookup Ltd" });
    await admin("POST", "/admin/global-list", { add: ["48.1.0.0/16"] });
    await admin("POST", "/admin/allow-list", { add: ["48.2.0.1"] });
    const holder = await holderPage(licenseKey);
    await addOne(holder, "48.3.0.1", "seen probing");
    await allowForm(holder, "Add", "48.5.0.0/24", "our office");
    const page = await operatorPage(DESKTOP, "light", false, ADMIN_TOKEN, "#/lookup");
    const look = async (ip, id = "") => {
      await page.getByLabel("Address", { exact: true }).fill(ip);
      await page.getByLabel("License (optional)").fill(id);
      await page.getByRole("button", { name: "Look up" }).click();
      await page.locator("#lookup-result", { hasText: ip }).waitFor();
      return text(page, "#lookup-answer");
    };
    const global = await look("48.1.2.3");
    assert.equal(await text(page, "#lookup-result"), "48.1.2.3 is listed.");
    assert.match(global, /48\.1\.0\.0\/16\s+Edit\s+.+\s+ADMIN_TOKEN/);
    await look("48.2.0.1");
    assert.equal(await text(page, "#lookup-result"), "48.2.0.1 is on the allow list: no feed serves it.");
    const personal = await look("48.3.0.1", license);
    assert.match(personal, new RegExp(`License ${license} lists it as 48\\.3\\.0\\.1 since .+ \\(“seen probing”\\)`));
    const allowing = await look("48.5.0.9", license);
    assert.match(allowing, new RegExp(`License ${license} does not list it\\.\\s+This holder allows it: 48\\.5\\.0\\.0/24 \\(our office\\), since \\S`));
    await look("48.4.0.1");
    assert.equal(await text(page, "#lookup-result"), "48.4.0.1 is not listed.");
    // A lookup has an address of its own: a colleague's link answers it at once.
    const linked = await operatorPage(DESKTOP, "light", false, ADMIN_TOKEN, `#/lookup?ip=48.3.0.1&license=${license}`);
    await linked.locator("#lookup-result", { hasText: "48.3.0.1 is listed." }).waitFor();
    assert.match(await text(linked, "#lookup-answer"), new RegExp(`License ${license} lists it as 48\\.3\\.0\\.1`));
    assert.equal(await linked.getByLabel("License (optional)").inputValue(), license);
    assert.deepEqual(linked.errors, []);
  });
});

describe("both pages", () => {
  /** Serious and critical axe-core findings on the page as it is now. */
  async function violations(page) {
    await page.evaluate(readFileSync(AXE, "utf8"));
    const found = await page.evaluate(async () => (await window.axe.run(document, { resultTypes: ["violations"] })).violations);
    return found
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
  }

  test("no serious or critical accessibility violation, logged out or in, light or dark", async () => {
    const { licenseKey } = await admin("POST", "/admin/licenses");
    for (const colorScheme of ["light", "dark"]) {
      const loggedOut = [await open("/", DESKTOP, colorScheme), await open("/admin/", DESKTOP, colorScheme)];
      for (const page of loggedOut) {
        assert.deepEqual(await violations(page), [], `${page.url()} (${colorScheme})`);
      }
      // Every view of the holder's page, as it shows once loaded, with rows in its tables.
      const holder = await holderPage(licenseKey, DESKTOP, colorScheme);
      await addOne(holder, uniqueIp(), "for the accessibility check");
      await allowForm(holder, "Add", uniqueIp(), "for the accessibility check");
      const shown = {
        Overview: "#activity-chart svg",
        "Your list": "#list-rows tr",
        "Allow list": "#allow-rows tr",
        Report: "#report-form",
        Feeds: "#tokens-result:not(:empty)",
        Engines: "#machines-result:not(:empty)",
        Cloudflare: "#cloudflare-result:not(:empty)",
        History: "#history-rows tr",
      };
      for (const [name, selector] of Object.entries(shown)) {
        await onView(holder, name);
        await holder.locator(selector).first().waitFor();
        assert.deepEqual(await violations(holder), [], `the holder's ${name} (${colorScheme})`);
      }
      // Every view of the console, as it shows once loaded: a license's picture and a lookup's answer too.
      const operator = await operatorPage(DESKTOP, colorScheme);
      const loaded = {
        Overview: "#status-rows tr",
        Licenses: "#license-rows tr",
        Lists: "#global-list-summary:not(:empty)",
        Lookup: "#lookup-form",
        "Operator keys": "#keys-result",
        "Audit log": "#audit-rows tr",
      };
      for (const [name, selector] of Object.entries(loaded)) {
        await goTo(operator, name);
        await operator.locator(selector).first().waitFor({ state: "attached" });
        assert.deepEqual(await violations(operator), [], `${name} (${colorScheme})`);
      }
      await goTo(operator, "Licenses");
      await operator.locator("#license-rows tr").first().getByRole("link", { name: /^Open/ }).click();
      await operator.locator("#license-detail:not([hidden]) dd").first().waitFor();
      await operator.locator("#license-audit-rows tr").first().waitFor();
      assert.deepEqual(await violations(operator), [], `a license (${colorScheme})`);
      await goTo(operator, "Lookup");
      await operator.getByLabel("Address", { exact: true }).fill("46.1.2.3");
      await operator.getByRole("button", { name: "Look up" }).click();
      await operator.locator("#lookup-result", { hasText: "46.1.2.3" }).waitFor();
      assert.deepEqual(await violations(operator), [], `a lookup (${colorScheme})`);
    }
  });
});
