//! The operator's audit log: what changed, who changed it, from where, and every
//! operator call that was refused. Kept for a year, and at most `MAX_ROWS` rows
//! of changes and as many of refusals, whichever ends first: refusals, which
//! anyone can cause, never push a change out.

use serde::{Deserialize, Serialize};

use crate::domain::code::Coded;

/// Rows of changes the log keeps at most, and rows of refusals: the oldest go first.
pub const MAX_ROWS: u64 = 100_000;
/// Days a row is kept at most.
pub const RETENTION_DAYS: u64 = 365;
/// A refusal of the same call from the same address as the last one recorded,
/// within this many seconds of it, is counted on its row.
pub const REFUSALS_MERGED_SECONDS: u64 = 60;

/// What an audit row records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Action {
    LicenseCreated,
    LicenseLabelled,
    LicenseRevoked,
    KeyCreated,
    KeyRevoked,
    ListEdited,
    ListReplaced,
    /// An operator call refused with 401 (no valid token) or 403 (a role that
    /// does not allow it).
    Refused,
}

impl Coded for Action {
    const ALL: &'static [Self] = &[
        Action::LicenseCreated,
        Action::LicenseLabelled,
        Action::LicenseRevoked,
        Action::KeyCreated,
        Action::KeyRevoked,
        Action::ListEdited,
        Action::ListReplaced,
        Action::Refused,
    ];

    fn code(self) -> &'static str {
        match self {
            Action::LicenseCreated => "license.created",
            Action::LicenseLabelled => "license.labelled",
            Action::LicenseRevoked => "license.revoked",
            Action::KeyCreated => "key.created",
            Action::KeyRevoked => "key.revoked",
            Action::ListEdited => "list.edited",
            Action::ListReplaced => "list.replaced",
            Action::Refused => "refused",
        }
    }
}

/// Who acted and from where, as a row records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    /// The acting key's name (`ADMIN_TOKEN` for the admin token); for a refusal,
    /// the name of the key refused, or none when no valid key was given.
    pub actor: Option<String>,
    /// The acting key's id (none for the admin token): names are not unique.
    pub key: Option<String>,
    /// The client's address (`CF-Connecting-IP`).
    pub client: Option<String>,
}

/// One action to record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub action: Action,
    /// What it acted on: a license id, a key id, a list, or the refused call
    /// (`METHOD /path`).
    pub target: String,
    /// What else it says: counts, the new label, the status refused.
    pub detail: String,
    pub by: Stamp,
}

/// An audit row another object wrote in its own storage, in the same write as
/// the change it records (two objects share no transaction), and sends to the
/// directory until the directory has it: numbered by that object in the order
/// its changes were made, so that the directory writes each once, however
/// often it is sent, and never one older than the last it wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Forwarded {
    /// The object that numbered it (`lists`, the lists' writer).
    pub from: String,
    pub seq: u64,
    /// When the change was made, in milliseconds since the epoch.
    pub at: u64,
    pub record: Record,
}

/// Rows the lists' writer sends the directory in one call, at most.
pub const FORWARDED_AT_ONCE: usize = 50;
/// How long a writer waits before it sends its rows again, after the
/// directory failed to take them.
pub const FORWARD_RETRY_SECONDS: u64 = 10;

/// One row as the log answers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRow {
    pub id: u64,
    pub at: String,
    pub action: String,
    pub actor: Option<String>,
    pub key: Option<String>,
    pub client: Option<String>,
    pub target: String,
    pub detail: String,
    /// How many times this happened: a refusal of the same call from the same
    /// address as the last, within a minute of it, counts on its row.
    pub count: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_has_its_own_code_and_reads_back() {
        for &action in Action::ALL {
            assert_eq!(Action::from_code(action.code()), Some(action));
        }
        let mut codes: Vec<&str> = Action::ALL.iter().map(|a| a.code()).collect();
        codes.dedup();
        assert_eq!(codes.len(), Action::ALL.len());
        assert_eq!(Action::from_code("license.deleted"), None);
    }
}
