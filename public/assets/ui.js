// DOM helpers for both pages. Every text that came from a user or the API
// enters the page through `append(string)` or `textContent`: as text, never as HTML.

/** An element with attributes, `on<event>` listeners and children (nodes or text). */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "class") node.className = value;
    else if (value === true) node.setAttribute(name, "");
    else if (value !== false && value != null) node.setAttribute(name, String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat()) {
    if (child != null) node.append(child instanceof Node ? child : String(child));
  }
}

/** Replaces what `node` shows with `children`. */
export function show(node, ...children) {
  node.replaceChildren();
  append(node, children);
}

/**
 * Puts `rows` into a table body (after what it holds when `more`), each cell
 * labelled with its column's heading, which a phone-sized window shows beside it.
 */
export function fill(tbody, rows, more = false) {
  if (!more) tbody.replaceChildren();
  tbody.append(...rows);
  const headings = [...tbody.closest("table").querySelectorAll("thead th")].map((th) => th.textContent.trim());
  for (const row of tbody.rows) {
    [...row.cells].forEach((cell, index) => cell.setAttribute("data-label", headings[index] === "Action" ? "" : headings[index] ?? ""));
  }
}

/** Shows a message in a result area: `kind` is "ok", "error" or "" for a plain answer. */
export function say(node, text, kind = "") {
  node.className = `result ${kind}`.trim();
  node.textContent = text;
}

/** A date and time from the API (RFC 3339, UTC) in the reader's own time zone. */
export function when(iso) {
  if (!iso) return "—";
  return el("time", { datetime: iso, title: iso }, new Date(iso).toLocaleString());
}

/** Runs `work` with `button` disabled, so a double click cannot send twice. */
export async function busy(button, work) {
  button.disabled = true;
  try {
    return await work();
  } finally {
    button.disabled = false;
  }
}

/** A read-only box with a secret shown this once, and a button that copies it. */
export function secretBox(label, value, note) {
  const id = `secret-${Math.random().toString(36).slice(2)}`;
  const input = el("input", { id, readonly: true, value, autocomplete: "off", spellcheck: "false" });
  const copied = el("span", { class: "result", "aria-live": "polite" });
  const copy = el("button", {
    type: "button",
    class: "secondary",
    onclick: async () => {
      input.select();
      try {
        await navigator.clipboard.writeText(value);
        say(copied, "Copied.", "ok");
      } catch {
        say(copied, "Select the text and copy it by hand.", "error");
      }
    },
  }, "Copy");
  return el("div", { class: "secret" }, el("label", { for: id }, label), input, el("div", { class: "row" }, copy, copied), el("p", { class: "hint" }, note));
}

/** Asks before something that cannot be undone; resolves to true when confirmed. */
export function confirmAction(question, confirmLabel) {
  return new Promise((resolve) => {
    const dialog = el("dialog", { "aria-labelledby": "confirm-question" });
    const finish = (answer) => {
      dialog.close();
      dialog.remove();
      resolve(answer);
    };
    const cancel = el("button", { type: "button", class: "secondary", onclick: () => finish(false) }, "Cancel");
    dialog.append(
      el("p", { id: "confirm-question" }, question),
      el("div", { class: "row" }, el("button", { type: "button", class: "danger", onclick: () => finish(true) }, confirmLabel), cancel),
    );
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      finish(false);
    });
    document.body.append(dialog);
    dialog.showModal();
    cancel.focus();
  });
}

/** Addresses pasted one a line (or separated by spaces or commas), blanks dropped. */
export function lines(text) {
  return text.split(/[\s,]+/).map((line) => line.trim()).filter(Boolean);
}
