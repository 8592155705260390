// What both pages share: a login view, the app behind it, and the one way an
// action's refusal is shown.
import { ApiError, SessionEnded } from "./api.js";
import { say } from "./ui.js";

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

  /** Shows the app when the tab still holds a token, else the login. */
  start() {
    if (this.session.token) this.showApp();
    else this.showLogin(this.session.expired ? "Your session has expired. Log in again." : "");
  }
}
