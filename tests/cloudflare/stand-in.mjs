// A stand-in for Cloudflare's API, for the tests: the IP lists of accounts, their
// items (cursor paging), the bulk operations that change them, and a zone's
// custom-rules entry point. Every request and every answer is checked against
// the shapes of Cloudflare's published OpenAPI schema, cut into
// tests/fixtures/cloudflare/openapi-lists.json (its commit is named there); a
// request that does not fit is answered 400 and recorded as a violation, which
// the tests assert never happens. Cloudflare's documented rules are enforced:
// list names `^[a-z0-9_]{1,50}$`, `kind` `ip`, items an IPv4 address or CIDR or
// an IPv6 CIDR of at most /64, the account's item cap across its lists, and one
// pending bulk operation per account (a second change is refused with 429 and
// counted). Faults come on demand: a status (429, 5xx, 401, 403) for the next
// requests, a bulk operation that fails. Every call is counted per account.
//
// Control routes (not Cloudflare's), under /__standin/: POST tokens, POST faults,
// POST operation-failure, POST cap, POST fill (a list of someone else's items, optionally from `first` `step` apart), GET accounts/<id>, GET zones/<id>, and GET
// violations/<id> (an account's or a zone's, so that tests running at once see
// their own).
//
//   node tests/cloudflare/stand-in.mjs [port]   prints `listening <port>` when
//   ready, and ends when its standard input closes (when the tests' process ends)
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { isIP } from "node:net";

const SCHEMA = JSON.parse(
  readFileSync(new URL("../fixtures/cloudflare/openapi-lists.json", import.meta.url), "utf8"),
);
const BASE = "/client/v4/";

// ------------------------------------------------------------------------------
// A JSON Schema check of the subset the cut uses. Three quirks of the published
// schema are read as Cloudflare's answers (and its SDKs, generated from it) read
// them: `allOf` is inheritance, a later part's property replacing an earlier
// one's (each answer is `allOf` a collection whose `result` is an array and the
// operation's own `result`, an object); an item is an object whose `oneOf` lists
// the kinds of one of its values (a string, an object, an integer), so a `oneOf`
// beside `properties` does not apply to the object; and a failure's envelope is
// `allOf` the success shape and the failure one, which no value can be (success
// both `true` and `false`), so failures are checked against the failure shape
// alone (`failureShape`).

// A schema with its `allOf` folded in: properties merged, a later one winning.
function merged(schema) {
  schema = resolve(schema);
  if (!schema?.allOf) return schema;
  const out = { properties: {}, required: [] };
  for (const part of [...schema.allOf.map(merged), { ...schema, allOf: undefined }]) {
    for (const [key, value] of Object.entries(part)) {
      if (key === "properties") Object.assign(out.properties, value);
      else if (key === "required") out.required.push(...value);
      else if (value !== undefined) out[key] = value;
    }
  }
  delete out.allOf;
  return out;
}

function resolve(schema) {
  while (schema && schema.$ref) {
    schema = schema.$ref
      .slice(2)
      .split("/")
      .reduce((node, key) => node[key.replace(/~1/g, "/").replace(/~0/g, "~")], SCHEMA);
  }
  return schema;
}

function typeOf(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

function typeFits(type, value) {
  const actual = typeOf(value);
  return type === actual || (type === "number" && actual === "integer");
}

// Problems of `value` against `schema`, each a path and what is wrong. In a
// request (`sent`), a read-only property is never required.
export function check(schema, value, path = "$", problems = [], sent = false) {
  schema = merged(schema);
  if (!schema || typeof schema !== "object") return problems;
  if (value === null && schema.nullable) return problems;
  if (schema.oneOf && schema.discriminator && typeOf(value) === "object") {
    const chosen = schema.discriminator.mapping?.[value[schema.discriminator.propertyName]];
    if (!chosen) problems.push(`${path}: ${schema.discriminator.propertyName} ${JSON.stringify(value[schema.discriminator.propertyName])} names no branch`);
    else check({ $ref: chosen }, value, path, problems, sent);
    schema = { ...schema, oneOf: undefined };
  }
  for (const key of ["oneOf", "anyOf"]) {
    if (!schema[key] || (key === "oneOf" && schema.properties)) continue;
    const branches = schema[key].map(resolve);
    const typed = branches.filter((b) => !b.type || typeFits(b.type, value) || (value === null && b.nullable));
    if (typed.length === 0 && branches.every((b) => b.type)) continue;
    const fits = typed.filter((b) => check(b, value, path, [], sent).length === 0).length;
    if (fits === 0 || (key === "oneOf" && fits > 1 && !schema.discriminator)) {
      problems.push(`${path}: fits ${fits} of its ${key} branches`);
    }
  }
  if (schema.type && !typeFits(schema.type, value)) {
    problems.push(`${path}: is ${typeOf(value)}, not ${schema.type}`);
    return problems;
  }
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    problems.push(`${path}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
  }
  if (typeof value === "string") {
    if (schema.pattern && !new RegExp(schema.pattern, "u").test(value)) problems.push(`${path}: does not match ${schema.pattern}`);
    if (schema.maxLength !== undefined && value.length > schema.maxLength) problems.push(`${path}: longer than ${schema.maxLength}`);
    if (schema.minLength !== undefined && value.length < schema.minLength) problems.push(`${path}: shorter than ${schema.minLength}`);
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) problems.push(`${path}: below ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) problems.push(`${path}: above ${schema.maximum}`);
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) problems.push(`${path}: fewer than ${schema.minItems} items`);
    if (schema.items) value.forEach((item, i) => check(schema.items, item, `${path}[${i}]`, problems, sent));
  }
  if (typeOf(value) === "object") {
    for (const key of schema.required ?? []) {
      const readOnly = merged(schema.properties?.[key])?.readOnly;
      if (!(key in value) && !(sent && readOnly)) problems.push(`${path}: lacks ${key}`);
    }
    for (const [key, item] of Object.entries(value)) {
      if (schema.properties?.[key]) check(schema.properties[key], item, `${path}.${key}`, problems, sent);
      else if (schema.additionalProperties === false) problems.push(`${path}: has ${key}, which it may not`);
    }
  }
  return problems;
}

// ------------------------------------------------------------------------------
// The operations of the cut, matched by their path templates.

const OPERATIONS = [];
for (const [template, methods] of Object.entries(SCHEMA.paths)) {
  const names = [];
  const pattern = template.replace(/\{([^}]+)\}/g, (_, name) => {
    names.push(name);
    return "([^/]+)";
  });
  for (const [method, operation] of Object.entries(methods)) {
    if (!["get", "post", "put", "delete"].includes(method)) continue;
    OPERATIONS.push({ method: method.toUpperCase(), template, regex: new RegExp(`^${pattern}$`), names, operation });
  }
}

function match(method, path) {
  for (const op of OPERATIONS) {
    const found = op.regex.exec(path);
    if (found && op.method === method) {
      const params = Object.fromEntries(op.names.map((name, i) => [name, decodeURIComponent(found[i + 1])]));
      return { ...op, params };
    }
  }
  return null;
}

function bodySchema(operation) {
  const body = resolve(operation.requestBody);
  return body?.content?.["application/json"]?.schema;
}

function answerSchema(operation, status) {
  const answer = resolve(operation.responses[String(status)] ?? operation.responses[`${String(status)[0]}XX`]);
  return answer?.content?.["application/json"]?.schema;
}

// The failure envelope as Cloudflare answers it (see above).
function failureShape(template) {
  return template.startsWith("/zones/")
    ? resolve(SCHEMA.components.responses.rulesets_Failure).content["application/json"].schema
    : SCHEMA.components.schemas["lists_api-response-common-failure"];
}

// ------------------------------------------------------------------------------
// State.

const accounts = new Map(); // id -> { lists: Map, cap, pending, operations: Map, calls: {}, refusedWhilePending }
const zones = new Map(); // id -> { ruleset }
const tokens = new Map(); // token -> { accounts: Set, zones: Set, lists: bool, rules: bool }
const faults = []; // { account, status, times, retryAfter, code, message }
const violations = []; // { owner: an account's or a zone's id, text }

const id32 = () => randomBytes(16).toString("hex");
const now = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");

function account(id) {
  if (!accounts.has(id)) {
    accounts.set(id, { lists: new Map(), cap: 10000, pending: null, operations: new Map(), calls: {}, refusedWhilePending: 0, failNext: null });
  }
  return accounts.get(id);
}

function zone(id) {
  if (!zones.has(id)) zones.set(id, { ruleset: null, calls: {} });
  return zones.get(id);
}

// Cloudflare's rule for an item's `ip`: an IPv4 address or CIDR, an IPv6 CIDR of at most /64.
function validIp(text) {
  if (typeof text !== "string") return false;
  const [address, prefix, extra] = text.split("/");
  if (extra !== undefined) return false;
  const family = isIP(address);
  if (family === 4) return prefix === undefined || (/^\d+$/.test(prefix) && +prefix >= 8 && +prefix <= 32);
  if (family === 6) return prefix !== undefined && /^\d+$/.test(prefix) && +prefix >= 12 && +prefix <= 64;
  return false;
}

function listShown(list) {
  return {
    id: list.id, name: list.name, kind: list.kind, description: list.description ?? "",
    num_items: list.items.size, num_referencing_filters: list.referencedBy ?? 0,
    created_on: list.created_on, modified_on: list.modified_on,
  };
}

function itemsIn(acc) {
  let n = 0;
  for (const list of acc.lists.values()) n += list.items.size;
  return n;
}

// A bulk operation moves on each time it is asked after: pending, running, then its end.
function advance(acc, operation) {
  if (operation.status === "pending") operation.status = "running";
  else if (operation.status === "running") {
    const list = acc.lists.get(operation.list);
    if (operation.fail) {
      operation.status = "failed";
      operation.error = operation.fail;
    } else if (operation.kind === "add") {
      const fresh = operation.items.filter((item) => ![...list.items.values()].some((i) => i.ip === item.ip));
      if (itemsIn(acc) + fresh.length > acc.cap) {
        operation.status = "failed";
        operation.error = "This list is at the maximum number of items";
      } else {
        for (const item of operation.items) {
          const existing = [...list.items.values()].find((i) => i.ip === item.ip);
          if (existing) {
            existing.comment = item.comment ?? "";
            existing.modified_on = now();
          } else {
            const id = id32();
            list.items.set(id, { id, ip: item.ip, comment: item.comment ?? "", created_on: now(), modified_on: now() });
          }
        }
        operation.status = "completed";
      }
    } else if (operation.kind === "remove") {
      for (const { id } of operation.items) list.items.delete(id);
      operation.status = "completed";
    } else if (operation.kind === "replace") {
      list.items.clear();
      for (const item of operation.items) {
        const id = id32();
        list.items.set(id, { id, ip: item.ip, comment: item.comment ?? "", created_on: now(), modified_on: now() });
      }
      operation.status = "completed";
    }
    if (operation.status === "completed" || operation.status === "failed") {
      operation.completed = now();
      acc.pending = null;
      if (list) list.modified_on = now();
    }
  }
}

// ------------------------------------------------------------------------------
// Cloudflare's routes.

function cloudflare(op, req, body, query) {
  const token = (req.headers.authorization ?? "").replace(/^Bearer /, "");
  const accountId = op.params.account_id ?? op.params.account_identifier;
  const granted = tokens.get(token);
  if (!granted) return [403, { errors: [{ code: 9109, message: "Invalid access token" }] }];
  if (accountId) {
    const acc = account(accountId);
    acc.calls[`${op.method} ${op.template}`] = (acc.calls[`${op.method} ${op.template}`] ?? 0) + 1;
    if (!granted.accounts.has(accountId) || !granted.lists) {
      return [403, { errors: [{ code: 10000, message: "Authentication error" }] }];
    }
    const fault = faults.find((f) => f.account === accountId && f.times > 0 && (!f.changes || op.method !== "GET"));
    if (fault) {
      fault.times -= 1;
      return [fault.status, { errors: [{ code: fault.code ?? (fault.status === 429 ? 1015 : 10000), message: fault.message ?? (fault.status === 429 ? "You are being rate limited" : "Internal server error") }] }, fault.retryAfter];
    }
    return lists(op, acc, body, query);
  }
  const z = zone(op.params.zone_id);
  z.calls[`${op.method} ${op.template}`] = (z.calls[`${op.method} ${op.template}`] ?? 0) + 1;
  if (!granted.zones.has(op.params.zone_id) || !granted.rules) {
    return [403, { errors: [{ code: 10000, message: "Authentication error" }] }];
  }
  return rulesets(op, z, body);
}

function lists(op, acc, body, query) {
  const list = op.params.list_id ? acc.lists.get(op.params.list_id) : null;
  if (op.params.list_id && !list) return [404, { errors: [{ code: 10001, message: "list not found" }] }];
  const key = `${op.method} ${op.template.replace("{account_id}", "").replace("{account_identifier}", "")}`;
  const changing = ["POST", "PUT", "DELETE"].includes(op.method) && op.template.endsWith("/items");
  if (changing && acc.pending) {
    acc.refusedWhilePending += 1;
    return [429, { errors: [{ code: 10054, message: "Only one asynchronous list operation may run at a time for an account: wait until the pending one completes" }] }];
  }
  switch (key) {
    case "GET /accounts//rules/lists":
      return [200, { result: [...acc.lists.values()].map(listShown) }];
    case "POST /accounts//rules/lists": {
      if (!/^[a-z0-9_]{1,50}$/.test(body.name)) return [400, { errors: [{ code: 10002, message: "list name must be 1 to 50 lowercase letters, digits and underscores" }] }];
      if (body.kind !== "ip") return [400, { errors: [{ code: 10003, message: "this stand-in makes lists of kind ip only" }] }];
      if ([...acc.lists.values()].some((l) => l.name === body.name)) return [400, { errors: [{ code: 10004, message: "a list with this name already exists" }] }];
      const created = { id: id32(), name: body.name, kind: body.kind, description: body.description, items: new Map(), created_on: now(), modified_on: now() };
      acc.lists.set(created.id, created);
      return [200, { result: listShown(created) }];
    }
    case "GET /accounts//rules/lists/{list_id}":
      return [200, { result: listShown(list) }];
    case "DELETE /accounts//rules/lists/{list_id}":
      if (list.referencedBy) return [400, { errors: [{ code: 10005, message: "list is referenced by a filter or rule" }] }];
      acc.lists.delete(list.id);
      return [200, { result: { id: list.id } }];
    case "GET /accounts//rules/lists/{list_id}/items": {
      const perPage = query.get("per_page") === null ? 25 : Number(query.get("per_page"));
      if (!Number.isInteger(perPage) || perPage < 1 || perPage > 500) return [400, { errors: [{ code: 10021, message: "per_page must be from 1 to 500" }] }];
      const search = query.get("search");
      const all = [...list.items.values()].filter((i) => !search || i.ip.startsWith(search));
      const start = query.get("cursor") ? Number(Buffer.from(query.get("cursor"), "base64url").toString()) : 0;
      const page = all.slice(start, start + perPage);
      const cursors = {};
      if (start > 0) cursors.before = Buffer.from(String(Math.max(0, start - perPage))).toString("base64url");
      if (start + perPage < all.length) cursors.after = Buffer.from(String(start + perPage)).toString("base64url");
      return [200, { result: page, result_info: { cursors } }];
    }
    case "POST /accounts//rules/lists/{list_id}/items":
    case "PUT /accounts//rules/lists/{list_id}/items": {
      const bad = body.find((item) => !validIp(item.ip));
      if (bad) return [400, { errors: [{ code: 10021, message: `${JSON.stringify(bad.ip)} is not a valid IP address or CIDR (IPv6 CIDRs of at most /64)` }] }];
      return start(acc, list, op.method === "POST" ? "add" : "replace", body);
    }
    case "DELETE /accounts//rules/lists/{list_id}/items": {
      const unknown = body.items.find(({ id }) => !list.items.has(id));
      if (unknown) return [400, { errors: [{ code: 10022, message: `no item of id ${unknown.id} in the list` }] }];
      return start(acc, list, "remove", body.items);
    }
    case "GET /accounts//rules/lists/bulk_operations/{operation_id}": {
      const operation = acc.operations.get(op.params.operation_id);
      if (!operation) return [404, { errors: [{ code: 10006, message: "operation not found" }] }];
      advance(acc, operation);
      const shown = { id: operation.id, status: operation.status };
      if (operation.error) shown.error = operation.error;
      if (operation.completed) shown.completed = operation.completed;
      return [200, { result: shown }];
    }
  }
  return [404, { errors: [{ code: 7003, message: "No route for the URI" }] }];
}

function start(acc, list, kind, items) {
  const operation = { id: id32(), status: "pending", kind, list: list.id, items, fail: acc.failNext };
  acc.failNext = null;
  acc.operations.set(operation.id, operation);
  acc.pending = operation.id;
  return [200, { result: { operation_id: operation.id } }];
}

function rulesets(op, z, body) {
  const ruleShown = (rule) => ({ id: rule.id, version: "1", action: rule.action, expression: rule.expression, description: rule.description ?? "", last_updated: rule.last_updated, ref: rule.id, enabled: rule.enabled ?? true });
  const shown = () => ({
    id: z.ruleset.id, name: "default", description: "", kind: "zone", version: String(z.ruleset.version),
    phase: "http_request_firewall_custom", last_updated: z.ruleset.last_updated, rules: z.ruleset.rules.map(ruleShown),
  });
  const rule = (r) => ({ ...r, id: id32(), last_updated: now() });
  if (op.params.ruleset_phase && op.params.ruleset_phase !== "http_request_firewall_custom") {
    return [400, { errors: [{ code: 20217, message: "this stand-in keeps the http_request_firewall_custom phase only" }] }];
  }
  if (op.method === "GET" && op.template.endsWith("/entrypoint")) {
    if (!z.ruleset) return [404, { errors: [{ code: 10003, message: "could not find entrypoint ruleset in the http_request_firewall_custom phase" }] }];
    return [200, { result: shown() }];
  }
  if (op.method === "PUT") {
    z.ruleset = { id: z.ruleset?.id ?? id32(), version: (z.ruleset?.version ?? 0) + 1, last_updated: now(), rules: body.rules.map(rule) };
    return [200, { result: shown() }];
  }
  if (op.method === "POST") {
    if (!z.ruleset || z.ruleset.id !== op.params.ruleset_id) return [404, { errors: [{ code: 10003, message: "could not find ruleset" }] }];
    z.ruleset.rules.push(rule(body));
    z.ruleset.version += 1;
    return [200, { result: shown() }];
  }
  return [404, { errors: [{ code: 7003, message: "No route for the URI" }] }];
}

// ------------------------------------------------------------------------------
// Control routes.

function control(method, path, body) {
  if (method === "POST" && path === "tokens") {
    tokens.set(body.token, { accounts: new Set(body.accounts ?? []), zones: new Set(body.zones ?? []), lists: body.lists !== false, rules: body.rules !== false });
    return [200, {}];
  }
  if (method === "POST" && path === "faults") {
    faults.push({ ...body, times: body.times ?? 1 });
    return [200, {}];
  }
  if (method === "POST" && path === "operation-failure") {
    account(body.account).failNext = body.error;
    return [200, {}];
  }
  if (method === "POST" && path === "fill") {
    // A list of someone else's items: `count` addresses from 45.0.0.1 on, or
    // from `first` (an IPv4 address as its integer) `step` apart.
    const acc = account(body.account);
    acc.cap = Math.max(acc.cap, itemsIn(acc) + body.count);
    let list = [...acc.lists.values()].find((l) => l.name === body.name);
    if (!list) {
      list = { id: id32(), name: body.name, kind: "ip", items: new Map(), created_on: now(), modified_on: now() };
      acc.lists.set(list.id, list);
    }
    for (let n = 1; n <= body.count; n++) {
      const id = id32();
      const address = (body.first ?? 45 * 2 ** 24) + (body.step ?? 1) * n;
      const ip = `${address >>> 24}.${(address >>> 16) & 255}.${(address >>> 8) & 255}.${address & 255}`;
      list.items.set(id, { id, ip, comment: "someone else's", created_on: now(), modified_on: now() });
    }
    return [200, {}];
  }
  if (method === "POST" && path === "cap") {
    account(body.account).cap = body.cap;
    return [200, {}];
  }
  const asked = /^violations\/([^/]+)$/.exec(path);
  if (method === "GET" && asked) return [200, violations.filter((v) => v.owner === asked[1]).map((v) => v.text)];
  let found = /^accounts\/([^/]+)$/.exec(path);
  if (method === "GET" && found) {
    const acc = account(found[1]);
    return [200, {
      calls: acc.calls, refusedWhilePending: acc.refusedWhilePending, pending: acc.pending,
      lists: [...acc.lists.values()].map((l) => ({ ...listShown(l), items: [...l.items.values()].map((i) => i.ip).sort() })),
    }];
  }
  found = /^zones\/([^/]+)$/.exec(path);
  if (method === "GET" && found) {
    const z = zone(found[1]);
    return [200, { calls: z.calls, rules: z.ruleset?.rules ?? [] }];
  }
  return [404, { error: "no such control route" }];
}

// ------------------------------------------------------------------------------

function answer(res, status, body, retryAfter) {
  const headers = { "content-type": "application/json" };
  if (retryAfter !== undefined) headers["retry-after"] = String(retryAfter);
  res.writeHead(status, headers);
  res.end(JSON.stringify(body));
}

const server = createServer((req, res) => {
  let text = "";
  req.setEncoding("utf8");
  req.on("data", (chunk) => (text += chunk));
  req.on("end", () => {
    const url = new URL(req.url, "http://stand-in");
    let body;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = Symbol.for("not JSON");
    }
    if (url.pathname.startsWith("/__standin/")) {
      const [status, shown] = control(req.method, url.pathname.slice("/__standin/".length), body);
      return answer(res, status, shown);
    }
    const path = url.pathname.startsWith(BASE) ? `/${url.pathname.slice(BASE.length)}` : null;
    const op = path && match(req.method, path);
    if (!op) {
      violations.push({ owner: url.pathname.split("/")[4], text: `${req.method} ${url.pathname}: no operation of the schema` });
      return answer(res, 404, { success: false, errors: [{ code: 7003, message: "No route for the URI" }], messages: [], result: null });
    }
    const wanted = bodySchema(op.operation);
    const problems = [];
    if (body === Symbol.for("not JSON")) problems.push("the body is not JSON");
    else if (wanted && body === undefined && resolve(op.operation.requestBody)?.required) problems.push("no body");
    else if (wanted && body !== undefined) check(wanted, body, "body", problems, true);
    else if (!wanted && body !== undefined && op.method !== "DELETE") problems.push("a body where the operation takes none");
    if (!/^Bearer \S+$/.test(req.headers.authorization ?? "")) problems.push("no Authorization: Bearer header");
    const owner = op.params.account_id ?? op.params.account_identifier ?? op.params.zone_id;
    if (problems.length) {
      violations.push({ owner, text: `${req.method} ${op.template}: ${problems.join("; ")}` });
      return answer(res, 400, { success: false, errors: [{ code: 10026, message: `the request does not fit the schema: ${problems[0]}` }], messages: [], result: null });
    }
    const [status, shown, retryAfter] = cloudflare(op, req, body, url.searchParams);
    const envelope = status < 300
      ? { success: true, errors: [], messages: [], ...shown }
      : { success: false, errors: shown.errors, messages: [], result: null };
    const schema = status < 300 ? answerSchema(op.operation, status) : failureShape(op.template);
    const own = check(schema, envelope, "answer");
    if (own.length) violations.push({ owner, text: `the stand-in's own answer to ${req.method} ${op.template}: ${own.join("; ")}` });
    answer(res, status, envelope, retryAfter);
  });
});

server.listen(Number(process.argv[2] ?? 0), "127.0.0.1", () => {
  console.log(`listening ${server.address().port}`);
});
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
