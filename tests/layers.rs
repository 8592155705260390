//! The layers point one way: `domain` ← `platform`, `store` ← `objects` ← `http` ←
//! `lib.rs`. A module may use its own layer and the layers below it, never one
//! above; `domain` uses nothing of the Worker's (`worker::`), and `platform` does
//! not use `store` (they stand side by side). This test reads every `crate::`
//! path in `src/` (in `use` lines and in code) and fails on one that points up.
//! Within a layer too, no file imports one that imports it back, however long
//! the way round: every path (`crate::`, `super::`, `self::`) of the code that
//! ships (tests left out) is followed to the file that defines it. And a file
//! holds one job: no store file passes 600 lines before its tests, no object's
//! dispatch 500.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A top-level module and its layer; modules of one layer may use each other
/// unless `apart` names them.
const LAYERS: [(&str, u8); 5] = [
    ("domain", 0),
    ("platform", 1),
    ("store", 1),
    ("objects", 2),
    ("http", 3),
];
/// Pairs that share a layer but must not use each other, the first not the second.
const APART: [(&str, &str); 1] = [("platform", "store")];

fn layer(module: &str) -> Option<u8> {
    LAYERS
        .iter()
        .find(|(name, _)| *name == module)
        .map(|(_, layer)| *layer)
}

fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

/// The top-level modules a source file names through `crate::`, with the line of each.
fn uses(text: &str) -> Vec<(String, usize)> {
    let mut named = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                // `use crate::{a::x, b}`: each item of the group, up to its end on this line.
                let group = group.split('}').next().unwrap_or("");
                named.extend(group.split(',').map(|item| {
                    (
                        item.trim().split("::").next().unwrap_or("").to_owned(),
                        number + 1,
                    )
                }));
            } else {
                let module: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                named.push((module, number + 1));
            }
        }
    }
    named.retain(|(module, _)| !module.is_empty());
    named
}

/// Every path that points up, as `file:line uses module`.
fn violations(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    let mut found = Vec::new();
    for file in files {
        let relative = file.strip_prefix(root.join("src")).unwrap();
        let Some(own) = relative
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .map(|c| c.trim_end_matches(".rs").to_owned())
        else {
            continue;
        };
        let Some(own_layer) = layer(&own) else {
            continue;
        };
        let text = fs::read_to_string(&file).unwrap();
        for (module, line) in uses(&text) {
            let Some(their_layer) = layer(&module) else {
                continue;
            };
            let apart = APART.contains(&(own.as_str(), module.as_str()));
            if their_layer > own_layer || apart {
                found.push(format!("{}:{line} ({own}) uses {module}", file.display()));
            }
        }
        if own == "domain"
            && text
                .lines()
                .any(|line| line.contains("worker::") && !line.trim_start().starts_with("//"))
        {
            found.push(format!("{}: the domain uses worker::", file.display()));
        }
    }
    found
}

#[test]
fn no_module_uses_a_layer_above_its_own() {
    let found = violations(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(
        found.is_empty(),
        "modules that point up:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_every_form_of_a_path_that_points_up() {
    let dir = std::env::temp_dir().join(format!("layers-{}", std::process::id()));
    let write = |path: &str, text: &str| {
        let path = dir.join("src").join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    };
    write(
        "domain/a.rs",
        "use crate::store::kv;\nfn f() { crate::http::x(); }\n// crate::http in a comment\n",
    );
    write("store/b.rs", "use crate::{domain::x, objects::y};\n");
    write("platform/c.rs", "use crate::store::StoreError;\n");
    write(
        "objects/d.rs",
        "use crate::domain::x;\nuse crate::store::y;\nuse crate::objects::z;\n",
    );
    write("domain/e.rs", "fn f(_: worker::Env) {}\n");
    let found = violations(&dir);
    fs::remove_dir_all(&dir).unwrap();
    let expected = [
        "a.rs:1 (domain) uses store",
        "a.rs:2 (domain) uses http",
        "b.rs:1 (store) uses objects",
        "c.rs:1 (platform) uses store",
        "e.rs: the domain uses worker::",
    ];
    for wanted in expected {
        assert!(
            found
                .iter()
                .any(|line| line.ends_with(wanted) || line.contains(wanted)),
            "{wanted} not found in {found:?}"
        );
    }
    assert_eq!(found.len(), expected.len(), "{found:?}");
}

/// The text of the code that ships: comments and `#[cfg(test)]` items blanked,
/// lines kept where they were.
fn production(text: &str) -> String {
    let mut out = Vec::new();
    let mut skipping = false;
    let mut depth = 0i32;
    let mut opened = false;
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        if !skipping && code.trim() == "#[cfg(test)]" {
            (skipping, depth, opened) = (true, 0, false);
            out.push(String::new());
            continue;
        }
        if skipping {
            for c in code.chars() {
                match c {
                    '{' => (depth, opened) = (depth + 1, true),
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if (opened && depth == 0) || (!opened && code.trim_end().ends_with(';')) {
                skipping = false;
            }
            out.push(String::new());
            continue;
        }
        out.push(code.to_owned());
    }
    out.join("\n")
}

/// The module path of a source file: `a/b.rs` and `a/b/mod.rs` are `[a, b]`.
fn module_of(relative: &Path) -> Vec<String> {
    let mut path: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if matches!(path.last().map(String::as_str), Some("mod" | "lib")) {
        path.pop();
    }
    path
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The paths of a use tree starting at `text` (after its first segment's
/// `::`), each as its segments after `start`: a group `{a, b::{c, self}}` is
/// each of its items.
fn tree(text: &str, start: Vec<String>, found: &mut Vec<Vec<String>>) -> usize {
    let mut path = start;
    let mut at = 0;
    let chars: Vec<char> = text.chars().collect();
    loop {
        while at < chars.len() && chars[at].is_whitespace() {
            at += 1;
        }
        if at < chars.len() && chars[at] == '{' {
            at += 1;
            loop {
                at += tree(&chars[at..].iter().collect::<String>(), path.clone(), found);
                while at < chars.len() && chars[at].is_whitespace() {
                    at += 1;
                }
                match chars.get(at) {
                    Some(',') => at += 1,
                    Some('}') => return at + 1,
                    _ => return at,
                }
                while at < chars.len() && chars[at].is_whitespace() {
                    at += 1;
                }
                if chars.get(at) == Some(&'}') {
                    return at + 1;
                }
            }
        }
        let segment: String = chars[at..].iter().take_while(|c| is_ident(**c)).collect();
        at += segment.chars().count();
        match segment.as_str() {
            "" | "self" => {}
            // `super::super::x`: each further `super` climbs one more.
            "super" => {
                path.pop();
            }
            _ => path.push(segment),
        }
        if chars[at..].starts_with(&[':', ':']) {
            at += 2;
        } else {
            found.push(path);
            return at;
        }
    }
}

/// The module paths a file's shipping code names, absolute, with each one's line.
fn paths(text: &str, own: &[String]) -> Vec<(Vec<String>, usize)> {
    let code = production(text);
    let mut named = Vec::new();
    for (index, _) in code.match_indices("::") {
        let before = &code[..index];
        let word: String = before
            .chars()
            .rev()
            .take_while(|c| is_ident(*c))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let start = index - word.len();
        let preceded = code[..start].chars().last();
        if preceded.is_some_and(|c| is_ident(c) || c == ':') {
            continue;
        }
        let base = match word.as_str() {
            "crate" => Vec::new(),
            "self" => own.to_vec(),
            "super" => own[..own.len().saturating_sub(1)].to_vec(),
            _ => continue,
        };
        let line = code[..start].matches('\n').count() + 1;
        let mut found = Vec::new();
        tree(&code[index + 2..], base, &mut found);
        named.extend(found.into_iter().map(|path| (path, line)));
    }
    named
}

/// The source file that defines the module a path names: its longest prefix
/// that is a file.
fn file_of(src: &Path, path: &[String]) -> Option<PathBuf> {
    (1..=path.len()).rev().find_map(|n| {
        let stem = path[..n].join("/");
        [
            src.join(format!("{stem}.rs")),
            src.join(stem).join("mod.rs"),
        ]
        .into_iter()
        .find(|file| file.is_file())
    })
}

/// Files that import each other, however long the way round: each circle as its
/// files, then the imports that close it (`file:line -> file`).
fn circles(root: &Path) -> Vec<String> {
    let src = root.join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut imports: BTreeMap<PathBuf, BTreeMap<PathBuf, usize>> = BTreeMap::new();
    for file in &files {
        let relative = file.strip_prefix(&src).unwrap().to_path_buf();
        let own = module_of(&relative);
        let text = fs::read_to_string(file).unwrap();
        let edges = imports.entry(relative.clone()).or_default();
        for (path, line) in paths(&text, &own) {
            let Some(target) = file_of(&src, &path) else {
                continue;
            };
            let target = target.strip_prefix(&src).unwrap().to_path_buf();
            if target != relative {
                edges.entry(target).or_insert(line);
            }
        }
    }
    let reach = |from: &PathBuf| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(file) = stack.pop() {
            for next in imports.get(&file).into_iter().flat_map(|e| e.keys()) {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&PathBuf, BTreeSet<PathBuf>> =
        imports.keys().map(|file| (file, reach(file))).collect();
    let mut done = BTreeSet::new();
    let mut found = Vec::new();
    for (file, from_it) in &reached {
        if done.contains(*file) || !from_it.contains(*file) {
            continue;
        }
        let circle: BTreeSet<PathBuf> = from_it
            .iter()
            .filter(|other| reached.get(other).is_some_and(|r| r.contains(*file)))
            .cloned()
            .collect();
        let mut text = format!(
            "circle: {}",
            circle
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        for member in &circle {
            for (target, line) in &imports[member] {
                if circle.contains(target) {
                    text += &format!("\n  {}:{line} -> {}", member.display(), target.display());
                }
            }
        }
        done.extend(circle);
        found.push(text);
    }
    found
}

#[test]
fn no_file_imports_one_that_imports_it_back() {
    let found = circles(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(
        found.is_empty(),
        "files that import each other (move what both need to a file of its own):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_circle_check_follows_every_form_of_a_path_and_leaves_tests_out() {
    let dir = std::env::temp_dir().join(format!("circles-{}", std::process::id()));
    let write = |path: &str, text: &str| {
        let path = dir.join("src").join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    };
    write(
        "domain/x/mod.rs",
        "pub mod a;\npub mod b;\npub mod c;\npub mod d;\n",
    );
    write(
        "domain/x/a.rs",
        "use crate::domain::x::b::B;\nuse super::d::D; // super::c::C in a comment\n",
    );
    write("domain/x/b.rs", "use super::{\n    c::{self, C},\n};\n");
    write("domain/x/c.rs", "fn f() -> crate::domain::{x::a::A} {}\n");
    write(
        "domain/x/d.rs",
        "pub struct D;\n#[cfg(test)]\nmod tests {\n    use super::super::a::A;\n}\n\
         #[cfg(test)]\nuse crate::domain::x::a;\n",
    );
    write("domain/y.rs", "use crate::domain::x::d::D;\n");
    write("domain/x/e/mod.rs", "pub mod f;\n");
    write("domain/x/e/f.rs", "pub struct F(super::super::g::G);\n");
    write(
        "domain/x/g.rs",
        "pub struct G(Box<crate::domain::x::e::f::F>);\n",
    );
    let found = circles(&dir);
    fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        found,
        [
            "circle: domain/x/a.rs, domain/x/b.rs, domain/x/c.rs\n  \
          domain/x/a.rs:1 -> domain/x/b.rs\n  \
          domain/x/b.rs:1 -> domain/x/c.rs\n  \
          domain/x/c.rs:1 -> domain/x/a.rs",
            "circle: domain/x/e/f.rs, domain/x/g.rs\n  \
          domain/x/e/f.rs:1 -> domain/x/g.rs\n  \
          domain/x/g.rs:1 -> domain/x/e/f.rs"
        ],
        "{found:#?}"
    );
}

/// Lines a store file holds at most before its tests, and an object's dispatch
/// file (`objects/*/object.rs`): past them a file holds more than one job, and
/// is split by what it keeps, as `store/holder/` is.
const STORE_LINES: usize = 600;
const DISPATCH_LINES: usize = 500;

/// The lines of a source before its tests (`#[cfg(test)] mod tests`).
fn lines_before_tests(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .position(|pair| pair[0].trim() == "#[cfg(test)]" && pair[1].starts_with("mod tests"))
        .unwrap_or(lines.len())
}

#[test]
fn no_store_file_nor_objects_dispatch_holds_more_than_one_job() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    let mut long = Vec::new();
    for file in files {
        let relative = file.strip_prefix(root.join("src")).unwrap().to_path_buf();
        let name = relative.to_string_lossy().replace('\\', "/");
        let stem = name.rsplit('/').next().unwrap_or_default();
        // Files of tests alone (`rule_tests.rs`, `test_tables.rs`) hold no job of their own.
        if stem.ends_with("_tests.rs") || stem.starts_with("test_") {
            continue;
        }
        let bound = if name.starts_with("store/") {
            STORE_LINES
        } else if name.starts_with("objects/") && name.ends_with("/object.rs") {
            DISPATCH_LINES
        } else {
            continue;
        };
        let lines = lines_before_tests(&fs::read_to_string(&file).unwrap());
        if lines > bound {
            long.push(format!(
                "  src/{name}: {lines} lines before its tests (at most {bound})"
            ));
        }
    }
    assert!(
        long.is_empty(),
        "files that hold more than one job; split each by what it keeps:\n{}",
        long.join("\n")
    );
    let text = "fn a() {}\n#[cfg(test)]\nmod tests {\n}\n";
    assert_eq!(lines_before_tests(text), 1);
    assert_eq!(lines_before_tests("fn a() {}\nfn b() {}\n"), 2);
}
