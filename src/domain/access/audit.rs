//! The operator's audit log: what changed, who changed it, from where, and every
//! operator call that was refused. Kept for a year, and at most `MAX_ROWS` rows
//! of changes and as many of refusals, whichever ends first: refusals, which
//! anyone can cause, never push a change out.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::domain::access::license::LicenseId;
use crate::domain::access::operator::{is_key_id, ADMIN_TOKEN_NAME};
use crate::domain::code::Coded;
use crate::domain::time::UnixTime;

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
    /// A license suspended from the network, or reinstated.
    LicenseNetwork,
    KeyCreated,
    KeyRevoked,
    ListEdited,
    ListReplaced,
    CanariesEdited,
    /// Promotions the network made approved or rejected by the operator.
    PromotionsReviewed,
    /// An operator call refused with 401 (no valid token) or 403 (a role that
    /// does not allow it).
    Refused,
}

impl Coded for Action {
    const ALL: &'static [Self] = &[
        Action::LicenseCreated,
        Action::LicenseLabelled,
        Action::LicenseRevoked,
        Action::LicenseNetwork,
        Action::KeyCreated,
        Action::KeyRevoked,
        Action::ListEdited,
        Action::ListReplaced,
        Action::CanariesEdited,
        Action::PromotionsReviewed,
        Action::Refused,
    ];

    fn code(self) -> &'static str {
        match self {
            Action::LicenseCreated => "license.created",
            Action::LicenseLabelled => "license.labelled",
            Action::LicenseRevoked => "license.revoked",
            Action::LicenseNetwork => "license.network",
            Action::KeyCreated => "key.created",
            Action::KeyRevoked => "key.revoked",
            Action::ListEdited => "list.edited",
            Action::ListReplaced => "list.replaced",
            Action::CanariesEdited => "canaries.edited",
            Action::PromotionsReviewed => "promotions.reviewed",
            Action::Refused => "refused",
        }
    }
}

/// Who acted and from where, as a row records it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
    /// The object that numbered it (`lists`, the operator lists' object).
    pub from: String,
    pub seq: u64,
    /// When the change was made, in milliseconds since the epoch.
    pub at: u64,
    pub record: Record,
}

/// Rows the operator lists' object sends the directory in one call, at most.
pub const FORWARDED_AT_ONCE: usize = 50;
/// How long a writer waits before it sends its rows again, after the
/// directory failed to take them.
pub const FORWARD_RETRY_SECONDS: u64 = 10;

/// Operator calls refused, as one isolate counts them before the directory hears
/// of them: one client's (an IPv6 one's by its /64), of one status and key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusals {
    /// When the first of them was refused, in milliseconds since the epoch.
    pub at: u64,
    /// The first call refused, as `METHOD /path`.
    pub call: String,
    /// `401` (no standing key) or `403` (a role that does not open the route).
    pub status: String,
    /// The key refused when it is one the directory knows, and the client.
    pub by: Stamp,
    pub count: u64,
}

impl Refusals {
    /// The row that records them.
    pub fn record(&self) -> Record {
        Record {
            action: Action::Refused,
            target: self.call.clone(),
            detail: self.status.clone(),
            by: self.by.clone(),
        }
    }
}

/// Clients (with their status and key) one isolate counts refusals of at most
/// before it tells the directory.
pub const TALLIED: usize = 1_000;

/// The refusals one isolate counted that the directory has not heard of: anyone
/// can cause them, so they are told a tally at a time, never a row a refusal,
/// and a flood of made-up keys, whether from one client or many, costs the
/// directory at most a call a minute an isolate (and one when the log is read).
#[derive(Debug, Default)]
pub struct RefusalTally {
    /// The minute in which a refusal last told the directory.
    told: Option<u64>,
    /// By client (an IPv6 one by its /64), status and key.
    counted: HashMap<(String, String, Option<String>), Refusals>,
}

impl RefusalTally {
    /// Counts `refusal`, from `client` as the rate limit counts it; answers what
    /// to tell the directory now: everything counted, at the first refusal of each
    /// minute (so the log shows a flood as it starts) and when the tally is full.
    pub fn refused(&mut self, client: String, refusal: Refusals) -> Vec<Refusals> {
        let minute = refusal.at / 60_000;
        let key = (client, refusal.status.clone(), refusal.by.key.clone());
        self.counted
            .entry(key)
            .and_modify(|counted| counted.count += refusal.count)
            .or_insert(refusal);
        if self.told == Some(minute) && self.counted.len() < TALLIED {
            return Vec::new();
        }
        self.told = Some(minute);
        self.take()
    }

    /// Everything counted, the oldest first: what the directory is told before
    /// its log is read, so that the log holds every refusal counted until then.
    pub fn take(&mut self) -> Vec<Refusals> {
        let mut taken: Vec<Refusals> = self.counted.drain().map(|(_, counted)| counted).collect();
        taken.sort_by_key(|counted| counted.at);
        taken
    }
}

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

/// Which rows of the log a page shows: each filter given narrows it, the rows
/// of one kind, by one key, on one license, within a time.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditFilter {
    pub kind: Option<AuditKind>,
    pub key: Option<KeyFilter>,
    /// A license id: the rows whose target it is (its creation, labels, revocation).
    pub license: Option<String>,
    /// The rows of this moment and later, in milliseconds since the epoch.
    pub from: Option<u64>,
    /// The rows before this moment, in milliseconds since the epoch.
    pub to: Option<u64>,
}

/// A kind of row: every change (no refusal), or one action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AuditKind {
    Changes,
    Action(Action),
}

/// Whose rows: the admin token's (`ADMIN_TOKEN` in a query), or one operator
/// key's (by its id, names not being unique).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum KeyFilter {
    AdminToken,
    Key(String),
}

impl AuditFilter {
    /// The filters as a query gives them, each optional and none empty: `kind`
    /// `changes` or an action's code, `key` a key's id or `ADMIN_TOKEN`,
    /// `license` a license id, `from` and `to` RFC 3339 times; or why one is
    /// not taken (a 400).
    pub fn parse(
        kind: Option<&str>,
        key: Option<&str>,
        license: Option<&str>,
        (from, to): (Option<&str>, Option<&str>),
    ) -> Result<Self, String> {
        let kind = match kind.map(str::trim) {
            None => None,
            Some("changes") => Some(AuditKind::Changes),
            Some(code) => {
                let action = Action::from_code(code).ok_or_else(|| {
                    let codes: Vec<&str> = Action::ALL.iter().map(|a| a.code()).collect();
                    format!("kind is changes or one of {}", codes.join(", "))
                })?;
                Some(AuditKind::Action(action))
            }
        };
        let key = match key.map(str::trim) {
            None => None,
            Some(ADMIN_TOKEN_NAME) => Some(KeyFilter::AdminToken),
            Some(id) if is_key_id(id) => Some(KeyFilter::Key(id.to_owned())),
            Some(_) => {
                return Err(format!(
                    "key is an operator key's id (key_…) or {ADMIN_TOKEN_NAME}"
                ))
            }
        };
        let license = match license.map(str::trim) {
            None => None,
            Some(id) => Some(
                LicenseId::parse(id)
                    .ok_or("license is a license id (lic_…)")?
                    .as_str()
                    .to_owned(),
            ),
        };
        let time = |name: &str, text: Option<&str>| {
            text.map(|text| {
                UnixTime::parse_rfc3339(text)
                    .map(|at| at.0.saturating_mul(1000))
                    .ok_or_else(|| format!("{name} is an RFC 3339 time, e.g. 2026-11-21T00:00:00Z"))
            })
            .transpose()
        };
        let (from, to) = (time("from", from)?, time("to", to)?);
        if let (Some(from), Some(to)) = (from, to) {
            if from >= to {
                return Err("from is before to".to_owned());
            }
        }
        Ok(Self {
            kind,
            key,
            license,
            from,
            to,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(at: u64, client: &str, key: Option<&str>) -> Refusals {
        Refusals {
            at,
            call: format!("GET /admin/status?{at}"),
            status: "401".into(),
            by: Stamp {
                actor: key.map(|_| "alice".into()),
                key: key.map(str::to_owned),
                client: Some(client.into()),
            },
            count: 1,
        }
    }

    #[test]
    fn refusals_are_told_a_tally_at_a_time_the_first_of_each_minute_at_once() {
        let mut tally = RefusalTally::default();
        let first = refused(1_000, "a", None);
        assert_eq!(tally.refused("a".into(), first.clone()), [first]);
        // The rest of the minute is counted, a row a client and key.
        for n in 0..500 {
            let client = ["a", "b", "c"][n as usize % 3];
            let key = (n % 2 == 0).then_some("key_1");
            let told = tally.refused(client.into(), refused(2_000 + n, client, key));
            assert!(
                told.is_empty(),
                "{n}: a refusal within the minute is counted, not told at once"
            );
        }
        // The first of the next minute tells everything counted, oldest first.
        let told = tally.refused("d".into(), refused(60_000, "d", None));
        let counts: Vec<(u64, u64)> = told.iter().map(|r| (r.at, r.count)).collect();
        assert_eq!(
            counts,
            [
                (2_000, 84),
                (2_001, 84),
                (2_002, 83),
                (2_003, 83),
                (2_004, 83),
                (2_005, 83),
                (60_000, 1),
            ]
        );
        assert_eq!(told[0].call, "GET /admin/status?2000", "the first call");
        assert!(tally.take().is_empty());
        let counted = tally.refused("e".into(), refused(61_000, "e", None));
        assert!(counted.is_empty());
        assert_eq!(tally.take().len(), 1, "what reading the log takes");
    }

    #[test]
    fn a_flood_from_many_clients_is_told_when_the_tally_is_full() {
        let mut tally = RefusalTally::default();
        tally.refused("first".into(), refused(0, "first", None));
        let mut told = 0;
        for n in 0..(3 * TALLIED as u64) {
            let client = format!("2001:db8:{n:x}::/64");
            let refusal = refused(1 + n, &client, None);
            told += tally.refused(client, refusal).len();
        }
        assert_eq!(told, 3 * TALLIED, "told in tallies of {TALLIED} clients");
        assert!(tally.take().is_empty());
    }

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

    #[test]
    fn a_filter_takes_a_kind_a_key_a_license_and_times_each_in_its_shape() {
        let none = (None, None);
        assert_eq!(
            AuditFilter::parse(None, None, None, none),
            Ok(AuditFilter::default())
        );
        let filter = AuditFilter::parse(
            Some("license.revoked"),
            Some("key_0123456789abcdef"),
            Some("lic_0123456789abcdef01234567"),
            (
                Some("2026-11-21T00:00:00Z"),
                Some("2026-11-22T00:00:00+01:00"),
            ),
        )
        .unwrap();
        assert_eq!(
            filter,
            AuditFilter {
                kind: Some(AuditKind::Action(Action::LicenseRevoked)),
                key: Some(KeyFilter::Key("key_0123456789abcdef".to_owned())),
                license: Some("lic_0123456789abcdef01234567".to_owned()),
                from: Some(1_795_219_200_000),
                to: Some(1_795_302_000_000),
            }
        );
        let changes = AuditFilter::parse(Some("changes"), Some("ADMIN_TOKEN"), None, none).unwrap();
        assert_eq!(
            (changes.kind, changes.key),
            (Some(AuditKind::Changes), Some(KeyFilter::AdminToken))
        );
        for (kind, key, license, times, why) in [
            (
                Some("deleted"),
                None,
                None,
                none,
                "kind is changes or one of",
            ),
            (
                None,
                Some("alice"),
                None,
                none,
                "key is an operator key's id",
            ),
            (None, None, Some("lic_x"), none, "license is a license id"),
            (
                None,
                None,
                None,
                (Some("yesterday"), None),
                "from is an RFC 3339 time",
            ),
            (
                None,
                None,
                None,
                (None, Some("2026-11-21")),
                "to is an RFC 3339 time",
            ),
            (
                None,
                None,
                None,
                (Some("2026-11-21T00:00:00Z"), Some("2026-11-21T00:00:00Z")),
                "from is before to",
            ),
        ] {
            let refused = AuditFilter::parse(kind, key, license, times).unwrap_err();
            assert!(refused.starts_with(why), "{refused}");
        }
    }
}
