//! docs/architecture.md names every source file, and no source file that is gone:
//! its layout is the map a newcomer reads the code by, and a map that leaves a file
//! out, or sends the reader to one that is not there, misleads. A file is named by
//! its path from the repository's root (`src/http/route.rs`, not `http/route.rs`),
//! as a whole name: a path that only ends in it (`bench/floor/src/lib.rs`) does not
//! count. Every `src/…` path the document names that ends in `.rs` must be a file
//! under `src/`; a pattern (`src/domain/*.rs`) or a folder (`src/domain/`) is not a
//! file's name and is not checked.
//!
//! And the text a newcomer reads tells the truth and stays so: the README, the
//! docs, `build.rs` and every comment in `src/` name no file that is not there,
//! no count of Durable Objects but the one `wrangler.toml` binds, and no bound of
//! the modules' size but the Makefile's; the README stays at most 250 lines.
//! `bench/README.md` and the Makefile's comments are dated logs, and are not read.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

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

/// The README's length at most: what the service is, the prerequisites, the
/// two commands, the curl tour and where to read next; the rest is in docs/.
const README_LINES: usize = 250;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` whose name ends in `ext`, as paths.
fn files_under(dir: &Path, ext: &str, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_under(&path, ext, found);
        } else if path.to_string_lossy().ends_with(ext) {
            found.push(path);
        }
    }
}

/// The texts a reader reads, each with its path from the root: the README, the
/// docs, `build.rs`, and the comments of every source file (one line each, with
/// its comment marks taken off and its line number kept).
fn texts(root: &Path) -> Vec<(String, String)> {
    let mut read = vec![root.join("README.md"), root.join("build.rs")];
    files_under(&root.join("docs"), ".md", &mut read);
    let mut sources = Vec::new();
    files_under(&root.join("src"), ".rs", &mut sources);
    let relative = |path: &Path| {
        path.strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned()
    };
    let mut found: Vec<(String, String)> = read
        .iter()
        .filter(|path| path.is_file())
        .map(|path| (relative(path), fs::read_to_string(path).unwrap()))
        .collect();
    for path in sources {
        let text = fs::read_to_string(&path).unwrap();
        let comments: Vec<&str> = text
            .lines()
            .map(|line| match line.find("//") {
                Some(at) => line[at..].trim_start_matches('/').trim_start_matches('!'),
                None => "",
            })
            .collect();
        found.push((relative(&path), comments.join("\n")));
    }
    found
}

/// The file names a text gives: whole names ending in `.rs` (`route.rs`,
/// `src/http/route.rs`), and paths from a top folder of the repository with a
/// file's extension (`docs/api.md`, `bench/run.mjs`), without a pattern's
/// (`src/domain/*.rs`) or an address's (`https://…`).
fn file_names(text: &str) -> Vec<(String, usize)> {
    const TOP: [&str; 8] = [
        "src/", "tests/", "docs/", "bench/", "deploy/", "public/", "contrib/", "fuzz/",
    ];
    const EXTENSIONS: [&str; 9] = [
        ".rs", ".md", ".mjs", ".cjs", ".sh", ".toml", ".json", ".html", ".js",
    ];
    let mut found = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let rest = &text[at..];
        let Some(start) = rest.find(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        else {
            break;
        };
        let start = at + start;
        if text[..start].chars().next_back().is_some_and(in_path) {
            at = start + 1;
            continue;
        }
        let name: String = text[start..].chars().take_while(|&c| in_path(c)).collect();
        at = start + name.len().max(1);
        let name = name.trim_end_matches('.');
        let after = text[start + name.len()..].chars().next();
        let pattern = matches!(after, Some('*' | '<' | '{')) || text[..start].ends_with("://");
        let line = text[..start].matches('\n').count() + 1;
        if pattern || name.starts_with('.') {
            continue;
        }
        let from_top = TOP.iter().any(|top| name.starts_with(top))
            && EXTENSIONS.iter().any(|ext| name.ends_with(ext));
        if name.ends_with(".rs") || from_top {
            found.push((name.to_owned(), line));
        }
    }
    found
}

/// Whether a name a text at `from` gives is a file: from the root, from
/// `src/`, from the text's folder or one above it, or, for a source file's
/// bare or partial name (`object/audit.rs`), as the end of some file's path.
fn is_there(root: &Path, from: &str, name: &str, every: &[String]) -> bool {
    if root.join(name).is_file() || root.join("src").join(name).is_file() {
        return true;
    }
    let mut folder = Path::new(from).parent();
    while let Some(dir) = folder {
        if root.join(dir).join(name).is_file() {
            return true;
        }
        folder = dir.parent();
    }
    name.ends_with(".rs") && every.iter().any(|path| path.ends_with(&format!("/{name}")))
}

/// Every file of the repository a name may end, past what builds and installs write.
fn every_file(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in fs::read_dir(root).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if [
            "target",
            "build",
            "build-test",
            "node_modules",
            ".git",
            ".tools",
        ]
        .contains(&name.as_str())
        {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            let mut files = Vec::new();
            files_under(&path, "", &mut files);
            found.extend(
                files
                    .iter()
                    .map(|f| f.strip_prefix(root).unwrap().to_string_lossy().into_owned()),
            );
        }
    }
    found
}

#[test]
fn every_file_a_text_names_is_there() {
    let root = root();
    let every = every_file(root);
    let mut missing = Vec::new();
    for (from, text) in texts(root) {
        for (name, line) in file_names(&text) {
            if !is_there(root, &from, &name, &every) {
                missing.push(format!("  {from}:{line} names {name}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "texts that name a file that is not there:\n{}",
        missing.join("\n")
    );
}

/// A count as a text writes it: in figures, or in words up to twenty.
fn count(word: &str) -> Option<usize> {
    const WORDS: [&str; 21] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
    ];
    word.parse()
        .ok()
        .or_else(|| WORDS.iter().position(|w| *w == word))
}

/// The counts of Durable Objects a text gives, each with the words that give
/// it: "the five Durable Objects", "its five kinds of SQLite-backed Durable
/// Objects", "five Durable Object classes"; "one Durable Object per holder" and
/// "a fifth Durable Object" count nothing.
fn object_counts(text: &str) -> Vec<(usize, String)> {
    let words: Vec<String> = text
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '-')
                .to_lowercase()
        })
        .collect();
    let mut found = Vec::new();
    for i in 1..words.len().saturating_sub(1) {
        if words[i] != "durable" {
            continue;
        }
        let (next, then) = (&words[i + 1], words.get(i + 2));
        let said = words[i.saturating_sub(5)..(i + 3).min(words.len())].join(" ");
        if next == "object" && then.is_some_and(|w| w == "classes") {
            if let Some(n) = count(&words[i - 1]) {
                found.push((n, said));
            }
            continue;
        }
        if next != "objects" {
            continue;
        }
        let mut j = i - 1;
        if words[j] == "sqlite-backed" && j > 0 {
            j -= 1;
        }
        let kinds = j >= 2 && words[j] == "of" && words[j - 1] == "kinds";
        if kinds {
            j -= 2;
        }
        let Some(n) = count(&words[j]) else { continue };
        let determined = j > 0 && ["the", "its", "with", "all"].contains(&words[j - 1].as_str());
        if kinds || determined {
            found.push((n, said));
        }
    }
    found
}

/// The Durable Objects `wrangler.toml` binds, and the classes the code defines.
fn objects_bound(root: &Path) -> (usize, usize) {
    let toml = fs::read_to_string(root.join("wrangler.toml")).unwrap();
    let bound = toml
        .lines()
        .filter(|line| !line.trim_start().starts_with('#') && line.contains("class_name ="))
        .count();
    let mut sources = Vec::new();
    files_under(&root.join("src/objects"), ".rs", &mut sources);
    let classes = sources
        .iter()
        .map(|path| {
            fs::read_to_string(path)
                .unwrap()
                .matches("#[durable_object")
                .count()
        })
        .sum();
    (bound, classes)
}

#[test]
fn every_count_of_durable_objects_is_the_count_there_is() {
    let root = root();
    let (bound, classes) = objects_bound(root);
    assert_eq!(
        bound, classes,
        "wrangler.toml binds {bound}, the code defines {classes}"
    );
    let mut wrong = Vec::new();
    let mut counted = 0;
    for (from, text) in texts(root) {
        for (n, said) in object_counts(&text) {
            counted += 1;
            if n != bound {
                wrong.push(format!("  {from}: \"{said}\""));
            }
        }
    }
    assert!(
        counted > 0,
        "no text counts the Durable Objects: the check reads nothing"
    );
    assert!(
        wrong.is_empty(),
        "texts that count the Durable Objects otherwise than the {bound} wrangler.toml binds:\n{}",
        wrong.join("\n")
    );
}

/// The modules' bounds, as the Makefile sets them, by the names it gives them.
fn bounds(root: &Path) -> [(&'static str, u64); 3] {
    let makefile = fs::read_to_string(root.join("Makefile")).unwrap();
    let bound = |name: &str| {
        makefile
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{name} := ")))
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or_else(|| panic!("the Makefile sets no {name}"))
    };
    BOUNDS.map(|name| (name, bound(name)))
}

/// The Makefile's names of the three modules' bounds.
const BOUNDS: [&str; 3] = ["EDGE_GZIP_KIB", "MANAGE_GZIP_KIB", "OBJECTS_GZIP_KIB"];

/// The first number in `text` within a few characters of its start.
fn number_after(text: &str) -> Option<u64> {
    let start = text.find(|c: char| c.is_ascii_digit())?;
    if start > 6 || text[..start].contains(|c: char| c.is_alphabetic() && c != 'a' && c != 't') {
        return None;
    }
    text[start..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// The bounds a text gives: after a bound's name (`EDGE_GZIP_KIB`,
/// `MANAGE_GZIP_KIB`, `OBJECTS_GZIP_KIB`), its own, and after "grows past" or
/// "grew past", any of them.
fn bounds_given(text: &str) -> Vec<(Option<&'static str>, u64, usize)> {
    let mut found = Vec::new();
    let named = BOUNDS.map(|name| (Some(name), name));
    for (name, key) in named
        .into_iter()
        .chain([(None, "grows past "), (None, "grew past ")])
    {
        for (at, _) in text.match_indices(key) {
            let after = text[at + key.len()..].trim_start_matches(['`', ' ', '(', '=', ':']);
            if let Some(n) = number_after(after) {
                found.push((name, n, text[..at].matches('\n').count() + 1));
            }
        }
    }
    found
}

#[test]
fn every_bound_of_the_modules_a_text_gives_is_the_makefiles() {
    let root = root();
    let bounds = bounds(root);
    let mut wrong = Vec::new();
    for (from, text) in texts(root) {
        for (name, n, line) in bounds_given(&text) {
            let right = bounds
                .iter()
                .any(|&(bound, kib)| kib == n && name.is_none_or(|name| name == bound));
            if !right {
                wrong.push(format!("  {from}:{line}: {} {n}", name.unwrap_or("past")));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "texts that give the modules another bound than the Makefile's ({bounds:?} KiB):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_readme_is_short() {
    let lines = fs::read_to_string(root().join("README.md"))
        .unwrap()
        .lines()
        .count();
    assert!(
        lines <= README_LINES,
        "README.md is {lines} lines: at most {README_LINES}; move the rest to docs/"
    );
}

#[test]
fn the_truth_checks_read_what_they_are_meant_to() {
    let names: Vec<String> = file_names(
        "See `src/http/route.rs`, object/audit.rs and docs/api.md#x; not src/domain/*.rs, \
         https://x.io/a.rs, nor bench/floor/src/lib.rs's tail, nor sum.rs.",
    )
    .into_iter()
    .map(|(name, _)| name)
    .collect();
    assert_eq!(
        names,
        [
            "src/http/route.rs",
            "object/audit.rs",
            "docs/api.md",
            "bench/floor/src/lib.rs",
            "sum.rs"
        ]
    );
    let counts: Vec<usize> = object_counts(
        "the four Durable\n  Objects; its 5 kinds of SQLite-backed Durable Objects; \
         six Durable Object classes; one Durable Object per holder; a fifth Durable \
         Object class; 12 Durable Object requests",
    )
    .into_iter()
    .map(|(n, _)| n)
    .collect();
    assert_eq!(counts, [4, 5, 6]);
    let given: Vec<(Option<&str>, u64)> = bounds_given(
        "deploy-check fails when it grows past 515; `EDGE_GZIP_KIB` (431 KiB gzipped), \
         OBJECTS_GZIP_KIB := 378; 399.3 KiB gzipped before; MANAGE_GZIP_KIB 470",
    )
    .into_iter()
    .map(|(name, n, _)| (name, n))
    .collect();
    assert_eq!(
        given,
        [
            (Some("EDGE_GZIP_KIB"), 431),
            (Some("MANAGE_GZIP_KIB"), 470),
            (Some("OBJECTS_GZIP_KIB"), 378),
            (None, 515)
        ]
    );
}

/// A `Fails:` text that names no assertion: a bare number or status, an
/// identifier (a test's or a function's name), or text its own `Test:` lines
/// carry (cargo prints a test's name whether it passes or not).
fn says_no_assertion(fails: &str, tests: &[&str]) -> Option<&'static str> {
    let words = fails.split_whitespace().count();
    if fails.chars().all(|c| !c.is_alphabetic()) {
        return Some("a number, not an assertion's message");
    }
    if words < 2 {
        return Some("one word: an identifier or a fragment, not an assertion's message");
    }
    if tests
        .iter()
        .any(|test| test.contains(fails) || test.contains(&fails.replace(' ', "_")))
    {
        return Some("its own Test line carries it, so a passing run prints it too");
    }
    None
}

#[test]
fn every_break_names_the_assertion_message_its_tests_fail_with() {
    assert_eq!(
        says_no_assertion("413", &[]),
        Some("a number, not an assertion's message")
    );
    assert!(says_no_assertion("a refused report was written", &[]).is_none());
    assert!(says_no_assertion("entries_by_expiry", &[]).is_some());
    assert!(says_no_assertion(
        "a page of ten",
        &["cargo test --lib x::a_page_of_ten_is_shown"]
    )
    .is_some());
    let mut patches = Vec::new();
    files_under(&root().join("tests/breaks"), "patch", &mut patches);
    assert!(patches.len() > 200, "{} patches", patches.len());
    let mut wrong = Vec::new();
    for patch in &patches {
        let text = fs::read_to_string(patch).unwrap();
        let header = text.split("\ndiff --git").next().unwrap_or_default();
        let field = |name: &str| -> Vec<&str> {
            header
                .lines()
                .filter_map(|line| line.strip_prefix(name))
                .map(str::trim)
                .collect()
        };
        let (tests, fails) = (field("Test:"), field("Fails:"));
        let name = patch.file_name().unwrap().to_string_lossy().into_owned();
        if fails.is_empty() {
            wrong.push(format!("{name}: no Fails line"));
        }
        for text in fails {
            if let Some(why) = says_no_assertion(text, &tests) {
                wrong.push(format!("{name}: Fails: {text}: {why}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "breaks whose Fails names no assertion message:\n{}",
        wrong.join("\n")
    );
}

/// A break whose patch no longer applies breaks nothing: `make breaks` marks it
/// "not run" hours into a run. A change to the lines a patch edits makes the
/// patch again with it.
#[test]
fn every_break_applies_to_the_tree() {
    let mut patches = Vec::new();
    files_under(&root().join("tests/breaks"), "patch", &mut patches);
    let stale: Vec<String> = patches
        .iter()
        .filter(|patch| {
            !std::process::Command::new("git")
                .args(["apply", "--check"])
                .arg(patch)
                .current_dir(root())
                .output()
                .expect("git runs")
                .status
                .success()
        })
        .map(|patch| patch.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        stale.is_empty(),
        "breaks whose patch no longer applies (make them again on the lines as they are):\n{}",
        stale.join("\n")
    );
}
