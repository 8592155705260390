// The license holder's page: log in with the license key, then views with
// addresses of their own under #/: the overview (the quota, the last 30 days,
// check an address), the list (add, bulk changes, the list itself), the allow
// list, reports of attackers, feed tokens with who pulls with them and what
// their bouncers report they dropped, the holder's CrowdSec engines (machines)
// with what their alerts came to, their Cloudflare edge (the list kept in
// sync: its status, last push and last error, in Cloudflare's words) and the
// history. Links, back and forward move between views; each loads only what
// it shows, and focus moves to its heading.
import { ApiError, Session, login } from "./api.js";
import { $, Page } from "./page.js";
import { activityChart, bouncerUsage, engineUsage } from "./chart.js";
import { busy, confirmAction, el, fill, lines, say, secretBox, show, when } from "./ui.js";

const session = new Session("greylist.holder");
const view = new Page(session, "license-key", () => {
  show($("who"), "License ", el("code", {}, licenseOf(session.token)));
  route();
});
/** The bulk routes take at most this many addresses a request. */
const BULK_MAX = 1000;
const PAGE = 50;

/** A holder route in JSON mode, with form fields. */
function post(path, fields = {}) {
  const body = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) if (value !== "" && value != null) body.append(name, value);
  return session.call(`${path}?result_mode=json`, { method: "POST", body });
}

/** The license id the token names (its `sub`); only shown, never trusted. */
function licenseOf(token) {
  try {
    const payload = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(payload)).sub ?? "";
  } catch {
    return "";
  }
}

/** With IPv6 on, the address fields say so and phones offer a full keyboard. */
function takeIpv6() {
  for (const id of ["check-ip", "add-ip"]) $(id).labels[0].textContent = "IP address";
  for (const id of ["check-ip", "add-ip", "report-ip"]) {
    const input = $(id);
    input.inputMode = "text";
    input.placeholder = "1.2.3.4 or 2a00:1450::1";
  }
}

/** Whether the service takes IPv6, asked once a session: the address fields of every view say so. */
let ipv6Asked = null;
function knowIpv6() {
  ipv6Asked ??= session.call("/api/quota")
    .then(learnIpv6)
    .catch((error) => { ipv6Asked = null; throw error; });
  return ipv6Asked;
}

/** What a quota's answer says of IPv6, taken once: by the overview's quota or by `knowIpv6`. */
function learnIpv6(quota) {
  if (quota.ipv6) takeIpv6();
  ipv6Asked ??= Promise.resolve();
}

// ---------------------------------------------------------------------------
// Views and their addresses.

/** Each view: its title, its heading (which takes the focus) and what it loads when shown. */
const VIEWS = {
  overview: { title: "Overview", heading: "quota-title", nav: "overview", show: () => Promise.all([loadQuota(), loadActivity()]) },
  list: { title: "Your challenge list", heading: "add-title", nav: "list", show: () => Promise.all([view.guard($("list-result"), knowIpv6), loadList(false)]) },
  allow: { title: "Your allow list", heading: "allow-title", nav: "allow", show: () => loadAllow(false) },
  report: { title: "Report an attacker", heading: "report-title", nav: "report", show: () => view.guard($("report-result"), knowIpv6) },
  feeds: { title: "Feed tokens", heading: "tokens-title", nav: "feeds", show: () => loadTokens() },
  engines: { title: "CrowdSec engines", heading: "machines-title", nav: "engines", show: () => loadMachines() },
  cloudflare: { title: "Your Cloudflare edge", heading: "cloudflare-title", nav: "cloudflare", show: () => loadCloudflare() },
  history: { title: "History", heading: "history-title", nav: "history", show: () => loadHistory(false) },
};

/** The view an address names (`#/feeds`); any other address is the overview. */
function parseAddress(hash) {
  const name = hash.replace(/^#\/?/, "").split(/[/?]/)[0];
  return { view: Object.hasOwn(VIEWS, name) ? name : "overview" };
}

const route = view.views(VIEWS, parseAddress, "Greylist");

$("login-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const button = event.submitter;
  busy(button, async () => {
    try {
      const answer = await login($("license-key").value.trim());
      session.start(answer.accessToken, answer.expiresIn);
      $("license-key").value = "";
      say($("login-result"), "");
      view.showApp();
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      say($("login-result"), error.message, "error");
    }
  });
});

async function loadQuota() {
  await view.guard($("quota-result"), async () => {
    const quota = await session.call("/api/quota");
    learnIpv6(quota);
    const line = (name, allowance) => [
      el("dt", {}, name),
      el("dd", {}, `${allowance.used} used, ${allowance.left} left of ${allowance.limit} `,
        el("meter", { min: 0, max: allowance.limit, value: allowance.used, "aria-label": `${name} used` })),
    ];
    show($("quota"),
      line("Additions", quota.additions),
      line("Removals", quota.removals),
      el("dt", {}, "Refused today"), el("dd", {}, String(quota.refused)),
      el("dt", {}, "Resets"), el("dd", {}, when(quota.resetsAt), " (00:00 UTC)"));
  });
}

$("check-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const result = $("check-result");
  busy(event.submitter, () => view.guard(result, async () => {
    const ip = $("check-ip").value.trim();
    const answer = await post("/api/checkIpOnGreylist", { ip });
    // Whether the global list has it from the holders' reports, and from how many (never whose).
    const network = answer.result.endsWith(" is on global greylist") ? await post("/api/networkStatus", { ip }) : {};
    say(result, network.promoted
      ? `${answer.result} (promoted by the network: reported by ${network.holders} license holders)`
      : answer.result);
  }));
});

$("add-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const result = $("add-result");
  busy(event.submitter, () => view.guard(result, async () => {
    const answer = await post("/api/addIpToGreylist", {
      ip: $("add-ip").value.trim(),
      ttl: $("add-ttl").value,
      comment: $("add-comment").value,
    });
    say(result, answer.result);
    afterChange();
  }));
});

/**
 * After a change the list moved (the quota, history and activity did too, and
 * their views load them again when shown).
 */
function afterChange() {
  return loadList(false);
}

async function loadActivity() {
  await view.guard($("activity-result"), async () => {
    const { days } = await session.call("/api/activity");
    show($("activity-chart"), activityChart(days));
    fill($("activity-rows"), days.slice().reverse().map((day) => el("tr", {},
      el("td", {}, day.date), el("td", {}, String(day.added)), el("td", {}, String(day.removed)),
      el("td", {}, String(day.expired)), el("td", {}, String(day.refused)))));
  });
}

$("bulk-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const operation = event.submitter.value;
  const result = $("bulk-result");
  const ips = lines($("bulk-ips").value);
  if (ips.length === 0) return say(result, "Paste at least one address.", "error");
  const path = operation === "add" ? "/api/addIpsToGreylist" : "/api/deleteIpsFromGreylist";
  busy(event.submitter, () => view.guard(result, async () => {
    const rows = [];
    for (let start = 0; start < ips.length; start += BULK_MAX) {
      const answer = await session.call(`${path}?result_mode=json`, { method: "POST", body: { ips: ips.slice(start, start + BULK_MAX) } });
      rows.push(...answer.results);
    }
    say(result, `${rows.length} ${rows.length === 1 ? "address" : "addresses"} answered.`);
    const body = el("tbody");
    show($("bulk-table"), el("table", { class: "cards" },
      el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "Address"), el("th", { scope: "col" }, "Result"))), body));
    fill(body, rows.map((row) => el("tr", {}, el("td", { class: "ip" }, row.ip), el("td", {}, row.result))));
    $("bulk-table").hidden = false;
    afterChange();
  }));
});

/**
 * A report of an attacker: the categories ticked, as a comma list. It changes
 * nothing on the holder's lists, and the page shows no count of reports, so
 * nothing else is loaded again.
 */
$("report-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  const result = $("report-result");
  const categories = [...form.querySelectorAll("input[name=categories]:checked")].map((box) => box.value);
  busy(event.submitter, () => view.guard(result, async () => {
    const answer = await post("/api/reportIp", {
      ip: $("report-ip").value.trim(),
      categories: categories.join(","),
      comment: $("report-comment").value,
    });
    say(result, answer.result);
  }));
});

const loadList = view.pagedTable({
  rows: $("list-rows"),
  more: $("list-more"),
  result: $("list-result"),
  fetchPage: async (cursor) => {
    const page = await post("/api/listGreylist", { prefix: $("list-prefix").value.trim(), limit: PAGE, cursor });
    const rows = page.entries.map((entry) => el("tr", {},
      el("td", { class: "ip" }, entry.ip),
      el("td", {}, entry.comment ?? ""),
      el("td", {}, when(entry.addedAt)),
      el("td", {}, entry.expiresAt ? when(entry.expiresAt) : "Never"),
      el("td", {}, el("button", { type: "button", class: "danger", "aria-label": `Remove ${entry.ip}`, onclick: (e) => removeEntry(e.currentTarget, entry.ip.replace(/\/64$/, "")) }, "Remove"))));
    return { rows, cursor: page.cursor, message: page.result };
  },
});

/** A /64 entry is removed through its first address, as any address in it would. */
async function removeEntry(button, ip) {
  const result = $("list-result");
  await busy(button, () => view.guard(result, async () => {
    const answer = await post("/api/deleteIpFromGreylist", { ip });
    // The list's own count would overwrite the answer if it came later.
    await afterChange();
    say(result, answer.result);
  }));
}

$("list-form").addEventListener("submit", (event) => {
  event.preventDefault();
  loadList(false);
});

const loadAllow = view.pagedTable({
  rows: $("allow-rows"),
  more: $("allow-more"),
  result: $("allow-result"),
  fetchPage: async (cursor) => {
    const page = await post("/api/listAllowlist", { limit: PAGE, cursor });
    const rows = page.entries.map((entry) => el("tr", {},
      el("td", { class: "ip" }, entry.ip),
      el("td", {}, entry.comment ?? ""),
      el("td", {}, when(entry.addedAt)),
      el("td", {}, el("button", { type: "button", class: "danger", "aria-label": `Remove ${entry.ip} from your allow list`, onclick: (e) => removeAllowed(e.currentTarget, entry.ip) }, "Remove"))));
    return { rows, cursor: page.cursor, message: page.result };
  },
});

/**
 * An add to or removal from the allow list. An added range takes the challenge
 * list's entries inside it away as the day's removals: the list's view shows
 * that when it is shown.
 */
async function changeAllowList(path, fields) {
  const answer = await post(path, fields);
  // The allow list's own count would overwrite the answer if it came later.
  await loadAllow(false);
  say($("allow-result"), answer.result);
}

$("allow-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const operation = event.submitter.value;
  const result = $("allow-result");
  const ip = $("allow-ip").value.trim();
  busy(event.submitter, () => view.guard(result, async () => {
    if (operation === "check") return say(result, (await post("/api/checkIpOnAllowlist", { ip })).result);
    if (operation === "add") return changeAllowList("/api/addIpToAllowlist", { ip, comment: $("allow-comment").value });
    return changeAllowList("/api/deleteIpFromAllowlist", { ip });
  }));
});

async function removeAllowed(button, ip) {
  await busy(button, () => view.guard($("allow-result"), () => changeAllowList("/api/deleteIpFromAllowlist", { ip })));
}

/** The history's words for the allow list's changes; the others read as their codes. */
const changeLabel = { allow_added: "allowed", allow_removed: "no longer allowed", extended: "expiry extended" };

const loadHistory = view.pagedTable({
  rows: $("history-rows"),
  more: $("history-more"),
  result: $("history-result"),
  fetchPage: async (cursor) => {
    const page = await post("/api/greylistHistory", { limit: PAGE, cursor });
    const rows = page.entries.map((change) => el("tr", {},
      el("td", {}, when(change.at)),
      el("td", {}, changeLabel[change.change] ?? change.change.replace("_", " ")),
      el("td", { class: "ip" }, change.ip),
      el("td", { class: "mono" }, change.client ?? "—")));
    return { rows, cursor: page.cursor, message: page.result };
  },
});

$("history-refresh").addEventListener("click", () => loadHistory(false));

const scopeLabel = { personal: "Your list", all: "Your list and the global list" };
const decisionLabel = { ban: "Block", captcha: "Challenge" };
const pulledLabel = {
  text: "the text feed", json: "the JSON feed", mikrotik: "a MikroTik script", nftables: "an nftables file",
  ipset: "an ipset file", decisions: "CrowdSec decisions", live: "a CrowdSec live lookup", feed: "the feed",
};

/** When a token last pulled, what, and whether it keeps to its usual interval. */
function lastPull(token) {
  if (!token.lastUsed) return "Never";
  const state = token.keepingUp === false
    ? el("span", { class: "badge late" }, "late")
    : token.keepingUp ? el("span", { class: "badge ok" }, "keeping up") : null;
  return [when(token.lastUsed), " ", state, el("br"), el("span", { class: "hint" }, pulledLabel[token.pulled] ?? token.pulled ?? "")];
}

/** A cut token's setting, and what its last cut pull left out. */
function cutLabel(token) {
  if (token.maxItems == null) return null;
  const entries = (n) => `${n.toLocaleString()} ${n === 1 ? "entry" : "entries"}`;
  const leftOut = token.leftOut == null ? "" : `, ${token.leftOut.toLocaleString()} left out last pull`;
  return [el("br"), el("span", { class: "hint" }, `at most ${entries(token.maxItems)}${leftOut}`)];
}

async function loadTokens() {
  const result = $("tokens-result");
  await view.guard(result, async () => {
    const { feedTokens } = await session.call("/api/feedTokens");
    fill($("token-rows"), feedTokens.map((token) => el("tr", {},
      el("td", { class: "mono" }, token.id),
      el("td", {}, (scopeLabel[token.scope] ?? token.scope) + (token.aggregate ? ", merged" : ""), cutLabel(token)),
      el("td", {}, decisionLabel[token.decisionType] ?? token.decisionType),
      el("td", {}, when(token.createdAt)),
      el("td", {}, lastPull(token)),
      el("td", { class: "agent" }, token.userAgent ?? "—"),
      el("td", {}, bouncerUsage(token.usage)),
      el("td", {}, el("button", { type: "button", class: "danger", "aria-label": `Revoke ${token.id}`, onclick: (e) => revokeToken(e.currentTarget, token.id) }, "Revoke")))));
    $("token-table").hidden = feedTokens.length === 0;
    say(result, feedTokens.length ? "" : "No feed tokens yet.");
  });
}

$("token-create").addEventListener("click", (event) => {
  const result = $("tokens-result");
  busy(event.currentTarget, () => view.guard(result, async () => {
    const body = { scope: $("token-scope").value, decisionType: $("token-decision").value, aggregate: $("token-aggregate").value === "true" };
    const most = $("token-max-items").value.trim();
    if (most) body.maxItems = Number(most);
    const created = await session.call("/api/feedTokens", { method: "POST", body });
    show($("token-new"), secretBox(`Feed token ${created.id}`, created.feedToken, "Shown only now: copy it into your firewall's configuration."));
    await loadTokens();
  }));
});

async function revokeToken(button, id) {
  if (!(await confirmAction(`Revoke feed token ${id}? A firewall using it can no longer read the feed.`, "Revoke"))) return;
  await busy(button, () => view.guard($("tokens-result"), async () => {
    await session.call(`/api/feedTokens/${encodeURIComponent(id)}`, { method: "DELETE" });
    await loadTokens();
    say($("tokens-result"), `Feed token ${id} revoked.`, "ok");
  }));
}

/** What a machine's alerts may do: report only, or add for a while (seconds). */
const ALERTS_DO = [["off", "Report only"], ["3600", "Add for 1 hour"], ["14400", "Add for 4 hours"], ["86400", "Add for 1 day"], ["604800", "Add for 7 days"]];

/** The choice of what a machine's alerts do; a time set through the API is offered as it is. */
function alertsDo(machine) {
  const current = machine.adds ? String(machine.ttl) : "off";
  const choices = ALERTS_DO.some(([value]) => value === current) ? ALERTS_DO : [...ALERTS_DO, [current, `Add for ${machine.ttl} seconds`]];
  return el("select", { "aria-label": `What the alerts of ${machine.name ?? machine.machineId} do`, onchange: (e) => changeMachine(e.currentTarget, machine.id) },
    choices.map(([value, label]) => el("option", { value, selected: value === current }, label)));
}

function alertCounts(counts) {
  return [`${counts.alerts} `, el("br"), el("span", { class: "hint" }, `${counts.reported} reported, ${counts.added} added, ${counts.ignored} ignored`)];
}

async function loadMachines() {
  const result = $("machines-result");
  await view.guard(result, async () => {
    const { machines } = await session.call("/api/machines");
    fill($("machine-rows"), machines.map((machine) => el("tr", {},
      el("td", {}, machine.name ? [machine.name, el("br")] : null, el("code", {}, machine.machineId)),
      el("td", {}, machine.lastLoginAt ? when(machine.lastLoginAt) : "Never"),
      el("td", {}, machine.lastAlertAt ? when(machine.lastAlertAt) : "Never"),
      el("td", {}, engineUsage(machine.usage)),
      el("td", {}, alertCounts(machine.counts)),
      el("td", {}, alertsDo(machine)),
      el("td", {}, el("button", { type: "button", class: "danger", "aria-label": `Revoke ${machine.machineId}`, onclick: (e) => revokeMachine(e.currentTarget, machine.machineId, machine.id) }, "Revoke")))));
    $("machine-table").hidden = machines.length === 0;
    say(result, machines.length ? "" : "No machines yet.");
  });
}

$("machine-create").addEventListener("click", (event) => {
  const result = $("machines-result");
  busy(event.currentTarget, () => view.guard(result, async () => {
    const made = await session.call("/api/machines", { method: "POST", body: { name: $("machine-name").value.trim() } });
    const file = `url: ${location.origin}/\nlogin: ${made.machineId}\npassword: ${made.password}\n`;
    show($("machine-new"),
      secretBox(`Password of ${made.machineId}`, made.password, "Shown only now: it is kept only as a digest."),
      el("p", {}, "The engine's ", el("code", {}, "local_api_credentials.yaml"), ":"),
      el("pre", { tabindex: "0" }, file));
    $("machine-name").value = "";
    await loadMachines();
  }));
});

async function changeMachine(select, id) {
  const body = select.value === "off" ? { adds: false } : { adds: true, ttl: Number(select.value) };
  await busy(select, () => view.guard($("machines-result"), async () => {
    await session.call(`/api/machines/${encodeURIComponent(id)}`, { method: "PATCH", body });
    await loadMachines();
    say($("machines-result"), "Saved.", "ok");
  }));
}

async function revokeMachine(button, machineId, id) {
  if (!(await confirmAction(`Revoke machine ${machineId}? Its engine can no longer log in or send alerts.`, "Revoke"))) return;
  await busy(button, () => view.guard($("machines-result"), async () => {
    await session.call(`/api/machines/${encodeURIComponent(id)}`, { method: "DELETE" });
    await loadMachines();
    say($("machines-result"), `Machine ${machineId} revoked.`, "ok");
  }));
}

/** The connection's status as rows of a definition list. */
function cloudflareStatus(status) {
  const row = (term, ...value) => [el("dt", {}, term), el("dd", {}, ...value)];
  const push = status.lastPush;
  const error = status.lastError;
  return el("dl", { class: "facts" },
    row("State", status.state),
    row("Account", el("code", {}, status.accountId)),
    row("List", el("code", {}, status.listName), ` (${status.items} items${status.leftOut ? `, ${status.leftOut} left out by the cap of ${status.maxItems}` : ""})`),
    status.zoneId ? row("Zone rule", el("code", {}, status.ruleId ?? "none"), " in zone ", el("code", {}, status.zoneId)) : null,
    row("Holds", status.scope === "all" ? "your list and the global list" : "your list only"),
    row("Token", "…", el("code", {}, status.tokenEndsWith)),
    row("Last push", push ? [when(push.at), `: ${push.added} added, ${push.removed} removed, ${push.status}`] : "None yet"),
    status.pending ? row("Running", `${status.pending.kind} of ${status.pending.items} items since `, when(status.pending.since)) : null,
    row("Last error", error ? [when(error.at), ": ", error.code ? `Cloudflare error ${error.code}: ` : "", error.message] : "None"),
    status.nextAttempt && error ? row("Next attempt", when(status.nextAttempt)) : null);
}

async function loadCloudflare() {
  await view.guard($("cloudflare-result"), async () => {
    const status = await session.call("/api/cloudflare");
    if (!status.connected) {
      show($("cloudflare-status"));
      say($("cloudflare-result"), "Not connected.");
      return;
    }
    show($("cloudflare-status"), cloudflareStatus(status),
      el("button", { type: "button", class: "danger", onclick: (e) => disconnectCloudflare(e.currentTarget) }, "Disconnect"));
    say($("cloudflare-result"), "");
  });
}

$("cloudflare-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  const body = {
    accountId: form.accountId.value.trim(),
    apiToken: form.apiToken.value.trim(),
    listName: form.listName.value.trim(),
    scope: form.scope.value,
    maxItems: Number(form.maxItems.value),
    takeOver: form.takeOver.checked,
  };
  if (form.zoneId.value.trim()) body.zoneId = form.zoneId.value.trim();
  busy(event.submitter, () => view.guard($("cloudflare-result"), async () => {
    await session.call("/api/cloudflare", { method: "PUT", body });
    form.apiToken.value = "";
    await loadCloudflare();
    say($("cloudflare-result"), "Connected: the list follows your challenge list from now on.", "ok");
  }));
});

async function disconnectCloudflare(button) {
  if (!(await confirmAction("Stop keeping your Cloudflare list in sync? The list stays in your account as it is, and the token is forgotten.", "Disconnect"))) return;
  await busy(button, () => view.guard($("cloudflare-result"), async () => {
    await session.call("/api/cloudflare", { method: "DELETE" });
    await loadCloudflare();
    say($("cloudflare-result"), "Disconnected: the token is forgotten.", "ok");
  }));
}

view.start();
