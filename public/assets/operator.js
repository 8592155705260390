// The operator's page: log in with the admin token or an operator key, then the
// lists' status and the global list's size over its last changes, licenses with
// their labels and one license's whole picture, the lookup of why an address is
// listed, operator keys, the audit log, and the global list and allow list.
import { ApiError, Session, SessionEnded } from "./api.js";
import { $, Page } from "./page.js";
import { sizeChart } from "./chart.js";
import { busy, confirmAction, el, fill, lines, say, secretBox, show, when } from "./ui.js";

const session = new Session("greylist.operator");
const view = new Page(session, "admin-token", () => {
  loadStatus();
  loadLicenses(false);
  loadKeys();
  loadAudit(false);
});
const PAGE = 50;
const LIST_NAMES = { "global-list": "global list", "allow-list": "allow list" };

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
    const network = status.network;
    show($("network-settings"), network.promotionHolders === 0
      ? "Promotion is off (PROMOTION_HOLDERS is 0)."
      : `In force: an address reported by ${network.promotionHolders} distinct licenses within ${duration(network.promotionWindowSeconds)} is promoted; ` +
        `it leaves ${duration(network.delistAfterSeconds)} after its last report. ` +
        `${status.globalList.promoted.toLocaleString()} promoted now.`);
  });
}

$("status-refresh").addEventListener("click", loadStatus);

/** Seconds as the largest whole unit that divides them: "7 days", "90 seconds". */
function duration(seconds) {
  const units = [["day", 86400], ["hour", 3600], ["minute", 60], ["second", 1]];
  const [unit, size] = units.find(([, size]) => seconds % size === 0 && seconds >= size) ?? units[3];
  const count = seconds / size;
  return `${count} ${unit}${count === 1 ? "" : "s"}`;
}

$("promoted-remove").addEventListener("click", (event) => {
  const result = $("promoted-result");
  busy(event.currentTarget, () => view.guard(result, async () => {
    const items = lines($("promoted-entries").value);
    if (items.length === 0) return say(result, "Type at least one promoted address.", "error");
    const answer = await session.call("/admin/global-list", { method: "POST", body: { removePromoted: items } });
    say(result, `Took off ${answer.promotedRemoved} promoted ${answer.promotedRemoved === 1 ? "entry" : "entries"}.`, "ok");
    loadStatus();
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
        el("button", {
          type: "button",
          class: "secondary",
          "aria-label": `Open ${license.label || license.license}`,
          onclick: (e) => busy(e.currentTarget, () => openLicense(license.license)),
        }, "Open"),
        license.revokedAt ? "" : el("button", {
          type: "button",
          class: "danger",
          "aria-label": `Revoke ${license.label || license.license}`,
          onclick: (e) => revokeLicense(e.currentTarget, license.license),
        }, "Revoke")))));
    const message = q && rows.length === 0 && !page.cursor ? `No license's label starts with "${q}".` : undefined;
    return { rows, cursor: page.cursor, message };
  },
});

$("license-search").addEventListener("submit", (event) => {
  event.preventDefault();
  say($("licenses-result"), "");
  busy(event.submitter, () => loadLicenses(false));
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
    loadStatus();
    loadAudit(false);
  }));
});

async function revokeLicense(button, id) {
  if (!(await confirmAction(`Revoke license ${id}? Its key and access tokens stop working within a minute; this cannot be undone.`, "Revoke"))) return;
  const result = $("licenses-result");
  await busy(button, () => view.guard(result, async () => {
    await session.call(`/admin/licenses/${encodeURIComponent(id)}`, { method: "DELETE" });
    say(result, `License ${id} revoked.`, "ok");
    loadLicenses(false);
    loadAudit(false);
  }));
}

/** The license the picture shows, if any. */
let opened = null;

/** Shows one license's whole picture: what it is, what it holds, who pulls it. */
async function openLicense(id) {
  const section = $("license-detail");
  await view.guard($("licenses-result"), async () => {
    const license = await session.call(`/admin/licenses/${encodeURIComponent(id)}`);
    opened = id;
    section.hidden = false;
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
    say($("license-result"), "");
    fill($("license-agents"), license.feedTokens.map((token) => el("tr", {},
      el("td", { class: "mono" }, token.id),
      el("td", {}, token.scope),
      el("td", {}, token.lastUsed ? when(token.lastUsed) : "Never"),
      el("td", {}, token.userAgent ?? "—"),
      el("td", {}, token.pulled ?? "—"))));
    if (license.feedTokens.length === 0) say($("license-result"), "No feed tokens: no agent pulls this license's feed.");
    // An object from before machines answers none.
    fill($("license-machines"), (license.machines ?? []).map((machine) => el("tr", {},
      el("td", { class: "mono" }, machine.name ? `${machine.name} (${machine.machineId})` : machine.machineId),
      el("td", {}, machine.lastLoginAt ? when(machine.lastLoginAt) : "Never"),
      el("td", {}, machine.lastAlertAt ? when(machine.lastAlertAt) : "Never"),
      el("td", {}, machine.counts.alerts.toLocaleString()),
      el("td", {}, machine.counts.reported.toLocaleString()),
      el("td", {}, machine.counts.added.toLocaleString()),
      el("td", {}, machine.counts.ignored.toLocaleString()),
      el("td", {}, machine.adds ? `for ${machine.ttl.toLocaleString()} s` : "no"))));
    $("license-title").focus();
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
    loadLicenses(false);
    loadAudit(false);
  }));
});

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

$("lookup-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const result = $("lookup-result");
  busy(event.submitter, () => view.guard(result, async () => {
    const query = new URLSearchParams({ ip: $("lookup-ip").value.trim() });
    const license = $("lookup-license").value.trim();
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
      parts.push(el("p", {}, `Reported by ${reports.licenses} ${reports.licenses === 1 ? "license" : "licenses"} within the window`,
        reports.consensusSince ? [": promoted since ", when(reports.consensusSince)] : ": not promoted", "."));
      parts.push(el("div", { class: "table-wrap", tabindex: "0" }, el("table", { class: "cards" },
        el("caption", {}, "Reporters, the most recent first"),
        el("thead", {}, el("tr", {}, ...["License", "Categories", "Reports", "First", "Last"].map((name) => el("th", { scope: "col" }, name)))),
        el("tbody", {}, ...reports.reporters.map((r) => el("tr", {},
          el("td", { "data-label": "License", class: "mono" }, r.license),
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
  }));
});

async function loadKeys() {
  await view.guard($("keys-result"), async () => {
    const { keys } = await session.call("/admin/keys");
    fill($("key-rows"), keys.map((key) => el("tr", {},
      el("td", {}, key.name),
      el("td", {}, key.role),
      el("td", {}, when(key.createdAt)),
      el("td", {}, key.revokedAt ? when(key.revokedAt) : "—"),
      el("td", {}, key.revokedAt ? "" : el("button", {
        type: "button",
        class: "danger",
        "aria-label": `Revoke the key ${key.name}`,
        onclick: (e) => revokeKey(e.currentTarget, key),
      }, "Revoke")))));
    if (keys.length === 0) say($("keys-result"), "No operator keys yet.");
  });
}

$("key-create-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const result = $("keys-result");
  busy(event.submitter, () => view.guard(result, async () => {
    const body = { name: $("key-name").value, role: $("key-role").value };
    const created = await session.call("/admin/keys", { method: "POST", body });
    show($("key-new"), secretBox(`Key "${created.name}" (${created.role})`, created.key, "Shown only now: hand it to its holder. The service keeps only its digest."));
    say(result, `Key ${created.name} created.`, "ok");
    $("key-create-form").reset();
    loadKeys();
    loadAudit(false);
  }));
});

async function revokeKey(button, key) {
  if (!(await confirmAction(`Revoke the operator key "${key.name}"? It is refused from its next call on.`, "Revoke"))) return;
  const result = $("keys-result");
  await busy(button, () => view.guard(result, async () => {
    await session.call(`/admin/keys/${encodeURIComponent(key.id)}`, { method: "DELETE" });
    say(result, `Key ${key.name} revoked.`, "ok");
    loadKeys();
    loadAudit(false);
  }));
}

const ACTIONS = {
  "license.created": "License created",
  "license.labelled": "License labelled",
  "license.revoked": "License revoked",
  "key.created": "Key created",
  "key.revoked": "Key revoked",
  "list.edited": "List edited",
  "list.replaced": "List replaced",
  refused: "Refused",
};

const loadAudit = view.pagedTable({
  rows: $("audit-rows"),
  more: $("audit-more"),
  result: $("audit-result"),
  fetchPage: async (cursor) => {
    const query = new URLSearchParams({ limit: PAGE });
    if (cursor) query.set("cursor", cursor);
    const page = await session.call(`/admin/audit?${query}`);
    const rows = page.entries.map((entry) => el("tr", { class: entry.action === "refused" ? "refused" : "" },
      el("td", {}, when(entry.at)),
      el("td", {}, ACTIONS[entry.action] ?? entry.action),
      el("td", {}, entry.actor ?? "No valid key"),
      el("td", { class: "mono" }, entry.client ?? "—"),
      el("td", { class: "mono" }, entry.target),
      el("td", {}, entry.count > 1 ? `${entry.detail} (×${entry.count})` : entry.detail)));
    return { rows, cursor: page.cursor, message: rows.length === 0 ? "Nothing recorded yet." : undefined };
  },
});

$("audit-refresh").addEventListener("click", () => loadAudit(false));

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
    loadStatus();
  }));

  const replace = (event) => {
    const chosen = file.files[0];
    if (!chosen) return say(result, "Choose a file first.", "error");
    const button = event.currentTarget;
    confirmAction(`Replace the whole ${name} with ${chosen.name}?`, "Replace").then((yes) => yes && busy(button, () => view.guard(result, async () => {
      const answer = await session.call(`/admin/${list}`, { method: "PUT", body: chosen, contentType: "text/plain" });
      say(result, `The ${name} now holds ${answer.entries} entries (added ${answer.added}, removed ${answer.removed}); version ${answer.version}.`, "ok");
      loadStatus();
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

view.start();
