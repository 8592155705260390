//! The name of the calls' shape (`build.rs`) covers every source that can shape a
//! call between the Worker and its objects: no source it covers uses one it
//! leaves out (the HTTP layer, `lib.rs`, the objects' handlers and clients), and
//! none it leaves out writes a serde implementation by hand. Were either
//! possible, a deployment could change how a call reads without changing its
//! name, and the Worker and its objects, deployed one after the other, would
//! misread each other's calls.

use std::fs;
use std::path::Path;

#[allow(dead_code)]
#[path = "../build.rs"]
mod build_script;

use build_script::{relative, shapes_the_calls, sources, LEFT_OUT};

/// The top-level modules under `src/` (`domain`, `http`...): what `crate::`
/// can name besides an item of `lib.rs`.
fn modules(src: &Path) -> Vec<String> {
    fs::read_dir(src)
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name != "lib.rs")
        .map(|name| name.trim_end_matches(".rs").to_owned())
        .collect()
}

/// What `text`, the source at `path` under `src/`, does that the name of the
/// calls' shape could miss; `modules` are the top-level ones.
fn problems(path: &str, text: &str, modules: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    let mut in_use = false;
    for (number, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let at = format!("{path}:{}", number + 1);
        let statement = code.trim_start();
        in_use = in_use
            || ["use ", "pub use ", "pub(crate) use "]
                .iter()
                .any(|start| statement.starts_with(start));
        let segments = path_segments(code, in_use);
        if code.contains(';') {
            in_use = false;
        }
        if !shapes_the_calls(path) {
            let by_hand = code.contains("Serialize for ")
                || (code.contains("Deserialize<'") && code.contains(" for "));
            if by_hand {
                found.push(format!(
                    "{at} implements serde by hand, where the name does not look"
                ));
            }
            continue;
        }
        for segment in segments {
            if LEFT_OUT.contains(&segment.as_str()) {
                found.push(format!("{at} names `{segment}`, which the name leaves out"));
            }
        }
        let mut rest = code;
        while let Some(start) = rest.find("crate::") {
            rest = &rest[start + "crate::".len()..];
            let first: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !modules.contains(&first) {
                found.push(format!(
                    "{at} names an item of lib.rs (`crate::{first}`), which the name leaves out"
                ));
            }
        }
    }
    found
}

/// The words of a line that are a path's segments: those beside a `::`, and
/// every word of a `use` (a group's items, `pub use client::X;`), which may
/// run over several lines (`in_use`: the line is part of one).
fn path_segments(code: &str, in_use: bool) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let word = |c: &char| c.is_alphanumeric() || *c == '_';
    let mut segments = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !word(&chars[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && word(&chars[i]) {
            i += 1;
        }
        let before: String = chars[..start]
            .iter()
            .rev()
            .take_while(|c| !word(c))
            .collect();
        let after: String = chars[i..].iter().take_while(|c| !word(c)).collect();
        // `before` is reversed: a `::` reads the same either way.
        let beside = before.trim_start().starts_with("::") || after.trim_start().starts_with("::");
        if beside || in_use {
            segments.push(chars[start..i].iter().collect());
        }
    }
    segments
}

#[test]
fn the_calls_shape_is_named_by_every_source_that_can_shape_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    let modules = modules(&root.join("src"));
    let found: Vec<String> = files
        .iter()
        .flat_map(|file| {
            let path = relative(file.strip_prefix(root).unwrap());
            problems(&path, &fs::read_to_string(file).unwrap(), &modules)
        })
        .collect();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_name_leaves_out_only_the_http_layer_and_the_objects_handlers_and_clients() {
    for covered in [
        "domain/net/address.rs",
        "store/directory.rs",
        "platform/meter.rs",
        "objects/protocol.rs",
        "objects/mod.rs",
        "objects/holder/protocol.rs",
        "objects/holder/mod.rs",
    ] {
        assert!(
            shapes_the_calls(covered),
            "{covered} can shape a call, yet the name leaves it out"
        );
    }
    for left_out in [
        "lib.rs",
        "http/routes.rs",
        "objects/startup.rs",
        "objects/holder/object.rs",
        "objects/operator_lists/object/import.rs",
        "objects/holder/client.rs",
    ] {
        assert!(!shapes_the_calls(left_out), "{left_out}");
    }
}

#[test]
fn the_check_sees_each_way_a_covered_source_could_miss() {
    let modules: Vec<String> = ["domain", "http", "objects", "platform", "store"]
        .map(String::from)
        .to_vec();
    let protocol = "objects/holder/protocol.rs";
    for text in [
        "use crate::http::error::Refusal;",
        "use crate::objects::holder::object::Rows;",
        "    rows: crate::objects::holder::client::Rows,",
        "use super::object::Rows;",
        "use super::{object::Rows, protocol};",
        "use crate::objects::holder::{protocol::Call, object::Rows};",
        "    object::Rows,",
        "use crate::objects::holder::{\n    protocol,\n    object,\n};",
        "pub use client::Rows;",
        "use super::super::holder::object::Rows;",
        "use crate::Settings;",
        "    let settings = crate::settings();",
        "use crate::{domain, store};",
        "use crate::objects::startup::Start;",
    ] {
        assert!(!problems(protocol, text, &modules).is_empty(), "{text}");
    }
    for text in [
        "use crate::domain::net::address::PublicIp;",
        "use crate::objects::protocol::{Json, Protocol};",
        "    Meter => crate::platform::meter::Reading,",
        "    let client = stub(env);",
        "    object: Kind,",
        "    license TEXT PRIMARY KEY, client TEXT,",
        "use crate::domain::page::{\n    Page,\n};\n    let client = 1;",
        "// use crate::http::x; in a comment",
    ] {
        assert_eq!(
            problems(protocol, text, &modules),
            Vec::<String>::new(),
            "{text}"
        );
    }
    let handler = "objects/holder/object.rs";
    for text in [
        "impl Serialize for Row {",
        "impl<'de> Deserialize<'de> for Row {",
        "impl<'a> Deserialize<'a> for Row {",
    ] {
        assert_eq!(problems(handler, text, &modules).len(), 1, "{text}");
    }
    assert!(problems(handler, "use crate::http::x;", &modules).is_empty());
}
