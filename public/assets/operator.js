// The operator's page: log in with the admin token, then the lists' status and
// the global list's size over its last changes,
// licenses, and the global list and allow list.
import { ApiError, Session, SessionEnded } from "./api.js";
import { $, Page } from "./page.js";
import { sizeChart } from "./chart.js";
import { busy, confirmAction, el, fill, lines, say, secretBox, show, when } from "./ui.js";

const session = new Session("greylist.operator");
const view = new Page(session, "admin-token", () => {
  loadStatus();
  loadLicenses(false);
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
      el("td", {}, list.entries.toLocaleString()),
      el("td", { class: "mono" }, list.version),
      el("td", {}, list.publishedAt ? when(list.publishedAt) : "Not yet"));
    fill($("status-rows"), [row("Global list", status.globalList), row("Allow list", status.allowList)]);
    const recent = status.globalList.recent;
    show($("sizes-chart"), sizeChart(recent));
    fill($("sizes-rows"), recent.slice().reverse().map((point) => el("tr", {},
      el("td", {}, when(point.at)), el("td", {}, point.entries.toLocaleString()))));
    say($("status-result"), `${status.licenses} ${status.licenses === 1 ? "license" : "licenses"} issued.`);
  });
}

$("status-refresh").addEventListener("click", loadStatus);

const loadLicenses = view.pagedTable({
  rows: $("license-rows"),
  more: $("licenses-more"),
  result: $("licenses-result"),
  fetchPage: async (cursor) => {
    const query = new URLSearchParams({ limit: PAGE });
    if (cursor) query.set("cursor", cursor);
    const page = await session.call(`/admin/licenses?${query}`);
    const rows = page.licenses.map((license) => el("tr", {},
      el("td", { class: "mono" }, license.license),
      el("td", {}, when(license.createdAt)),
      el("td", {}, license.revokedAt ? when(license.revokedAt) : "—"),
      el("td", {}, license.revokedAt ? "" : el("button", {
        type: "button",
        class: "danger",
        "aria-label": `Revoke ${license.license}`,
        onclick: (e) => revokeLicense(e.currentTarget, license.license),
      }, "Revoke"))));
    return { rows, cursor: page.cursor };
  },
});


$("license-create").addEventListener("click", (event) => {
  const result = $("licenses-result");
  busy(event.currentTarget, () => view.guard(result, async () => {
    const created = await session.call("/admin/licenses", { method: "POST" });
    show($("license-new"), secretBox(`Key of ${created.license}`, created.licenseKey, "Shown only now: give it to the license holder. The service keeps only its digest."));
    say(result, `License ${created.license} created.`, "ok");
    loadLicenses(false);
    loadStatus();
  }));
});

async function revokeLicense(button, id) {
  if (!(await confirmAction(`Revoke license ${id}? Its key and access tokens stop working within a minute; this cannot be undone.`, "Revoke"))) return;
  const result = $("licenses-result");
  await busy(button, () => view.guard(result, async () => {
    await session.call(`/admin/licenses/${encodeURIComponent(id)}`, { method: "DELETE" });
    say(result, `License ${id} revoked.`, "ok");
    loadLicenses(false);
  }));
}

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
