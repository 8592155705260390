// The operator's console: log in with the admin token or an operator key, then
// views with addresses of their own under /admin/#/ (the paths without `#`
// are the JSON API): the overview (the lists' status and the global list's
// size over its last changes, the network's settings), licenses and one
// license's whole picture, the lists, the lookup of why an address is listed,
// operator keys and the audit log with its filters. Links, back and forward
// move between views; each loads only what it shows, and focus moves to its
// heading.
import { ApiError, Session, SessionEnded } from "./api.js";
import { $, Page } from "./page.js";
import { bouncerUsage, engineUsage, sizeChart } from "./chart.js";
import { busy, confirmAction, el, fill, lines, say, secretBox, show, when } from "./ui.js";

const session = new Session("greylist.operator");
const view = new Page(session, "admin-token", () => route());
const PAGE = 50;
/** A license's own rows in its view: the last few, the rest in the audit view. */
const LICENSE_AUDIT_PAGE = 10;
const LIST_NAMES = { "global-list": "global list", "allow-list": "allow list" };
const LICENSE_ID = /^lic_[0-9a-f]{24}$/;

$("login-form").addEventListener("submit", (event) => {
  event.preventDefault();
  busy(event.submitter, async () => {
    session.start($("admin-token").value.trim());
    try {
      // The token is only known to be right once the API accepts it.
      await session.call("/admin/status");
      $("admin-token").value = "";
      view.showApp();
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      view.showLogin(error instanceof SessionEnded ? error.reason : error.message);
    }
  });
});

// ---------------------------------------------------------------------------
// Views and their addresses.

/** Each view: its title, its heading (which takes the focus) and what it loads when shown. */
const VIEWS = {
  overview: { title: "Overview", heading: "overview-title", nav: "overview", show: () => loadStatus() },
  licenses: { title: "Licenses", heading: "licenses-title", nav: "licenses", show: (at) => showLicenses(at.query) },
  license: { title: "License", heading: "license-title", nav: "licenses", show: (at) => openLicense(at.id) },
  lists: { title: "Lists", heading: "lists-title", nav: "lists", show: () => loadListsStatus() },
  lookup: { title: "Lookup", heading: "lookup-title", nav: "lookup", show: (at) => showLookup(at.query) },
  keys: { title: "Operator keys", heading: "keys-title", nav: "keys", show: () => loadKeys() },
  audit: { title: "Audit log", heading: "audit-title", nav: "audit", show: (at) => showAudit(at.query) },
};

/** The view an address names: `#/licenses/<id>` is one license, `#/audit?kind=…` the audit log filtered. */
function parseAddress(hash) {
  const text = hash.replace(/^#/, "");
  const mark = text.indexOf("?");
  const path = mark < 0 ? text : text.slice(0, mark);
  const query = new URLSearchParams(mark < 0 ? "" : text.slice(mark + 1));
  let parts;
  try {
    parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  } catch {
    parts = [];
  }
  if (parts[0] === "licenses" && parts.length === 2) return { view: "license", id: parts[1], query };
  if (parts.length === 1 && parts[0] !== "license" && Object.hasOwn(VIEWS, parts[0])) return { view: parts[0], query };
  return { view: "overview", query };
}

/** The address of a view with `query`'s non-empty values. */
function address(path, query = {}) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value) params.set(name, value);
  const search = params.toString();
  return `#/${path}${search ? `?${search}` : ""}`;
}

/** Goes to `hash`; one the page already shows is shown again (a search made again). */
function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

/** Shows the view the address names, moves the focus to its heading and loads what it shows. */
const route = view.views(VIEWS, parseAddress, "Greylist operator");

// ---------------------------------------------------------------------------
// The overview: the lists' status, the global list's size, the network.

async function loadStatus() {
  await view.guard($("status-result"), async () => {
    const status = await session.call("/admin/status");
    const row = (name, list) => el("tr", {},
      el("th", { scope: "row" }, name),
      el("td", {}, list.promoted > 0
        ? `${list.entries.toLocaleString()} (${list.promoted.toLocaleString()} promoted)`
        : list.entries.toLocaleString()),
      el("td", { class: "mono" }, list.version),
      el("td", {}, list.publishedAt ? when(list.publishedAt) : "Not yet"));
    fill($("status-rows"), [row("Global list", status.globalList), row("Allow list", status.allowList)]);
    const recent = status.globalList.recent;
    show($("sizes-chart"), sizeChart(recent));
    fill($("sizes-rows"), recent.slice().reverse().map((point) => el("tr", {},
      el("td", {}, when(point.at)), el("td", {}, point.entries.toLocaleString()))));
    say($("status-result"), `${status.licenses} ${status.licenses === 1 ? "license" : "licenses"} issued.`);
    show($("network-settings"), networkSettings(status));
    show($("isolate-memory"), isolateMemory(status));
  });
}

$("status-refresh").addEventListener("click", loadStatus);

/** What one isolate holds against its 128 MB: the snapshots are the first limit
 *  to bite as the global list grows. The status is the management Worker's
 *  isolate's; each isolate at the edge holds its own snapshots too. */
function isolateMemory(status) {
  const mib = (bytes) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
  return `The isolate that answered holds ${mib(status.isolate.wasmBytes)} of WebAssembly memory, ` +
    `of the 128 MB an isolate has for everything; the global list's snapshot takes ${mib(status.globalList.snapshotBytes)} ` +
    "in each isolate that has loaded all of it.";
}

/** The promotion settings in force and how many entries the network promoted. */
function networkSettings(status) {
  const network = status.network;
  if (network.promotionHolders === 0) return "Promotion is off (PROMOTION_HOLDERS is 0).";
  const keep = Math.max(network.promotionWindowSeconds, network.delistAfterSeconds);
  const probation = network.promotionProbationSeconds > 0
    ? ` A license counts once it is ${duration(network.promotionProbationSeconds)} old.` : "";
  const review = network.promotionReview === "on"
    ? ` Each promotion waits for review: ${status.pendingPromotions.toLocaleString()} waiting.` : "";
  return `In force: an address reported by ${network.promotionHolders} distinct licenses from ${network.promotionNetworks} distinct networks ` +
    `within ${duration(network.promotionWindowSeconds)} is promoted; it stays while the reports of the last ${duration(keep)} still make that.` +
    `${probation}${review} ${status.globalList.promoted.toLocaleString()} promoted now.`;
}

/** Seconds as the largest whole unit that divides them: "7 days", "90 seconds". */
function duration(seconds) {
  const units = [["day", 86400], ["hour", 3600], ["minute", 60], ["second", 1]];
  const [unit, size] = units.find(([, size]) => seconds % size === 0 && seconds >= size) ?? units[3];
  const count = seconds / size;
  return `${count} ${unit}${count === 1 ? "" : "s"}`;
}

// ---------------------------------------------------------------------------
// Licenses: made, found by label, a page at a time.

/** The licenses view for `query`'s search (`?q=`), its first page. */
function showLicenses(query) {
  $("license-q").value = query.get("q") ?? "";
  say($("licenses-result"), "");
  return loadLicenses(false);
}

const loadLicenses = view.pagedTable({
  rows: $("license-rows"),
  more: $("licenses-more"),
  result: $("licenses-result"),
  fetchPage: async (cursor) => {
    const query = new URLSearchParams({ limit: PAGE });
    const q = $("license-q").value.trim();
    if (q) query.set("q", q);
    if (cursor) query.set("cursor", cursor);
    const page = await session.call(`/admin/licenses?${query}`);
    const rows = page.licenses.map((license) => el("tr", {},
      el("td", {}, license.label || el("span", { class: "hint" }, "No label")),
      el("td", { class: "mono" }, license.license),
      el("td", {}, when(license.createdAt)),
      el("td", {}, license.revokedAt ? when(license.revokedAt) : "—"),
      el("td", {}, el("div", { class: "row" },
        el("a", {
          class: "button secondary",
          href: address(`licenses/${encodeURIComponent(license.license)}`),
          "aria-label": `Open ${license.label || license.license}`,
        }, "Open"),
        license.revokedAt ? "" : el("button", {
          type: "button",
          class: "danger",
          "aria-label": `Revoke ${license.label || license.license}`,
          onclick: (e) => revokeLicense(e.currentTarget, license.license, $("licenses-result")),
        }, "Revoke")))));
    const message = q && rows.length === 0 && !page.cursor ? `No license's label starts with "${q}".` : undefined;
    return { rows, cursor: page.cursor, message };
  },
});

$("license-search").addEventListener("submit", (event) => {
  event.preventDefault();
  navigate(address("licenses", { q: $("license-q").value.trim() }));
});

$("license-create-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const result = $("licenses-result");
  busy(event.submitter, () => view.guard(result, async () => {
    const body = { label: $("license-label").value, note: $("license-note").value };
    const created = await session.call("/admin/licenses", { method: "POST", body });
    const name = created.label ? `${created.label} (${created.license})` : created.license;
    show($("license-new"), secretBox(`Key of ${name}`, created.licenseKey, "Shown only now: give it to the license holder. The service keeps only its digest."));
    say(result, `License ${name} created.`, "ok");
    $("license-create-form").reset();
    loadLicenses(false);
  }));
});

/** Revokes license `id` after a confirmation, then shows the view it was revoked from again. */
async function revokeLicense(button, id, result) {
  if (!(await confirmAction(`Revoke license ${id}? Its key and access tokens stop working within a minute; this cannot be undone.`, "Revoke"))) return;
  await busy(button, () => view.guard(result, async () => {
    await session.call(`/admin/licenses/${encodeURIComponent(id)}`, { method: "DELETE" });
    if (opened === id && parseAddress(location.hash).view === "license") await openLicense(id);
    else await loadLicenses(false);
    say(result, `License ${id} revoked.`, "ok");
  }));
}

// ---------------------------------------------------------------------------
// One license: what it is, what it holds, who pulls it, what its engines and
// bouncers report, and its audit rows.

/** The license the view shows, if any. */
let opened = null;

const ACTIONS = {
  "license.created": "License created",
  "license.labelled": "License labelled",
  "license.revoked": "License revoked",
  "license.network": "License's network standing",
  "key.created": "Key created",
  "key.revoked": "Key revoked",
  "list.edited": "List edited",
  "list.replaced": "List replaced",
  "canaries.edited": "Canaries edited",
  "promotions.reviewed": "Promotions reviewed",
  refused: "Refused",
};

/** Who made an audit row: a key's name links to that key's rows. */
function actorOf(entry) {
  if (!entry.actor) return "No valid key";
  return entry.key ? el("a", { href: address("audit", { key: entry.key }) }, entry.actor) : entry.actor;
}

/** What an audit row acted on: a license links to its view. */
function targetOf(entry) {
  return LICENSE_ID.test(entry.target) ? el("a", { href: address(`licenses/${entry.target}`) }, entry.target) : entry.target;
}

const detailOf = (entry) => (entry.count > 1 ? `${entry.detail} (×${entry.count})` : entry.detail);

const loadLicenseAudit = view.pagedTable({
  rows: $("license-audit-rows"),
  more: $("license-audit-more"),
  result: $("license-audit-result"),
  fetchPage: async (cursor) => {
    const query = new URLSearchParams({ license: opened, limit: LICENSE_AUDIT_PAGE });
    if (cursor) query.set("cursor", cursor);
    const page = await session.call(`/admin/audit?${query}`);
    const rows = page.entries.map((entry) => el("tr", {},
      el("td", {}, when(entry.at)),
      el("td", {}, ACTIONS[entry.action] ?? entry.action),
      el("td", {}, actorOf(entry)),
      el("td", { class: "mono" }, entry.client ?? "—"),
      el("td", {}, detailOf(entry))));
    return { rows, cursor: page.cursor, message: rows.length === 0 && !page.cursor ? "No change recorded for it." : "" };
  },
});

/** Shows license `id`'s whole picture, and its audit rows beside it. */
async function openLicense(id) {
  opened = id;
  const result = $("license-result");
  $("license-title").textContent = `License ${id}`;
  $("license-lookup-link").href = address("lookup", { license: id });
  $("license-audit-link").href = address("audit", { license: id });
  await view.guard(result, async () => {
    say(result, "");
    let license;
    try {
      license = await session.call(`/admin/licenses/${encodeURIComponent(id)}`);
    } catch (error) {
      // A license no one issued: the view says so and shows nothing of another.
      for (const part of ["license-facts", "license-agents", "license-machines", "license-audit-rows"]) $(part).replaceChildren();
      $("license-revoke").hidden = true;
      throw error;
    }
    if (opened !== id) return;
    $("license-title").textContent = `License ${license.label || license.license}`;
    const fact = (term, value) => [el("dt", {}, term), el("dd", {}, value)];
    const usage = (used, limit) => `${used.toLocaleString()} of ${limit.toLocaleString()}`;
    show($("license-facts"),
      fact("License", el("span", { class: "mono" }, license.license)),
      fact("Label", license.label || "—"),
      fact("Note", license.note || "—"),
      fact("Created", when(license.createdAt)),
      fact("Revoked", license.revokedAt ? when(license.revokedAt) : "No"),
      fact("Live entries", usage(license.entries, license.limits.entries)),
      fact("Added today", usage(license.today.added, license.limits.dailyAdditions)),
      fact("Removed today", usage(license.today.removed, license.limits.dailyRemovals)),
      fact("Refused today", license.today.refused.toLocaleString()),
      fact("Last change", license.lastChange ? when(license.lastChange) : "None recorded"));
    $("license-edit-label").value = license.label;
    $("license-edit-note").value = license.note;
    showStanding(license.network);
    $("license-revoke").hidden = Boolean(license.revokedAt);
    fill($("license-agents"), license.feedTokens.map((token) => el("tr", {},
      el("td", { class: "mono" }, token.id),
      el("td", {}, token.scope + (token.aggregate ? ", merged" : "") + (token.maxItems == null ? "" : `, at most ${token.maxItems}`)),
      el("td", {}, token.lastUsed ? when(token.lastUsed) : "Never"),
      el("td", {}, token.userAgent ?? "—"),
      el("td", {}, token.pulled ?? "—"),
      el("td", {}, bouncerUsage(token.usage)))));
    if (license.feedTokens.length === 0) say(result, "No feed tokens: no agent pulls this license's feed.");
    // An object from before machines answers none.
    fill($("license-machines"), (license.machines ?? []).map((machine) => el("tr", {},
      el("td", { class: "mono" }, machine.name ? `${machine.name} (${machine.machineId})` : machine.machineId),
      el("td", {}, machine.lastLoginAt ? when(machine.lastLoginAt) : "Never"),
      el("td", {}, machine.lastAlertAt ? when(machine.lastAlertAt) : "Never"),
      el("td", {}, engineUsage(machine.usage)),
      el("td", {}, machine.counts.alerts.toLocaleString()),
      el("td", {}, machine.counts.reported.toLocaleString()),
      el("td", {}, machine.counts.added.toLocaleString()),
      el("td", {}, machine.counts.ignored.toLocaleString()),
      el("td", {}, machine.adds ? `for ${machine.ttl.toLocaleString()} s` : "no"))));
    await loadLicenseAudit(false);
  });
}

$("license-edit").addEventListener("submit", (event) => {
  event.preventDefault();
  const result = $("license-result");
  busy(event.submitter, () => view.guard(result, async () => {
    const body = { label: $("license-edit-label").value, note: $("license-edit-note").value };
    await session.call(`/admin/licenses/${encodeURIComponent(opened)}`, { method: "PATCH", body });
    await openLicense(opened);
    say(result, "Saved.", "ok");
  }));
});

$("license-revoke").addEventListener("click", (event) => revokeLicense(event.currentTarget, opened, $("license-result")));

/** A license's standing in the network, and the one button that changes it. */
function showStanding(network) {
  const text = {
    counting: network.since ? ["Counting: its reports count towards promotions, since ", when(network.since), "."] : ["Counting: its reports count towards promotions."],
    probation: ["On probation: its reports count from ", when(network.until), ", once it is old enough."],
    suspended: network.canary
      ? ["Suspended since ", when(network.since), " for reporting the canary ", el("span", { class: "mono" }, network.canary), ": its reports count for nothing."]
      : ["Suspended by the operator since ", when(network.since), ": its reports count for nothing."],
  }[network.standing];
  show($("license-network"), ...text);
  $("license-suspend").hidden = network.standing === "suspended";
  $("license-reinstate").hidden = network.standing !== "suspended";
}

for (const [button, standing, asked] of [
  ["license-suspend", "suspended", "Suspend this license from the network? Its reports, before and after, stop counting towards promotions."],
  ["license-reinstate", "counting", "Reinstate this license in the network? Its reports count again."],
]) {
  $(button).addEventListener("click", async (event) => {
    const target = event.currentTarget;
    if (!(await confirmAction(asked, standing === "suspended" ? "Suspend" : "Reinstate"))) return;
    const result = $("license-result");
    await busy(target, () => view.guard(result, async () => {
      const answer = await session.call(`/admin/licenses/${encodeURIComponent(opened)}`, { method: "PATCH", body: { network: standing } });
      showStanding(answer.network);
      say(result, standing === "suspended" ? "Suspended from the network." : "Reinstated in the network.", "ok");
      loadLicenseAudit(false);
    }));
  });
}

// ---------------------------------------------------------------------------
// The lists: edits, imports, exports, and the entries the network promoted.

/** Each list's size and version, and the network's promotions, beside their controls. */
async function loadListsStatus() {
  await view.guard($("lists-result"), async () => {
    const status = await session.call("/admin/status");
    const summary = (list) => `${list.entries.toLocaleString()} entries, version ${list.version}` +
      (list.publishedAt ? "" : ", not published yet");
    show($("global-list-summary"), summary(status.globalList));
    show($("allow-list-summary"), summary(status.allowList));
    show($("promoted-count"), networkSettings(status));
    show($("review-state"), status.network.promotionReview === "on"
      ? `Review is on: ${status.pendingPromotions.toLocaleString()} waiting.`
      : "Review is off (PROMOTION_REVIEW): the network's promotions join the global list at once.");
  });
  loadReview(false);
  loadCanaries();
}

/** The reporters of a pending promotion, as a short list: label or license, and network. */
function reportersOf(reports) {
  return el("ul", { class: "plain" }, ...reports.reporters.map((r) => el("li", {},
    el("a", { href: address(`licenses/${encodeURIComponent(r.license)}`) }, r.label || r.license),
    ` from ${r.network ?? "a network of its own"}`, r.standing === "counting" ? "" : ` (${r.standing})`,
    `: ${r.reports} ${r.reports === 1 ? "report" : "reports"}, ${r.categories.join(", ") || "no category"}, last ${when(r.lastAt)}`)));
}

/** Approves or rejects one pending promotion, then shows the queue again. */
async function decide(button, ip, decision) {
  const result = $("review-result");
  await busy(button, () => view.guard(result, async () => {
    await session.call("/admin/promotions", { method: "POST", body: { [decision]: [ip] } });
    await loadReview(false);
    say(result, `${ip} ${decision === "approve" ? "approved: it joins the global list" : "rejected: its reports until now are forgotten"}.`, "ok");
  }));
}

const loadReview = view.pagedTable({
  rows: $("review-rows"),
  more: $("review-more"),
  result: $("review-result"),
  fetchPage: async (cursor) => {
    const query = new URLSearchParams({ state: "pending", limit: 20 });
    if (cursor) query.set("cursor", cursor);
    const page = await session.call(`/admin/promotions?${query}`);
    const rows = page.promotions.map((pending) => el("tr", {},
      el("td", { class: "mono" }, el("a", { href: address("lookup", { ip: pending.ip }) }, pending.ip)),
      el("td", {}, when(pending.queuedAt)),
      el("td", {}, `${pending.reports.licenses} of ${pending.reports.needed.licenses}, ${pending.reports.networks} of ${pending.reports.needed.networks}`),
      el("td", {}, reportersOf(pending.reports)),
      el("td", {},
        el("button", { type: "button", "aria-label": `Approve ${pending.ip}`, onclick: (e) => decide(e.currentTarget, pending.ip, "approve") }, "Approve"),
        el("button", { type: "button", class: "danger", "aria-label": `Reject ${pending.ip}`, onclick: (e) => decide(e.currentTarget, pending.ip, "reject") }, "Reject"))));
    return { rows, cursor: page.cursor, message: rows.length === 0 && !page.cursor ? "Nothing waits for review." : "" };
  },
});

/** The canaries: how many, and the list itself in the field to edit. */
async function loadCanaries() {
  await view.guard($("canaries-result"), async () => {
    const response = await session.call("/admin/canaries", { accept: "text/plain" });
    const text = await response.text();
    const [head, ...entries] = text.split("\n").filter(Boolean);
    show($("canaries-summary"), entries.length === 0 ? "No canaries yet." : head.replace(/^# /, ""));
  });
}

for (const [button, operation] of [["canaries-add", "add"], ["canaries-remove", "remove"]]) {
  $(button).addEventListener("click", (event) => {
    const result = $("canaries-result");
    busy(event.currentTarget, () => view.guard(result, async () => {
      const items = lines($("canaries-entries").value);
      if (items.length === 0) return say(result, "Type at least one address or range.", "error");
      const answer = await session.call("/admin/canaries", { method: "POST", body: { [operation]: items } });
      say(result, `Added ${answer.added}, removed ${answer.removed}.`, "ok");
      loadCanaries();
    }));
  });
}

$("promoted-remove").addEventListener("click", (event) => {
  const result = $("promoted-result");
  busy(event.currentTarget, () => view.guard(result, async () => {
    const items = lines($("promoted-entries").value);
    if (items.length === 0) return say(result, "Type at least one promoted address.", "error");
    const answer = await session.call("/admin/global-list", { method: "POST", body: { removePromoted: items } });
    say(result, `Took off ${answer.promotedRemoved} promoted ${answer.promotedRemoved === 1 ? "entry" : "entries"}.`, "ok");
    loadListsStatus();
  }));
});

$("promoted-export").addEventListener("click", (event) => {
  const result = $("promoted-result");
  busy(event.currentTarget, () => view.guard(result, async () => {
    const response = await session.call("/admin/global-list?source=promoted", { accept: "text/plain" });
    const link = el("a", { href: URL.createObjectURL(await response.blob()), download: "global-list-promoted.txt" });
    link.click();
    URL.revokeObjectURL(link.href);
    say(result, "Downloaded global-list-promoted.txt.", "ok");
  }));
});

/** The controls of one operator list, built into its section. */
function listControls(section) {
  const list = section.dataset.list;
  const name = LIST_NAMES[list];
  const id = (part) => `${list}-${part}`;
  const result = el("p", { id: id("result"), class: "result", "aria-live": "polite" });
  const entries = el("textarea", { id: id("entries"), spellcheck: "false" });
  const file = el("input", { id: id("file"), type: "file", accept: ".txt,.netset,.ipset,text/plain" });

  const edit = (operation) => (event) => busy(event.currentTarget, () => view.guard(result, async () => {
    const items = lines(entries.value);
    if (items.length === 0) return say(result, "Type at least one address or range.", "error");
    const answer = await session.call(`/admin/${list}`, { method: "POST", body: { [operation]: items } });
    say(result, `Added ${answer.added}, removed ${answer.removed}.`, "ok");
    loadListsStatus();
  }));

  const replace = (event) => {
    const chosen = file.files[0];
    if (!chosen) return say(result, "Choose a file first.", "error");
    const button = event.currentTarget;
    confirmAction(`Replace the whole ${name} with ${chosen.name}?`, "Replace").then((yes) => yes && busy(button, () => view.guard(result, async () => {
      const answer = await session.call(`/admin/${list}`, { method: "PUT", body: chosen, contentType: "text/plain" });
      say(result, `The ${name} now holds ${answer.entries} entries (added ${answer.added}, removed ${answer.removed}); version ${answer.version}.`, "ok");
      loadListsStatus();
    })));
  };

  const download = (event) => busy(event.currentTarget, () => view.guard(result, async () => {
    const response = await session.call(`/admin/${list}`, { accept: "text/plain" });
    const link = el("a", { href: URL.createObjectURL(await response.blob()), download: `${list}.txt` });
    link.click();
    URL.revokeObjectURL(link.href);
    say(result, `Downloaded ${list}.txt.`, "ok");
  }));

  section.append(
    el("div", { class: "field" },
      el("label", { for: id("entries") }, "Addresses or ranges, one a line"),
      entries,
      el("p", { class: "hint" }, list === "global-list" ? "For example 1.2.3.4 or 45.33.0.0/16 (at most a /8); with IPv6 on, 2a06:5280::/29 too (at most a /29)." : "For example 1.2.3.4 or 45.33.0.0/16; with IPv6 on, 2a06:5280::/29 too.")),
    el("div", { class: "row" },
      el("button", { type: "button", onclick: edit("add") }, "Add"),
      el("button", { type: "button", class: "secondary", onclick: edit("remove") }, "Remove")),
    el("div", { class: "field" },
      el("label", { for: id("file") }, `Import a file: replaces the whole ${name}`),
      file,
      el("p", { class: "hint" }, "One address or range a line; # and ; start comments (the Spamhaus and FireHOL format).")),
    el("div", { class: "row" },
      el("button", { type: "button", class: "danger", onclick: replace }, "Replace list"),
      el("button", { type: "button", class: "secondary", onclick: download }, "Export")),
    result);
}

document.querySelectorAll("[data-list]").forEach(listControls);

// ---------------------------------------------------------------------------
// The lookup: why is this address listed? Its address (#/lookup?ip=…) can be linked.

/** One list's entries that cover the looked-up address, as a table. */
function coveringTable(caption, entries) {
  if (entries.length === 0) return el("p", {}, `${caption}: nothing covers it.`);
  const how = (entry) => entry.source === "import" ? "Import" : entry.source === "edit" ? "Edit"
    : entry.source === "promoted" ? "Promoted by holders' reports" : entry.source ?? "Before changes were recorded";
  return el("div", { class: "table-wrap", tabindex: "0" }, el("table", { class: "cards" },
    el("caption", {}, caption),
    el("thead", {}, el("tr", {}, ["Entry", "How", "Added", "By", "Change"].map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, entries.map((entry) => el("tr", {},
      el("td", { class: "mono", "data-label": "Entry" }, entry.entry),
      el("td", { "data-label": "How" }, how(entry)),
      el("td", { "data-label": "Added" }, entry.addedAt ? when(entry.addedAt) : "—"),
      el("td", { "data-label": "By" }, entry.by ?? "—"),
      el("td", { "data-label": "Change", class: "mono" }, entry.source === "promoted" ? "—" : `#${entry.change}`))))));
}

/** The lookup view: the form as its address gives it, and the answer when it names an address. */
async function showLookup(query) {
  const ip = query.get("ip") ?? "";
  $("lookup-ip").value = ip;
  $("lookup-license").value = query.get("license") ?? "";
  if (!ip) {
    say($("lookup-result"), "");
    $("lookup-answer").replaceChildren();
    return;
  }
  await lookUp(ip, query.get("license") ?? "");
}

$("lookup-form").addEventListener("submit", (event) => {
  event.preventDefault();
  navigate(address("lookup", { ip: $("lookup-ip").value.trim(), license: $("lookup-license").value.trim() }));
});

async function lookUp(ip, license) {
  const result = $("lookup-result");
  $("lookup-answer").replaceChildren();
  await view.guard(result, async () => {
    const query = new URLSearchParams({ ip });
    if (license) query.set("license", license);
    const answer = await session.call(`/admin/lookup?${query}`);
    const parts = [coveringTable("Allow list", answer.allow), coveringTable("Global list", answer.global)];
    if (answer.license) {
      const entry = answer.license.entry;
      parts.push(el("p", {}, entry
        ? [`License ${answer.license.license} lists it as `, el("span", { class: "mono" }, entry.ip), " since ", when(entry.addedAt), entry.comment ? ` (“${entry.comment}”)` : ""]
        : `License ${answer.license.license} does not list it.`));
      // The holder's own allow entry: it is never challenged for this holder.
      const allowed = answer.license.allowedBy;
      if (allowed) {
        parts.push(el("p", {}, "This holder allows it: ", el("span", { class: "mono" }, allowed.ip),
          allowed.comment ? ` (${allowed.comment})` : "", ", since ", when(allowed.addedAt)));
      }
    }
    // The holders' reports of it: how many licenses count, since when they make the consensus, and who.
    const reports = answer.reports;
    if (reports) {
      const count = (n, one, many) => `${n} ${n === 1 ? one : many}`;
      const missing = [reports.missing.licenses > 0 ? count(reports.missing.licenses, "license", "licenses") : null,
        reports.missing.networks > 0 ? count(reports.missing.networks, "network", "networks") : null].filter(Boolean);
      parts.push(el("p", {}, `Counting now: ${count(reports.licenses, "license", "licenses")} from ${count(reports.networks, "network", "networks")}, ` +
        `of the ${reports.needed.licenses} licenses from ${reports.needed.networks} networks the consensus needs`,
        reports.consensusSince ? [": it holds since ", when(reports.consensusSince)] : `: not promoted, ${missing.join(" and ")} short`, "."));
      parts.push(el("div", { class: "table-wrap", tabindex: "0" }, el("table", { class: "cards" },
        el("caption", {}, "Reporters, the most recent first"),
        el("thead", {}, el("tr", {}, ...["License", "Network", "Standing", "Categories", "Reports", "First", "Last"].map((name) => el("th", { scope: "col" }, name)))),
        el("tbody", {}, ...reports.reporters.map((r) => el("tr", {},
          el("td", { "data-label": "License", class: "mono" }, el("a", { href: address(`licenses/${encodeURIComponent(r.license)}`) }, r.label ? `${r.label} (${r.license})` : r.license)),
          el("td", { "data-label": "Network", class: "mono" }, r.network ?? "its own (before networks)"),
          el("td", { "data-label": "Standing" }, r.standing),
          el("td", { "data-label": "Categories" }, r.categories.join(", ") || "—"),
          el("td", { "data-label": "Reports" }, String(r.reports)),
          el("td", { "data-label": "First" }, when(r.firstAt)),
          el("td", { "data-label": "Last" }, when(r.lastAt))))))));
    }
    show($("lookup-answer"), ...parts);
    const served = answer.allow.length === 0 && (answer.global.length > 0 || answer.license?.entry);
    say(result, answer.allow.length > 0
      ? `${answer.ip} is on the allow list: no feed serves it.`
      : served ? `${answer.ip} is listed.` : `${answer.ip} is not listed.`, "ok");
  });
}

// ---------------------------------------------------------------------------
// Operator keys.

async function loadKeys() {
  await view.guard($("keys-result"), async () => {
    const { keys } = await session.call("/admin/keys");
    fill($("key-rows"), keys.map((key) => el("tr", {},
      el("td", {}, el("a", { href: address("audit", { key: key.id }), "aria-label": `The audit rows of ${key.name}` }, key.name)),
      el("td", {}, key.role),
      el("td", {}, when(key.createdAt)),
      el("td", {}, key.revokedAt ? when(key.revokedAt) : "—"),
      el("td", {}, key.revokedAt ? "" : el("button", {
        type: "button",
        class: "danger",
        "aria-label": `Revoke the key ${key.name}`,
        onclick: (e) => revokeKey(e.currentTarget, key),
      }, "Revoke")))));
    say($("keys-result"), keys.length === 0 ? "No operator keys yet." : "");
  });
}

$("key-create-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const result = $("keys-result");
  busy(event.submitter, () => view.guard(result, async () => {
    const body = { name: $("key-name").value, role: $("key-role").value };
    const created = await session.call("/admin/keys", { method: "POST", body });
    show($("key-new"), secretBox(`Key "${created.name}" (${created.role})`, created.key, "Shown only now: hand it to its holder. The service keeps only its digest."));
    $("key-create-form").reset();
    await loadKeys();
    say(result, `Key ${created.name} created.`, "ok");
  }));
});

async function revokeKey(button, key) {
  if (!(await confirmAction(`Revoke the operator key "${key.name}"? It is refused within a minute.`, "Revoke"))) return;
  const result = $("keys-result");
  await busy(button, () => view.guard(result, async () => {
    await session.call(`/admin/keys/${encodeURIComponent(key.id)}`, { method: "DELETE" });
    await loadKeys();
    say(result, `Key ${key.name} revoked.`, "ok");
  }));
}

// ---------------------------------------------------------------------------
// The audit log: filtered by kind, key, license and time, as its address says.

/** The filters the audit view shows, as its address gave them. */
let auditFilters = {};
const FILTERS = ["kind", "key", "license", "from", "to"];

/** An RFC 3339 time as a datetime-local field shows it: the reader's own time, to the minute. */
function localInput(iso) {
  const at = new Date(iso);
  if (!iso || Number.isNaN(at.getTime())) return "";
  const pad = (n) => String(n).padStart(2, "0");
  return `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}T${pad(at.getHours())}:${pad(at.getMinutes())}`;
}

/** A datetime-local field's value (the reader's own time) as an RFC 3339 time. */
function isoOf(local) {
  const at = new Date(local);
  return local && !Number.isNaN(at.getTime()) ? at.toISOString().replace(/\.000Z$/, "Z") : "";
}

/** The keys a row can be filtered by: the admin token and every key, by name. */
async function keyChoices(chosen) {
  const { keys } = await session.call("/admin/keys");
  const select = $("audit-key");
  const choices = [["", "Any key"], ["ADMIN_TOKEN", "ADMIN_TOKEN"], ...keys.map((key) => [key.id, `${key.name} (${key.role}${key.revokedAt ? ", revoked" : ""})`])];
  if (chosen && !choices.some(([id]) => id === chosen)) choices.push([chosen, chosen]);
  select.replaceChildren(...choices.map(([value, label]) => el("option", { value, selected: value === chosen }, label)));
  select.value = chosen;
}

/** The audit view as its address says: its filters in the form, the first page of what they let through. */
async function showAudit(query) {
  auditFilters = Object.fromEntries(FILTERS.map((name) => [name, query.get(name) ?? ""]));
  $("audit-kind").value = auditFilters.kind;
  $("audit-license").value = auditFilters.license;
  $("audit-from").value = localInput(auditFilters.from);
  $("audit-to").value = localInput(auditFilters.to);
  say($("audit-result"), "");
  await view.guard($("audit-result"), () => keyChoices(auditFilters.key));
  await loadAudit(false);
}

$("audit-filters").addEventListener("submit", (event) => {
  event.preventDefault();
  navigate(address("audit", {
    kind: $("audit-kind").value,
    key: $("audit-key").value,
    license: $("audit-license").value.trim(),
    from: isoOf($("audit-from").value),
    to: isoOf($("audit-to").value),
  }));
});

const loadAudit = view.pagedTable({
  rows: $("audit-rows"),
  more: $("audit-more"),
  result: $("audit-result"),
  fetchPage: async (cursor) => {
    const query = new URLSearchParams({ limit: PAGE });
    for (const name of FILTERS) if (auditFilters[name]) query.set(name, auditFilters[name]);
    if (cursor) query.set("cursor", cursor);
    const page = await session.call(`/admin/audit?${query}`);
    const rows = page.entries.map((entry) => el("tr", { class: entry.action === "refused" ? "refused" : "" },
      el("td", {}, when(entry.at)),
      el("td", {}, ACTIONS[entry.action] ?? entry.action),
      el("td", {}, actorOf(entry)),
      el("td", { class: "mono" }, entry.client ?? "—"),
      el("td", { class: "mono" }, targetOf(entry)),
      el("td", {}, detailOf(entry))));
    const filtered = FILTERS.some((name) => auditFilters[name]);
    // With two filters a page reads a bounded part of the log: one that came
    // short says so, and "Show more" looks further.
    const message = rows.length > 0 ? ""
      : page.cursor ? "Nothing in the rows looked at so far: Show more looks further."
        : filtered ? "No row matches these filters." : "Nothing recorded yet.";
    return { rows, cursor: page.cursor, message };
  },
});

$("audit-refresh").addEventListener("click", () => loadAudit(false));

view.start();
