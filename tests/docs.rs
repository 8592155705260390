//! docs/architecture.md names every source file, and no source file that is gone:
//! its layout is the map a newcomer reads the code by, and a map that leaves a file
//! out, or sends the reader to one that is not there, misleads. A file is named by
//! its path from the repository's root (`src/http/route.rs`, not `http/route.rs`),
//! as a whole name: a path that only ends in it (`bench/floor/src/lib.rs`) does not
//! count. Every `src/…` path the document names that ends in `.rs` must be a file
//! under `src/`; a pattern (`src/domain/*.rs`) or a folder (`src/domain/`) is not a
//! file's name and is not checked.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

const DOCUMENT: &str = "docs/architecture.md";

/// Every `*.rs` file under `dir`, as its path from `root` with `/` between the parts.
fn sources(root: &Path, dir: &Path, found: &mut BTreeSet<String>) {
    for entry in fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(root, &path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let parts: Vec<_> = path
                .strip_prefix(root)
                .unwrap()
                .components()
                .map(|part| part.as_os_str().to_string_lossy())
                .collect();
            found.insert(parts.join("/"));
        }
    }
}

/// Whether `c` may be part of a path as the document writes one.
fn in_path(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_-./".contains(c)
}

/// The `src/…` paths a text names, each a whole name: it starts where no path
/// character comes before it and ends before the first that is not one, without a
/// sentence's full stop after it.
fn named(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (at, _) in text.match_indices("src/") {
        if text[..at].chars().next_back().is_some_and(in_path) {
            continue;
        }
        let path: String = text[at..].chars().take_while(|&c| in_path(c)).collect();
        found.insert(path.trim_end_matches('.').to_owned());
    }
    found
}

/// The source files, and the paths the document names.
fn files_and_named() -> (BTreeSet<String>, BTreeSet<String>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = BTreeSet::new();
    sources(root, &root.join("src"), &mut files);
    assert!(!files.is_empty(), "no source files found under src/");
    let text = fs::read_to_string(root.join(DOCUMENT)).unwrap();
    (files, named(&text))
}

/// The paths, an indented line each, for a failure's message.
fn lines(paths: &[&String]) -> String {
    paths
        .iter()
        .map(|path| format!("  {path}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_architecture_names_every_source_file() {
    let (files, named) = files_and_named();
    let missing: Vec<&String> = files.difference(&named).collect();
    assert!(
        missing.is_empty(),
        "{DOCUMENT} does not name these source files; give each its line in the layout:\n{}",
        lines(&missing)
    );
}

#[test]
fn the_architecture_names_no_source_file_that_is_gone() {
    let (files, named) = files_and_named();
    let gone: Vec<&String> = named
        .iter()
        .filter(|path| path.ends_with(".rs") && !files.contains(*path))
        .collect();
    assert!(
        gone.is_empty(),
        "{DOCUMENT} names source files that do not exist:\n{}",
        lines(&gone)
    );
}

#[test]
fn the_check_reads_a_path_as_a_whole_name() {
    let text = "`src/lib.rs` and src/http/route.rs. Not bench/floor/src/lib.rs, nor \
                xsrc/a.rs; `src/domain/*.rs` and src/store/ are no file's name.";
    let expected: BTreeSet<String> = [
        "src/domain/",
        "src/http/route.rs",
        "src/lib.rs",
        "src/store/",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(named(text), expected);
}
