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

use build_script::{relative, shapes_the_calls, sources};

/// What `text`, the source at `path` under `src/`, does that the name of the
/// calls' shape could miss.
fn problems(path: &str, text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        if shapes_the_calls(path) {
            for named in names(code) {
                if !shapes_the_calls(&named) {
                    found.push(format!("{path}:{} uses {named}", number + 1));
                }
            }
        } else if code.contains("Serialize for") || code.contains("Deserialize<'de> for") {
            found.push(format!(
                "{path}:{} implements serde by hand where the name does not look",
                number + 1
            ));
        }
    }
    found
}

/// The source files a line's paths name, as paths under `src/`: `crate::a::b::c`
/// names `a/b/c.rs` (and the check asks about its deepest module that can be a
/// file), and `super::object` beside a `protocol.rs` names its sibling `object.rs`.
fn names(code: &str) -> Vec<String> {
    let mut named = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let path: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        let parts: Vec<&str> = path
            .split("::")
            .filter(|part| part.starts_with(|c: char| c.is_lowercase()))
            .collect();
        match parts.as_slice() {
            // An item of lib.rs itself; a group (`crate::{a, b}`) counts as one
            // too, so a covered source names each path in full.
            [] => named.push("lib.rs".to_owned()),
            parts => named.push(format!("{}.rs", parts.join("/"))),
        }
    }
    for sibling in ["object", "client"] {
        for prefix in ["super::", "self::"] {
            if code.contains(&format!("{prefix}{sibling}")) {
                named.push(format!("objects/any/{sibling}.rs"));
            }
        }
    }
    named
}

#[test]
fn the_calls_shape_is_named_by_every_source_that_can_shape_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    let found: Vec<String> = files
        .iter()
        .flat_map(|file| {
            let path = relative(file.strip_prefix(root).unwrap());
            problems(&path, &fs::read_to_string(file).unwrap())
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
        assert!(shapes_the_calls(covered), "{covered}");
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
    let protocol = "objects/holder/protocol.rs";
    for text in [
        "use crate::http::error::Refusal;",
        "use crate::objects::holder::object::Rows;",
        "    rows: crate::objects::holder::client::Rows,",
        "use super::object::Rows;",
        "use crate::Settings;",
        "use crate::objects::startup::Start;",
    ] {
        assert_eq!(problems(protocol, text).len(), 1, "{text}");
    }
    for text in [
        "use crate::domain::net::address::PublicIp;",
        "use crate::objects::protocol::{Json, Protocol};",
        "    Meter => crate::platform::meter::Reading,",
        "// use crate::http::x; in a comment",
    ] {
        assert_eq!(problems(protocol, text), Vec::<String>::new(), "{text}");
    }
    let handler = "objects/holder/object.rs";
    assert_eq!(problems(handler, "impl Serialize for Row {").len(), 1);
    assert_eq!(
        problems(handler, "impl<'de> Deserialize<'de> for Row {").len(),
        1
    );
    assert!(problems(handler, "use crate::http::x;").is_empty());
}
