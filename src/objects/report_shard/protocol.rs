//! The calls a report shard takes. It refuses nothing.

use crate::domain::access::license::LicenseId;
use serde::{Deserialize, Serialize};

use crate::domain::net::address::Listed;
use crate::domain::network::report::Outgoing;
use crate::domain::time::UnixTime;
use crate::objects::calls;
use crate::objects::protocol::{NoRefusal, Protocol};
use crate::store::report_shard::lookup::AddressTally;

pub enum ReportShardProtocol {}

impl Protocol for ReportShardProtocol {
    type Call = ReportShardCall;
    type Refusal = NoRefusal;
}

calls!(ReportShardProtocol => ReportShardCall {
    Count => Vec<Listed>,
    Forget => (),
    SetStanding => (),
    TallyOf => AddressTally,
    Tallies => Vec<AddressTally>,
    Dismiss => (),
    #[cfg(feature = "test-hooks")]
    RunAlarm => (),
});

/// A batch of one license's reports of addresses of this shard; answers those
/// whose consensus the batch completed.
#[derive(Debug, Serialize, Deserialize)]
pub struct Count {
    pub license: LicenseId,
    /// When the license was issued, which its probation counts from.
    pub licensed_at: UnixTime,
    pub reports: Vec<Outgoing>,
}

/// The license is suspended from the network (`true`) or reinstated: its
/// reports are kept, and count only while it is not suspended.
#[derive(Debug, Serialize, Deserialize)]
pub struct SetStanding {
    pub license: LicenseId,
    pub suspended: bool,
}

/// The license is revoked: its reports stop counting.
#[derive(Debug, Serialize, Deserialize)]
pub struct Forget(pub LicenseId);

/// Reporters a tally names at most, the most recent first.
pub const MOST_REPORTERS: u64 = 100;

/// Who reported an address (the most recent reporters, at most this many: none
/// for a holder, who sees only how many), and whether the consensus holds.
#[derive(Debug, Serialize, Deserialize)]
pub struct TallyOf(pub Listed, pub u64);

/// `TallyOf` for several addresses of this shard (a page of the review queue),
/// each with at most this many reporters: answered in their order.
#[derive(Debug, Serialize, Deserialize)]
pub struct Tallies(pub Vec<Listed>, pub u64);

/// Addresses one `Tallies` call asks of a shard at most.
pub const MOST_TALLIES: usize = 100;

/// The operator took these addresses' promotions off: only reports made after
/// this moment promote them again.
#[derive(Debug, Serialize, Deserialize)]
pub struct Dismiss(pub Vec<Listed>);

/// Runs the alarm now: decays, and tells the operator lists' object what is pending (test build only).
#[cfg(feature = "test-hooks")]
#[derive(Debug, Serialize, Deserialize)]
pub struct RunAlarm;
