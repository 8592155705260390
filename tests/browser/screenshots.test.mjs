// The screenshots in docs/, made from data a customer could have (no test's
// payloads, on a service of their own), at desktop and phone width, light and dark;
// and neither page wider than a phone. Run by `make browser`; `make screenshots`
// copies them into docs/.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  DESKTOP, LONGEST_IPV6, PHONE, SCREENSHOTS,
  addOne, admin, base, holderPage, operatorPage, start, stop,
} from "./service.mjs";

before(start);
after(stop);

/** The operator's lists and licenses, and a holder whose bouncer has pulled. */
async function plausibleService() {
  await admin("PUT", "/admin/global-list", [
    "; scanners and brute-force sources, from the operator's feeds",
    "80.94.95.0/24", "141.98.10.0/24", "185.224.128.0/24", "193.142.146.0/24",
    "45.148.10.174", "2a0b:4140:ff00::/48",
  ].join("\n"));
  await admin("POST", "/admin/allow-list", { add: ["104.16.0.0/13", "162.158.0.0/15"] });
  const acme = await admin("POST", "/admin/licenses", { label: "Acme GmbH", note: "Berlin office; renews in March" });
  await admin("POST", "/admin/licenses", { label: "Nordwind Hosting", note: "Hamburg, 40 servers" });
  await admin("POST", "/admin/licenses", { label: "Café Sommer", note: "web shop" });
  await admin("POST", "/admin/keys", { name: "Sam from support", role: "read" });
  const login = await fetch(`${base}/v2/authentication/login/license`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ licenseKey: acme.licenseKey }),
  }).then((r) => r.json());
  const made = await fetch(`${base}/api/feedTokens`, {
    method: "POST", headers: { Authorization: `Bearer ${login.accessToken}`, "Content-Type": "application/json" }, body: JSON.stringify({ scope: "all" }),
  }).then((r) => r.json());
  const pulled = await fetch(`${base}/v1/decisions/stream?startup=true`, { headers: { "X-Api-Key": made.feedToken, "User-Agent": "crowdsec-firewall-bouncer/v0.0.25" } });
  assert.equal(pulled.status, 200);
  return acme.licenseKey;
}

test("screenshots at desktop and phone width, and nothing wider than a phone", async () => {
  const licenseKey = await plausibleService();
  for (const [name, viewport] of [["desktop", DESKTOP], ["phone", PHONE]]) {
    const holder = await holderPage(licenseKey, viewport);
    if (name === "desktop") {
      await addOne(holder, "91.92.240.17", "seen probing SSH");
      await addOne(holder, "178.128.94.12", "credential stuffing on the shop's login", "After 7 days");
      await addOne(holder, LONGEST_IPV6, "IPv6 scanner");
    }
    await holder.locator("#list-rows tr").nth(2).waitFor();
    await holder.locator("#history-rows tr").nth(2).waitFor();
    await holder.screenshot({ path: join(SCREENSHOTS, `holder-${name}.png`), fullPage: true });
    if (name === "desktop") {
      const dark = await holderPage(licenseKey, viewport, "dark");
      await dark.locator("#activity-chart svg.chart rect.bar.added").waitFor();
      await dark.screenshot({ path: join(SCREENSHOTS, "holder-dark.png"), fullPage: true });
    }
    const operator = await operatorPage(viewport);
    await operator.locator("#license-rows tr", { hasText: "Acme GmbH" }).getByRole("button", { name: /^Open/ }).click();
    await operator.locator("#license-detail:not([hidden]) dd").first().waitFor();
    await operator.getByLabel("Address", { exact: true }).fill("80.94.95.14");
    await operator.getByRole("button", { name: "Look up" }).click();
    await operator.locator("#lookup-result", { hasText: "80.94.95.14" }).waitFor();
    await operator.locator("#audit-rows tr").first().waitFor();
    await operator.screenshot({ path: join(SCREENSHOTS, `operator-${name}.png`), fullPage: true });
    for (const page of [holder, operator]) {
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 0, `${page.url()} at ${name} width scrolls sideways by ${overflow}px`);
    }
  }
});
