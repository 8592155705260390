//! The examples of the README and of the documents that continue it, pasted in
//! order into a fresh server, print what they say they print. Every ```sh block
//! that uses `$BASE` runs, in one shell, file after file in the order of
//! `DOCUMENTS` and in order within each; the `# ` lines right after a command are
//! its expected output, where `…` stands for any text (a key, a time, a line of
//! headers).

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::helpers::{fresh_state_dir, Server, ADMIN_TOKEN};

/// The files whose examples run, in this order; docs/testing.md states it too.
/// The README's tour comes first and docs/api.md goes on from it: its examples use
/// the tour's variables (`$ACCESS_TOKEN`, `$LICENSE_JSON`) and their answers the
/// state it leaves (the lists' versions, the day's counts), so moving an example
/// from one file to another, or reordering these, changes what every later one
/// prints. Every document in docs/ is here, so that none holds an example that
/// never runs.
const DOCUMENTS: [&str; 5] = [
    "README.md",
    "docs/api.md",
    "docs/operations.md",
    "docs/architecture.md",
    "docs/testing.md",
];

/// One command of a document and what it should print.
struct Example {
    /// The document it is in, to name in a failure.
    document: &'static str,
    command: String,
    expected: Vec<String>,
}

fn examples(document: &'static str, text: &str) -> Vec<Example> {
    let mut examples = Vec::new();
    let mut blocks = text
        .split("```sh\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap_or(""));
    for block in blocks.by_ref().filter(|block| block.contains("$BASE")) {
        let mut lines = block.lines().peekable();
        while let Some(line) = lines.next() {
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let mut command = line.to_owned();
            while command.ends_with('\\') {
                command.pop();
                command.push_str(lines.next().unwrap_or(""));
            }
            let mut expected = Vec::new();
            while let Some(comment) = lines.peek().and_then(|line| line.strip_prefix("# ")) {
                expected.push(comment.to_owned());
                lines.next();
            }
            examples.push(Example {
                document,
                command,
                expected,
            });
        }
    }
    examples
}

/// `expected` as a pattern: `…` is any text, across lines too.
fn matches(expected: &[String], actual: &str) -> bool {
    let pattern: Vec<String> = expected
        .iter()
        .map(|line| {
            line.split('…')
                .map(regex_escape)
                .collect::<Vec<_>>()
                .join("[\\s\\S]*?")
        })
        .collect();
    let pattern = format!("(?i)^{}$", pattern.join("\r?\n"));
    simple_regex(&pattern, actual.trim_end())
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if "\\.+*?()|[]{}^$".contains(c) {
                vec!['\\', c]
            } else {
                vec![c]
            }
        })
        .collect()
}

/// Matching by Python's `re`, which every machine of the project has (the contract
/// tests need it too), rather than a regex crate for one test.
fn simple_regex(pattern: &str, text: &str) -> bool {
    let output = Command::new("python3")
        .args([
            "-c",
            "import re,sys; sys.exit(0 if re.fullmatch(sys.argv[1], sys.argv[2]) else 1)",
            pattern,
            text,
        ])
        .output()
        .unwrap();
    output.status.success()
}

/// The Markdown files of docs/ that `DOCUMENTS` leaves out: their examples would never run.
fn unplaced_documents(root: &Path) -> Vec<String> {
    fs::read_dir(root.join("docs"))
        .unwrap()
        .flatten()
        .map(|entry| format!("docs/{}", entry.file_name().to_string_lossy()))
        .filter(|path| path.ends_with(".md") && !DOCUMENTS.contains(&path.as_str()))
        .collect()
}

#[test]
fn every_example_of_the_readme_and_the_docs_prints_what_it_says() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Checked before any server starts: a document out of the order fails at once.
    let unplaced = unplaced_documents(root);
    assert!(
        unplaced.is_empty(),
        "documents whose examples would never run, to place in DOCUMENTS: {unplaced:?}"
    );
    let examples: Vec<Example> = DOCUMENTS
        .into_iter()
        .flat_map(|document| {
            let text = fs::read_to_string(root.join(document))
                .unwrap_or_else(|error| panic!("{document}: {error}"));
            examples(document, &text)
        })
        .collect();
    assert!(
        examples.len() > 25,
        "the documents' examples were not found: {}",
        examples.len()
    );
    let server = Server::own(&[]);
    // The network's examples wait, as a newcomer would, for what the alarms do.
    server.behind_the_real_clock();
    // The IPv6 section's examples, on a server started with IPv6 on.
    let ipv6 = Server::own(&[("IPV6", "on")]);
    // Where a newcomer pastes them: a folder with `.dev.vars`, as `make dev` writes it.
    let dir = fresh_state_dir();
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join(".dev.vars"),
        format!("JWT_SECRET=unused\nADMIN_TOKEN={ADMIN_TOKEN}\n"),
    )
    .unwrap();
    let mut script = String::new();
    for (n, example) in examples.iter().enumerate() {
        let command = example
            .command
            .replace(
                "BASE=http://127.0.0.1:8787",
                &format!("BASE={}", server.base),
            )
            .replace(
                "BASE6=http://127.0.0.1:8787",
                &format!("BASE6={}", ipv6.base),
            );
        script.push_str(&format!("echo '<<<{n}>>>'\n{command}\necho '<<<end>>>'\n"));
    }
    let output = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut failures = Vec::new();
    for (n, example) in examples.iter().enumerate() {
        let start = format!("<<<{n}>>>\n");
        let actual = stdout
            .split(&start)
            .nth(1)
            .and_then(|rest| rest.split("<<<end>>>").next())
            .unwrap_or("(no output: the script stopped)");
        if !example.expected.is_empty() && !matches(&example.expected, actual) {
            failures.push(format!(
                "{}: {}\n  expected: {}\n  printed:  {}",
                example.document,
                example.command,
                example.expected.join("\n            "),
                actual.trim_end().replace('\n', "\n            ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} examples print something else:\n\n{}\n\nstderr:\n{}",
        failures.len(),
        examples.len(),
        failures.join("\n\n"),
        String::from_utf8_lossy(&output.stderr)
    );
}
