//! The README's examples, pasted in order into a fresh server, print what the
//! README says they print. Every ```sh block that uses `$BASE` runs, in one shell,
//! in order; the `# ` lines right after a command are its expected output, where
//! `…` stands for any text (a key, a time, a line of headers).

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::helpers::{fresh_state_dir, Server, ADMIN_TOKEN};

/// One command of the README and what it should print.
struct Example {
    command: String,
    expected: Vec<String>,
}

fn examples(readme: &str) -> Vec<Example> {
    let mut examples = Vec::new();
    let mut blocks = readme
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
            examples.push(Example { command, expected });
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

#[test]
fn every_example_of_the_readme_prints_what_the_readme_says() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = fs::read_to_string(root.join("README.md")).unwrap();
    let examples = examples(&readme);
    assert!(
        examples.len() > 25,
        "the README's examples were not found: {}",
        examples.len()
    );
    let server = Server::own(&[]);
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
                "{}\n  expected: {}\n  printed:  {}",
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
