//! The calls the revocations' object takes. It writes the license records'
//! revocations and allow-list flags in KV, one at a time, and refuses only a
//! license KV does not know.

use serde::{Deserialize, Serialize};

use crate::domain::access::audit::Stamp;
use crate::domain::access::license::LicenseId;
use crate::objects::calls;
use crate::objects::protocol::Protocol;

pub enum RevocationsProtocol {}

impl Protocol for RevocationsProtocol {
    type Call = RevocationsCall;
    type Refusal = RevocationsRefusal;
}

calls!(RevocationsProtocol => RevocationsCall {
    Revoke => (),
    MarkAllowList => (),
    #[cfg(feature = "test-hooks")]
    FailNextNotice => (),
    #[cfg(feature = "test-hooks")]
    FailFilings => (),
    #[cfg(feature = "test-hooks")]
    RunAlarm => usize,
    #[cfg(feature = "test-hooks")]
    HoldMarks => u32,
});

/// What this object refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RevocationsRefusal {
    /// KV holds no record of this license.
    NoSuchLicense,
}

/// Revokes a license, in force before anything else: its record in KV is marked
/// revoked (every path consults it within the propagation bound) and its key's
/// record deleted; then its holder's object is told (a login asks it) and the
/// directory files it (its row and audit row), each now or, should that fail,
/// by the alarm until it succeeds. Answered once the record is marked and both
/// were tried; a second revocation of a revoked license is answered the same.
#[derive(Debug, Serialize, Deserialize)]
pub struct Revoke {
    pub license: LicenseId,
    /// Who revoked it, and from where, for the directory's audit row.
    pub by: Stamp,
}

/// Records on a license whether its holder has allow-list entries, as the
/// holder's object says: its `version`-th saying, which an older one never undoes.
/// Here, not in the directory, so that the one object that writes a license's
/// record never writes a revocation over, nor a revocation over it.
#[derive(Debug, Serialize, Deserialize)]
pub struct MarkAllowList {
    pub license: LicenseId,
    pub allow_list: bool,
    pub version: u64,
}

/// Makes the next notice to a holder's object fail (test build only).
#[cfg(feature = "test-hooks")]
#[derive(Debug, Serialize, Deserialize)]
pub struct FailNextNotice;

/// Makes every filing of a revocation in the directory fail, as an unreachable
/// directory would, or no longer (test build only).
#[cfg(feature = "test-hooks")]
#[derive(Debug, Serialize, Deserialize)]
pub struct FailFilings(pub bool);

/// Holds every allow-list flag's marking at its start until called with
/// `false`, as a slow KV would; answers how many markings wait (test build only).
#[cfg(feature = "test-hooks")]
#[derive(Debug, Serialize, Deserialize)]
pub struct HoldMarks(pub bool);

/// Runs the alarm now; answers how many revocations are still to be told to
/// holders' objects (test build only).
#[cfg(feature = "test-hooks")]
#[derive(Debug, Serialize, Deserialize)]
pub struct RunAlarm;
