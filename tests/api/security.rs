//! What the security model promises: only our HS256 tokens get in, one holder
//! cannot reach another's list, and secrets stay secret.

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::helpers::{form_body, Encoding, Mode, Server, TestApp, ADMIN_TOKEN, JWT_SECRET};

/// `{"alg":"none","typ":"JWT"}`, base64url.
const ALG_NONE_HEADER: &str = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0";
/// `{"alg":"HS512","typ":"JWT"}`, base64url.
const HS512_HEADER: &str = "eyJhbGciOiJIUzUxMiIsInR5cCI6IkpXVCJ9";

fn segments(token: &str) -> Vec<String> {
    token.split('.').map(str::to_owned).collect()
}

#[test]
fn forged_tokens_never_reach_another_holders_list() {
    let (attacker, victim) = (TestApp::new(), TestApp::new());
    let (mine, theirs) = (segments(&attacker.token), segments(&victim.token));
    let forgeries = [
        format!("{ALG_NONE_HEADER}.{}.", theirs[1]),
        format!("{ALG_NONE_HEADER}.{}.{}", theirs[1], mine[2]),
        format!("{HS512_HEADER}.{}.{}", theirs[1], mine[2]),
        format!("{}.{}.{}", mine[0], theirs[1], mine[2]),
        format!("{}.{}.", theirs[0], theirs[1]),
        format!("{}.{}", theirs[0], theirs[1]),
    ];
    for forged in &forgeries {
        let resp = attacker.add_as(forged, "45.45.45.45");
        assert_eq!(resp.status, 401, "{forged}: {}", resp.body);
        assert_eq!(
            resp.json(),
            json!({ "result": "Unauthorized: the access token is missing or invalid" })
        );
    }
    assert_eq!(
        victim.check("45.45.45.45"),
        "[45.45.45.45] is currently not on global greylist"
    );
}

#[test]
fn naming_another_license_in_the_form_query_or_path_changes_nothing() {
    let (attacker, victim) = (TestApp::new(), TestApp::new());
    let fields = [
        ("ip", "46.46.46.46"),
        ("license", victim.license.as_str()),
        ("sub", victim.license.as_str()),
    ];
    for encoding in [Encoding::Multipart, Encoding::Urlencoded] {
        let (content_type, body) = form_body(encoding, &fields);
        let path = format!(
            "/api/addIpToGreylist?license={0}&sub={0}&result_mode=json",
            victim.license
        );
        attacker.post(
            &path,
            Mode::Plain,
            &[("Content-Type", content_type.clone())],
            &body,
        );
        let resp = attacker.post(
            &format!("/api/addIpToGreylist/{}", victim.license),
            Mode::Json,
            &[("Content-Type", content_type)],
            &body,
        );
        assert_eq!(resp.status, 404);
    }
    assert_eq!(
        victim.check("46.46.46.46"),
        "[46.46.46.46] is currently not on global greylist"
    );
    assert_eq!(
        attacker.check("46.46.46.46"),
        "[46.46.46.46] is currently on your personal greylist"
    );
}

#[test]
fn license_keys_exist_at_rest_only_as_sha256_digests() {
    let server = Server::shared();
    let (_, key) = server.create_license();
    let digest = greylist::domain::access::license::key_digest(&key);
    let stored = all_bytes_under(&server.state_dir.join("wrangler"));
    assert!(
        !contains(&stored, key.as_bytes()),
        "the key itself is stored somewhere"
    );
    assert!(
        contains(&stored, digest.as_bytes()),
        "its digest is not where logins look it up"
    );
}

#[test]
fn no_secret_key_or_token_appears_in_logs_or_responses() {
    let server = Server::shared();
    let app = TestApp::new();
    app.add("47.47.47.47");
    app.check("47.47.47.47");
    let bad = app.add_as(&format!("{}x", app.token), "47.47.47.47");
    let login = server.login(&app.license_key);
    let log = server
        .log_once(|line| line.contains(&app.license) && line.contains("\"operation\":\"login\""));
    assert!(log.contains(&app.license), "the log names the license");
    for secret in [JWT_SECRET, ADMIN_TOKEN, &app.license_key, &app.token] {
        assert!(!log.contains(secret), "a secret is in the log");
        assert!(!bad.body.contains(secret));
    }
    let issued = login.json()["accessToken"].as_str().unwrap().to_owned();
    assert!(!log.contains(&issued));
}

#[test]
fn dev_vars_is_ignored_and_its_example_holds_no_secret() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ignored = Command::new("git")
        .current_dir(root)
        .args(["check-ignore", "-q", ".dev.vars"])
        .status()
        .unwrap();
    assert!(ignored.success(), ".dev.vars must be git-ignored");
    let example = fs::read_to_string(root.join(".dev.vars.example")).unwrap();
    for name in ["JWT_SECRET", "ADMIN_TOKEN"] {
        let line = example
            .lines()
            .find(|l| l.starts_with(&format!("{name}=")))
            .unwrap_or_else(|| panic!("{name} is not in the example"));
        assert!(line.contains("=replace-with-"), "not a placeholder: {line}");
    }
}

fn all_bytes_under(dir: &Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    for entry in fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            bytes.extend(all_bytes_under(&path));
        } else {
            bytes.extend(fs::read(&path).unwrap_or_default());
        }
    }
    bytes
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
