//! Serves `src/openapi.json` without the indentation that keeps it readable here:
//! the document is embedded in the wasm, whose size every cold start pays for.

use std::{env, fs, path::Path};

fn main() {
    let source = "src/openapi.json";
    println!("cargo::rerun-if-changed={source}");
    let text = fs::read_to_string(source).expect("src/openapi.json");
    let out = Path::new(&env::var("OUT_DIR").expect("OUT_DIR")).join("openapi.min.json");
    fs::write(out, minify(&text)).expect("write openapi.min.json");
}

/// JSON without whitespace between tokens; strings, escapes included, are kept as they are.
fn minify(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if !c.is_whitespace() {
            in_string = c == '"';
            out.push(c);
        }
    }
    out
}
