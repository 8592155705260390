// Calls to the service's own API, and the session token each page keeps.
// Tokens live in sessionStorage: gone when the tab closes, never in a cookie
// (so no request can carry one unasked) and never in localStorage.

/** The API refused the call; `message` is its own text. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** The token is missing, expired or revoked: the page goes back to its login. */
export class SessionEnded extends ApiError {
  /** `reason` is the API's own words, when it gave any. */
  constructor(reason) {
    super(401, `${reason}. Log in again.`);
    this.reason = reason;
  }
}

export class Session {
  constructor(storageKey) {
    this.storageKey = storageKey;
    /** Set when a kept token was found past its lifetime. */
    this.expired = false;
  }

  get token() {
    const saved = JSON.parse(sessionStorage.getItem(this.storageKey) || "null");
    if (!saved) return null;
    if (saved.expiresAt && Date.now() >= saved.expiresAt) {
      this.end();
      this.expired = true;
      return null;
    }
    return saved.token;
  }

  /** Keeps `token`; `lifetimeSeconds` (when known) lets the page notice expiry before the API does. */
  start(token, lifetimeSeconds) {
    const expiresAt = lifetimeSeconds ? Date.now() + lifetimeSeconds * 1000 : null;
    sessionStorage.setItem(this.storageKey, JSON.stringify({ token, expiresAt }));
  }

  end() {
    sessionStorage.removeItem(this.storageKey);
  }

  /**
   * One API call with the session's token. `body` is a URLSearchParams (form),
   * a string or Blob (sent as `contentType`), or an object (sent as JSON).
   * Resolves to the parsed JSON (or null for 204); throws ApiError or SessionEnded.
   */
  async call(path, { method = "GET", body, contentType = "text/plain", accept = "application/json" } = {}) {
    const token = this.token;
    if (!token) throw new SessionEnded("Your session has expired");
    const headers = { Authorization: `Bearer ${token}`, Accept: accept };
    if (body !== undefined && !(body instanceof URLSearchParams)) {
      if (typeof body === "object" && !(body instanceof Blob)) {
        body = JSON.stringify(body);
        headers["Content-Type"] = "application/json";
      } else {
        headers["Content-Type"] = contentType;
      }
    }
    let response;
    try {
      response = await fetch(path, { method, headers, body });
    } catch {
      throw new ApiError(0, "The service could not be reached. Check the connection and try again.");
    }
    if (response.status === 401) {
      this.end();
      throw new SessionEnded(await messageOf(response));
    }
    if (!response.ok) throw new ApiError(response.status, await messageOf(response));
    if (response.status === 204) return null;
    return accept === "application/json" ? response.json() : response;
  }
}

/** Exchanges a license key for an access token: `{ accessToken, expiresIn }`. */
export async function login(licenseKey) {
  let response;
  try {
    response = await fetch("/v2/authentication/login/license", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ licenseKey }),
    });
  } catch {
    throw new ApiError(0, "The service could not be reached. Check the connection and try again.");
  }
  if (!response.ok) throw new ApiError(response.status, await messageOf(response));
  return response.json();
}

/** The API's own words for an answer: `result` or `message` in JSON, else the text. */
async function messageOf(response) {
  const text = await response.text();
  try {
    const json = JSON.parse(text);
    return json.result ?? json.message ?? text;
  } catch {
    return text || `The service answered ${response.status}.`;
  }
}
