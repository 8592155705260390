// The browser tests drive Debian's chromium with the pinned playwright-core, which
// speaks the DevTools protocol of the Chromium it was released with: a different
// major version may fail in ways that look like the dashboard's fault. Usage:
// node tests/browser/check-chromium.mjs /usr/bin/chromium
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

const chromium = process.argv[2] ?? "/usr/bin/chromium";
const browsers = JSON.parse(readFileSync(new URL("../../node_modules/playwright-core/browsers.json", import.meta.url)));
const expected = browsers.browsers.find((b) => b.name === "chromium").browserVersion;
const { version: playwright } = JSON.parse(readFileSync(new URL("../../node_modules/playwright-core/package.json", import.meta.url)));
let found;
try {
  found = execFileSync(chromium, ["--version"], { encoding: "utf8" }).match(/(\d+)\.[\d.]+/)?.[0];
} catch (error) {
  console.error(`${chromium} does not run (${error.message}); install Debian's chromium: apt-get install chromium`);
  process.exit(1);
}
const major = (version) => Number(version?.split(".")[0]);
if (major(found) !== major(expected)) {
  console.error(
    `${chromium} is Chromium ${found}, but playwright-core ${playwright} (package.json) drives Chromium ${major(expected)}. ` +
      `Install the chromium that matches, or pin the playwright-core released for Chromium ${major(found)}.`,
  );
  process.exit(1);
}
console.log(`Chromium ${found} matches playwright-core ${playwright} (Chromium ${major(expected)}).`);
