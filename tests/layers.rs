//! The layers point one way: `domain` ← `platform`, `store` ← `objects` ← `http` ←
//! `lib.rs`. A module may use its own layer and the layers below it, never one
//! above; `domain` uses nothing of the Worker's (`worker::`), and `platform` does
//! not use `store` (they stand side by side). This test reads every `crate::`
//! path in `src/` (in `use` lines and in code) and fails on one that points up.

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
