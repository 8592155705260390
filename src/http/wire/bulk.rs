//! Bulk changes: many addresses in one request, each answered as the single
//! operation would answer it.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::domain::holder::outcome::HolderOutcome;
use crate::http::wire::form;

/// At most this many addresses in one request.
pub const MAX_ADDRESSES: usize = 1000;

/// What a bulk request asks: the addresses as sent, in order, and the details
/// every address of an add gets.
#[derive(Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BulkRequest {
    pub ips: Vec<String>,
    pub ttl: Option<u64>,
    pub expires_at: Option<String>,
    pub comment: Option<String>,
    /// A report's categories, a comma list (reports only).
    pub categories: Option<String>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum BulkError {
    /// More than `MAX_ADDRESSES`.
    TooMany(usize),
    Malformed(String),
}

impl BulkRequest {
    /// The addresses as repeated `ip` form fields (with `ttl`, `expiresAt`,
    /// `comment` fields), as a `text/plain` body of one address a line (blank
    /// lines skipped), or as JSON `{"ips": [...], "ttl", "expiresAt", "comment"}`.
    pub fn parse(content_type: &str, body: &[u8]) -> Result<Self, BulkError> {
        let media_type = form::media_type(content_type).to_ascii_lowercase();
        let request = match media_type.as_str() {
            "application/json" => serde_json::from_slice(body).map_err(|e| {
                BulkError::Malformed(format!(
                    "expected {{\"ips\": [...]}} with optional ttl, expiresAt, comment, categories: {e}"
                ))
            })?,
            "text/plain" => Self {
                ips: String::from_utf8_lossy(body)
                    .lines()
                    .map(str::trim)
                    .filter(|line| !line.is_empty())
                    .map(str::to_owned)
                    .collect(),
                ..Self::default()
            },
            _ => {
                let field = |name| form::first_field(content_type, body, name);
                let ttl = match field("ttl").filter(|t| !t.is_empty()) {
                    Some(ttl) => Some(ttl.trim().parse().map_err(|_| {
                        BulkError::Malformed(format!("ttl must be whole seconds, not {ttl:?}"))
                    })?),
                    None => None,
                };
                Self {
                    ips: form::all_fields(content_type, body, "ip"),
                    ttl,
                    expires_at: field("expiresAt"),
                    comment: field("comment"),
                    categories: field("categories"),
                }
            }
        };
        if request.ips.len() > MAX_ADDRESSES {
            return Err(BulkError::TooMany(request.ips.len()));
        }
        Ok(request)
    }
}

/// How many items got each outcome, by outcome code.
pub fn counts(outcomes: &[HolderOutcome]) -> BTreeMap<&'static str, usize> {
    let mut counts = BTreeMap::new();
    for outcome in outcomes {
        *counts.entry(outcome.code()).or_insert(0) += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::holder::list::PersonalOutcome;
    use crate::domain::net::address::{PublicIp, SubmittedIp};

    fn ips(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn addresses_come_as_form_fields_text_lines_or_json() {
        let form = BulkRequest::parse(
            "application/x-www-form-urlencoded",
            b"ip=1.1.1.1&ip=+2.2.2.2&ttl=600&comment=scan&categories=ssh,web",
        )
        .unwrap();
        assert_eq!(
            form,
            BulkRequest {
                ips: ips(&["1.1.1.1", " 2.2.2.2"]),
                ttl: Some(600),
                expires_at: None,
                comment: Some("scan".into()),
                categories: Some("ssh,web".into()),
            }
        );
        let text = BulkRequest::parse(
            "text/plain; charset=utf-8",
            b"1.1.1.1\r\n\r\n  2.2.2.2 \nnot-an-ip\n",
        )
        .unwrap();
        assert_eq!(text.ips, ips(&["1.1.1.1", "2.2.2.2", "not-an-ip"]));
        let json = BulkRequest::parse(
            "application/json",
            br#"{"ips": ["1.1.1.1"], "expiresAt": "2026-12-01T00:00:00Z"}"#,
        )
        .unwrap();
        assert_eq!(
            (json.ips, json.expires_at.as_deref()),
            (ips(&["1.1.1.1"]), Some("2026-12-01T00:00:00Z"))
        );
    }

    #[test]
    fn malformed_bodies_and_too_many_addresses_are_refused() {
        assert!(matches!(
            BulkRequest::parse("application/json", br#"{"ip": ["1.1.1.1"]}"#),
            Err(BulkError::Malformed(_))
        ));
        assert!(matches!(
            BulkRequest::parse("application/x-www-form-urlencoded", b"ip=1.1.1.1&ttl=soon"),
            Err(BulkError::Malformed(_))
        ));
        let many = "8.8.8.8\n".repeat(MAX_ADDRESSES + 1);
        assert_eq!(
            BulkRequest::parse("text/plain", many.as_bytes()),
            Err(BulkError::TooMany(MAX_ADDRESSES + 1))
        );
        assert_eq!(
            BulkRequest::parse("text/plain", "8.8.8.8\n".repeat(MAX_ADDRESSES).as_bytes())
                .unwrap()
                .ips
                .len(),
            MAX_ADDRESSES
        );
        assert_eq!(
            BulkRequest::parse("", b"").unwrap(),
            BulkRequest::default(),
            "no addresses is an empty request"
        );
    }

    #[test]
    fn outcomes_are_counted_by_code() {
        let ip = || SubmittedIp::from("8.8.8.8".parse::<PublicIp>().unwrap());
        let outcomes = [
            HolderOutcome::Personal(ip(), PersonalOutcome::Added),
            HolderOutcome::Invalid("x".into()),
            HolderOutcome::Personal(ip(), PersonalOutcome::Added),
            HolderOutcome::Personal(ip(), PersonalOutcome::LimitReached),
        ];
        assert_eq!(
            counts(&outcomes),
            BTreeMap::from([("added", 2), ("invalid", 1), ("limit_reached", 1)])
        );
    }
}
