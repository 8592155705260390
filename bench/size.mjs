// The module's size, broken down: its sections, and its code by function group and
// by crate, read from the release module with its names kept (`make bench`
// optimizes the unoptimized copies `make build` keeps as the build does, names
// kept: target/<part>_bg.named.wasm for the edge, the management Worker and the
// objects). Sizes are the
// functions' bodies in bytes, before gzip; after `-Oz` a caller often holds what
// it inlined, so a group is where the code ended up, not only what it was
// written as.

import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";

const SECTION_NAMES = ["custom", "type", "import", "function", "table", "memory", "global", "export", "start", "element", "code", "data", "data count"];

/** The module's sections, and each defined function's name and body size. */
export function functions(bytes) {
  let at = 8;
  const leb = () => {
    let value = 0, shift = 0, byte;
    do {
      byte = bytes[at++];
      value += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    return value;
  };
  const text = (length) => bytes.subarray(at, (at += length)).toString();
  const sections = [];
  const bodies = [];
  const names = new Map();
  let imported = 0;
  while (at < bytes.length) {
    const id = bytes[at++];
    const size = leb();
    const end = at + size;
    let name = SECTION_NAMES[id] ?? `section ${id}`;
    if (id === 0) {
      name = `custom: ${text(leb())}`;
      if (name === "custom: name") {
        while (at < end) {
          const kind = bytes[at++];
          const length = leb();
          const next = at + length;
          if (kind === 1) for (let count = leb(); count > 0; count--) names.set(leb(), text(leb()));
          at = next;
        }
      }
    } else if (id === 2) {
      for (let count = leb(); count > 0; count--) {
        text(leb());
        text(leb());
        const kind = bytes[at++];
        if (kind === 0) (leb(), imported++);
        else if (kind === 1) (at++, bytes[at++] & 1 ? (leb(), leb()) : leb());
        else if (kind === 2) (bytes[at++] & 1 ? (leb(), leb()) : leb());
        else if (kind === 3) at += 2;
        else if (kind === 4) (at++, leb());
      }
    } else if (id === 10) {
      for (let count = leb(); count > 0; count--) {
        const length = leb();
        bodies.push(length);
        at += length;
      }
    }
    sections.push({ name, bytes: size });
    at = end;
  }
  return { sections, functions: bodies.map((size, index) => ({ name: plain(demangle(names.get(index + imported) ?? "")), bytes: size })) };
}

/** A legacy-mangled Rust name as a path (`_ZN...E`); v0 names (`_R...`) keep their idents. */
export function demangle(name) {
  if (name.startsWith("_ZN")) {
    const parts = [];
    let at = 3;
    while (at < name.length && name[at] !== "E") {
      const digits = /^\d+/.exec(name.slice(at));
      if (!digits) break;
      at += digits[0].length;
      parts.push(name.slice(at, (at += Number(digits[0]))));
    }
    if (/^h[0-9a-f]{16}$/.test(parts.at(-1) ?? "")) parts.pop();
    return parts
      .join("::")
      .replaceAll("$LT$", "<").replaceAll("$GT$", ">").replaceAll("$u20$", " ").replaceAll("$RF$", "&")
      .replaceAll("$C$", ",").replaceAll("$u7b$", "{").replaceAll("$u7d$", "}").replaceAll("$BP$", "*").replaceAll("..", "::")
      .replace(/^_</, "<").replaceAll("::_{", "::{");
  }
  if (name.startsWith("_R")) {
    // v0: identifiers are <length><text> (a leading `_` when the text starts with a
    // digit); crates carry a disambiguator (`Cs<base62>_`) first.
    const plain = name.replace(/(?<=[CXYMNvtc])s[0-9A-Za-z]*_/g, "").replace(/B[0-9A-Za-z]*_/g, "");
    const parts = [];
    for (let at = 2; at < plain.length; ) {
      const digits = /^\d+/.exec(plain.slice(at));
      if (!digits) {
        at++;
        continue;
      }
      at += digits[0].length;
      if (plain[at] === "_") at++;
      parts.push(plain.slice(at, (at += Number(digits[0]))));
    }
    return parts.join("::");
  }
  return name;
}

/** A demangled name without what only tells instances apart: crates'
 *  disambiguators (`core[c5930c85a12de822]`) and symbols' hashes. */
function plain(name) {
  return name.replace(/\[[0-9a-f]{16}\]/g, "").replace(/::h[0-9a-f]{16}$/, "").replaceAll("{closure#0}", "{{closure}}");
}

/** The crate a function's code is written in: the first path segment, or the
 *  trait implementor's (`<greylist::x::Y as serde::Serialize>` is greylist's). */
export function crateOf(name) {
  // `<T as trait>` is the trait's crate; `<f64 as ...>`, `<str>` the core library's.
  const subject = name.replace(/^<+&?(mut )?([A-Z]\w{0,2} as )?/, "");
  if (/^(str|char|bool|[iuf](8|16|32|64|128|size)|\[)/.test(subject)) return "core";
  const first = /^([a-z_][a-z0-9_]*)::/.exec(subject);
  if (first) return first[1];
  if (/^(__wbindgen|__wbg|__externref|wasm_bindgen)/.test(name)) return "wasm_bindgen";
  if (/^(memcpy|memset|memmove|memcmp|__rust|__rdl|__rg|__multi|__ashl|__lshr|__udiv|__umod|__div|__mul)/.test(name)) return "compiler_builtins";
  return "(unnamed)";
}

// The groups a function falls in, the first that matches.
const GROUPS = [
  ["the runtime's entry futures (`future_to_promise`: each handler's whole future, inlined)", (n) => n.includes("future_to_promise")],
  ["our async functions' futures (`{{closure}}`)", (n) => n.startsWith("greylist::") && n.includes("{{closure}}")],
  ["JSON (serde_json, per type it reads or writes)", (n) => n.includes("serde_json")],
  ["postcard (the objects' calls and answers)", (n) => n.includes("postcard")],
  ["serde's derived code (our types' Serialize and Deserialize, their visitors)", (n) => /serde(_core)?::(de|ser)|Visitor|__Field/.test(n)],
  ["formatting (core::fmt, float and integer printing)", (n) => /core::fmt|flt2dec|fmt::num|::fmt$/.test(n)],
  ["panics and unwrapping", (n) => /panic|unwrap_failed|expect_failed|core::result::|core::option::/.test(n)],
  ["allocation and collections (alloc, hashbrown, dlmalloc)", (n) => /^(<)?(alloc|hashbrown|dlmalloc)::|__rust_(alloc|dealloc|realloc)|RawVec/.test(n)],
  ["JavaScript glue (wasm-bindgen, js-sys, web-sys, worker)", (n) => /wasm_bindgen|js_sys|web_sys|worker(_sys)?::|^__wbg|^__wbindgen|^__externref/.test(n)],
  ["other futures (futures_util's streams, combinators)", (n) => /futures_util|futures_core|Future|Stream/.test(n)],
  ["our own code: domain", (n) => /^<?greylist::domain::/.test(n)],
  ["our own code: store", (n) => /^<?greylist::store::/.test(n)],
  ["our own code: objects", (n) => /^<?greylist::objects::/.test(n)],
  ["our own code: http", (n) => /^<?greylist::http::/.test(n)],
  ["our own code: elsewhere (platform, lib.rs)", (n) => /greylist::/.test(n)],
  ["the core library (sorting, iterators, parsing, searching)", (n) => crateOf(n) === "core"],
];

/** The breakdown of a named module: sections, groups, crates, largest functions. */
export function breakdown(path) {
  const { sections, functions: all } = functions(readFileSync(path));
  const code = all.reduce((sum, f) => sum + f.bytes, 0);
  const tally = (key) => {
    const sums = new Map();
    for (const f of all) sums.set(key(f.name), (sums.get(key(f.name)) ?? 0) + f.bytes);
    return [...sums].map(([name, bytes]) => ({ name, bytes })).sort((a, b) => b.bytes - a.bytes);
  };
  const groups = tally((name) => (GROUPS.find(([, test]) => test(name)) ?? ["other crates (jwt-compact, sha2, base64ct, memchr, chrono...)"])[0]);
  const crates = tally(crateOf);
  const largest = [...all].sort((a, b) => b.bytes - a.bytes).slice(0, 12);
  return { sections: sections.filter((s) => !s.name.startsWith("custom: name")), code, functions: all.length, groups, crates, largest };
}

/** A deployable module's size: raw, and gzipped at level 9, as deploy-check
 *  weighs it against its bound (tests/module-size.mjs). */
export function moduleSize(path) {
  const bytes = readFileSync(path);
  return { raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
}

/** The breakdown as the bench prints it: the Workers' modules and their cold
 *  starts, then each one's code. */
export function breakdownLines(size) {
  const kib = (bytes) => (bytes / 1024).toFixed(1);
  return [
    `The Workers' modules: ${Object.entries(size.halves)
      .map(([half, m]) => `${half} ${kib(m.gzip)} KiB gzipped (${kib(m.raw)} KiB raw)`)
      .join(", ")}.`,
    "",
    `What each costs a cold start on workerd (bench/cold-start.mjs: from the process's start to its first answer, median of its starts, less the start with no module): ${Object.entries(size.coldStart)
      .filter(([name]) => name !== "none")
      .map(([name, c]) => `${name} ${c.moduleMs.toFixed(1)} ms`)
      .join(", ")} (with no module: ${size.coldStart.none.medianMs.toFixed(1)} ms).`,
    "",
    ...Object.entries(size.each).flatMap(([half, one]) => [`**The ${half}'s module.**`, "", ...codeLines(one), ""]),
  ];
}

/** One named module's code: sections, groups, crates, largest functions. */
function codeLines(size) {
  const share = (bytes) => `${((100 * bytes) / size.code).toFixed(1)} %`;
  const kib = (bytes) => (bytes / 1024).toFixed(1);
  return [
    `The module's code: ${kib(size.code)} KiB in ${size.functions} functions, before gzip; its sections: ${size.sections.map((s) => `${s.name} ${kib(s.bytes)} KiB`).join(", ")}`,
    "",
    "| group | KiB | share |",
    "|---|---:|---:|",
    ...size.groups.map((g) => `| ${g.name} | ${kib(g.bytes)} | ${share(g.bytes)} |`),
    "",
    "| crate | KiB | share |",
    "|---|---:|---:|",
    ...size.crates.slice(0, 14).map((c) => `| ${c.name} | ${kib(c.bytes)} | ${share(c.bytes)} |`),
    "",
    "| largest functions | KiB |",
    "|---|---:|",
    ...size.largest.map((f) => `| \`${f.name.replaceAll("|", "\\|").slice(0, 110)}\` | ${kib(f.bytes)} |`),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(codeLines(breakdown(process.argv[2] ?? "target/edge_bg.named.wasm")).join("\n"));
