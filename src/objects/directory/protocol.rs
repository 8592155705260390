//! The calls the directory's object takes. Every call that changes something
//! carries who made it, and the object writes its audit row in the same call.

use serde::{Deserialize, Serialize};

use crate::domain::access::audit::{AuditFilter, AuditRow, Forwarded, Record, Refusals, Stamp};
use crate::domain::access::license::LicenseId;
use crate::domain::access::operator::{Denied, KnownKeys, Role};
use crate::domain::net::address::Ipv6;
use crate::objects::calls;
use crate::objects::protocol::Protocol;
use crate::store::canaries::{Edited, Published};
use crate::store::directory::keys::KeyRow;
use crate::store::directory::licenses::LicenseRow;

pub enum DirectoryProtocol {}

impl Protocol for DirectoryProtocol {
    type Call = DirectoryCall;
    type Refusal = DirectoryRefusal;
}

calls!(DirectoryProtocol => DirectoryCall {
    PublishKeys => KnownKeys,
    CreateLicense => NewLicense,
    Relabel => LicenseRow,
    FileRevocation => (),
    License => LicenseRow,
    Licenses => LicensePage,
    Count => u64,
    CreateKey => NewKey,
    Keys => Vec<KeyRow>,
    RevokeKey => (),
    Record => (),
    RecordForwarded => (),
    RecordRefusals => (),
    Audit => AuditPage,
    EditCanaries => Edited,
    Canaries => Published,
    Labels => Vec<(LicenseId, String)>,
});

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DirectoryRefusal {
    /// No operator key has this digest, or it was revoked (or no key was given).
    UnknownKey,
    /// The key stands but its role does not open the route.
    Denied(Denied),
    NoSuchLicense,
    NoSuchKey,
    /// As many operator keys stand as may.
    TooManyKeys,
    /// A page's cursor this service did not give out.
    UnknownCursor,
    /// An edit of the canaries the list does not take; the message says why.
    BadCanaries(String),
}

/// The operator keys every isolate checks a key against, published in KV
/// (`store::operator_keys`) if this instance has not yet: what a Worker asks
/// when KV has no record of them (before the first change of a key after the
/// directory came to publish them).
#[derive(Debug, Serialize, Deserialize)]
pub struct PublishKeys;

/// Issues a license (its record and key in KV, its row here) and records it.
#[derive(Debug, Serialize, Deserialize)]
pub struct CreateLicense {
    pub label: String,
    pub note: String,
    pub by: Stamp,
}

/// A license as created: the only time its key is shown.
#[derive(Debug, Serialize, Deserialize)]
pub struct NewLicense {
    pub license_key: String,
    pub row: LicenseRow,
}

/// Sets a license's label, note or both.
#[derive(Debug, Serialize, Deserialize)]
pub struct Relabel {
    pub license: LicenseId,
    pub label: Option<String>,
    pub note: Option<String>,
    pub by: Stamp,
}

/// Files a revocation the revocations' object made (the license's record in KV
/// says so already): the license's row marked revoked, and its audit row
/// written at the time it was made, the first time only, however often it is
/// sent.
#[derive(Debug, Serialize, Deserialize)]
pub struct FileRevocation {
    pub license: LicenseId,
    /// When it was revoked, in milliseconds.
    pub at: u64,
    pub by: Stamp,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct License(pub LicenseId);

/// A page of licenses, newest first, those whose label starts with `prefix` if given.
#[derive(Debug, Serialize, Deserialize)]
pub struct Licenses {
    pub prefix: Option<String>,
    pub cursor: Option<String>,
    pub limit: u32,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct LicensePage {
    pub licenses: Vec<LicenseRow>,
    pub cursor: Option<String>,
}

/// How many licenses were ever issued, revoked ones included.
#[derive(Debug, Serialize, Deserialize)]
pub struct Count;

#[derive(Debug, Serialize, Deserialize)]
pub struct CreateKey {
    pub name: String,
    pub role: Role,
    pub by: Stamp,
}

/// A key as created: the only time it is shown.
#[derive(Debug, Serialize, Deserialize)]
pub struct NewKey {
    pub key: String,
    pub row: KeyRow,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Keys;

#[derive(Debug, Serialize, Deserialize)]
pub struct RevokeKey {
    pub id: String,
    pub by: Stamp,
}

/// Audit rows another object kept with its changes, oldest first: each written
/// once, however often it is sent (`Forwarded`).
#[derive(Debug, Serialize, Deserialize)]
pub struct RecordForwarded(pub Vec<Forwarded>);

/// Operator calls refused, as an isolate counted them (`RefusalTally`): each
/// written as a row with its count, or counted on the last refusal's row.
#[derive(Debug, Serialize, Deserialize)]
pub struct RecordRefusals(pub Vec<Refusals>);

/// A page of the audit log, newest first: the rows `filter` lets through,
/// after the row `cursor` names (from the page before).
#[derive(Debug, Serialize, Deserialize)]
pub struct Audit {
    #[serde(default)]
    pub filter: AuditFilter,
    #[serde(default)]
    pub cursor: Option<String>,
    pub limit: u32,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct AuditPage {
    pub entries: Vec<AuditRow>,
    pub cursor: Option<String>,
}

/// Removes, then adds, canaries: every entry or none, and the list at most
/// `MAX_CANARIES`; published before it is answered, and recorded.
#[derive(Debug, Serialize, Deserialize)]
pub struct EditCanaries {
    pub add: Vec<String>,
    pub remove: Vec<String>,
    /// Whether IPv6 entries are taken (the service's `IPV6` setting).
    pub ipv6: Ipv6,
    pub by: Stamp,
}

/// The canaries, in address order, with the number of their last edit.
#[derive(Debug, Serialize, Deserialize)]
pub struct Canaries;

/// The labels of these licenses (at most `MAX_LABELS`), as `(license, label)`:
/// those filed, in no particular order.
#[derive(Debug, Serialize, Deserialize)]
pub struct Labels(pub Vec<LicenseId>);

/// Licenses one `Labels` call names at most.
pub const MAX_LABELS: usize = 1_000;
