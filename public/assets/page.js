// What both pages share: a login view, the app behind it, and the one way an
// action's refusal is shown.
import { ApiError, SessionEnded } from "./api.js";
import { fill, say } from "./ui.js";

export const $ = (id) => document.getElementById(id);

export class Page {
  /** `keyInput` is the login field's id; `onShow` loads the app once logged in. */
  constructor(session, keyInput, onShow) {
    this.session = session;
    this.keyInput = keyInput;
    this.onShow = onShow;
    $("logout").addEventListener("click", () => this.showLogin());
  }

  showLogin(message = "") {
    this.session.end();
    $("app").hidden = true;
    $("session").hidden = true;
    $("login-view").hidden = false;
    say($("login-result"), message, message ? "error" : "");
    $(this.keyInput).focus();
  }

  showApp() {
    $("login-view").hidden = true;
    $("app").hidden = false;
    $("session").hidden = false;
    this.onShow();
  }

  /** Runs an action; its refusal is shown in `result`, an ended session sends the page back to login. */
  async guard(result, action) {
    try {
      await action();
    } catch (error) {
      if (error instanceof SessionEnded) return this.showLogin(error.message);
      if (error instanceof ApiError) return say(result, error.message, "error");
      throw error;
    }
  }

  /**
   * A table paged by the API's cursor. `fetchPage(cursor)` gets the page after
   * `cursor` (the first for null) as `{ rows, cursor, message }`; `result` shows the
   * message, if any, or a refusal. Returns `load(more)`: the first page, or the next.
   */
  pagedTable({ rows, more, result, fetchPage }) {
    let cursor = null;
    // Only the newest load fills the table: a view's load on arrival can answer
    // after the load a change made since, and must not overwrite it.
    let newest = 0;
    const load = (next) => this.guard(result, async () => {
      const asked = ++newest;
      const page = await fetchPage(next ? cursor : null);
      if (asked !== newest) return;
      cursor = page.cursor;
      fill(rows, page.rows, next);
      if (page.message !== undefined) say(result, page.message);
      more.hidden = !page.cursor;
    });
    more.addEventListener("click", () => load(true));
    return load;
  }

  /**
   * Views with addresses of their own under `#/`: `views` gives each its title,
   * the heading that takes the focus, the link of `#views` it marks as the
   * current page and what it loads when shown (`show(at)`); `parse(hash)` names
   * the view an address shows, as `{ view, … }`. Back, forward and every link
   * move between them, nothing while logged out. Returns `route()`, which shows
   * the view the address names now.
   */
  views(views, parse, pageTitle) {
    const route = () => {
      const at = parse(location.hash);
      const shown = views[at.view];
      for (const node of document.querySelectorAll("div.view")) node.hidden = node.dataset.view !== at.view;
      for (const link of document.querySelectorAll("#views a")) {
        if (link.dataset.nav === shown.nav) link.setAttribute("aria-current", "page");
        else link.removeAttribute("aria-current");
      }
      document.title = `${shown.title} — ${pageTitle}`;
      $(shown.heading).focus();
      return shown.show(at);
    };
    window.addEventListener("hashchange", () => {
      if (!$("app").hidden) route();
    });
    return route;
  }

  /** Shows the app when the tab still holds a token, else the login. */
  start() {
    if (this.session.token) this.showApp();
    else this.showLogin(this.session.expired ? "Your session has expired. Log in again." : "");
  }
}
