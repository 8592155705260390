//! The calls a holder's object takes, each with its answer, and its refusals.

use std::rc::Rc;

use serde::{Deserialize, Serialize};

use crate::domain::access::audit::Stamp;
use crate::domain::access::license::LicenseId;
use crate::domain::cloudflare::connection::Connect;
use crate::domain::cloudflare::link::{ConnectRefusal, Status as CloudflareStatus};
use crate::domain::feed::cap::CursorCut;
use crate::domain::feed::decision::{DecisionType, Pull};
use crate::domain::feed::feed_token::{FeedTokenInfo, NewFeedTokenRecord, PullClient};
use crate::domain::feed::item::{FeedHead, FeedRecord};
use crate::domain::holder::activity::ActivityDay;
use crate::domain::holder::allow::{AllowAnswer, AllowCall, AllowEntry};
use crate::domain::holder::entry::{Entry, HistoryEvent};
use crate::domain::holder::list::{DailyUsage, ListAnswer, ListCall};
use crate::domain::machines::alert::AlertCall;
use crate::domain::machines::credentials::{
    AlertCounts, MachineChange, MachineId, MachineInfo, NewMachineRecord,
};
use crate::domain::net::address::{Ipv6Prefix, Listed, PublicIp};
use crate::domain::net::intervals::Intervals;
use crate::domain::network::report::{ReportAnswer, ReportCall};
use crate::domain::network::reporter::ReporterNetwork;
use crate::domain::network::standing::Kept;
use crate::domain::operator_lists::delta::{AllowMoves, VersionChange};
use crate::domain::page::{AllowCursor, EntryCursor, HistoryCursor, Page, PageQuery};
use crate::domain::time::UnixTime;
use crate::domain::usage_metrics::{BouncerReport, EngineReport};
use crate::objects::calls;
use crate::objects::protocol::Protocol;

pub enum HolderProtocol {}

impl Protocol for HolderProtocol {
    type Call = HolderCall;
    type Refusal = HolderRefusal;
}

calls!(HolderProtocol => HolderCall {
    Perform => Vec<ListAnswer>,
    AllowPerform => AllowAnswer,
    Report => Vec<ReportAnswer>,
    EntryPage => Page<Entry, EntryCursor>,
    AllowPage => Page<AllowEntry, AllowCursor>,
    History => Page<HistoryEvent, HistoryCursor>,
    Usage => DailyUsage,
    Activity => Vec<ActivityDay>,
    CreateFeedToken => (),
    FeedTokens => Vec<FeedTokenInfo>,
    RevokeFeedToken => Option<String>,
    LiveLookup => (DecisionType, Option<Entry>, OwnAllow),
    Revoke => (),
    AdmitLicense => (),
    Summary => HolderSummary,
    SetNetwork => Kept,
    WhyListed => AddressListing,
    CreateMachine => (),
    Machines => Vec<MachineInfo>,
    ChangeMachine => Option<MachineInfo>,
    RevokeMachine => Option<MachineId>,
    RecordMachineLogin => (),
    TakeAlerts => AlertsAnswer,
    RecordUsage => (),
    CloudflareConnect => Result<CloudflareStatus, ConnectRefusal>,
    CloudflareState => CloudflareStatus,
    CloudflareDisconnect => Result<CloudflareStatus, ConnectRefusal>,
    #[cfg(feature = "test-hooks")]
    RunAlarm => (),
    #[cfg(feature = "test-hooks")]
    AlarmAt => Option<u64>,
    #[cfg(feature = "test-hooks")]
    WasmMemory => u64,
    #[cfg(feature = "test-hooks")]
    Meter => crate::platform::meter::Reading,
    #[cfg(feature = "test-hooks")]
    Panic => (),
    #[cfg(feature = "test-hooks")]
    PulledElsewhere => (),
    #[cfg(feature = "test-hooks")]
    AddBeforePull => (),
} streamed {
    Feed => (FeedStart, FeedRecord),
});

/// What a holder's object refuses, whatever the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HolderRefusal {
    /// The license is revoked: every call is refused from then on.
    LicenseRevoked,
    /// The feed token a feed came with no longer exists.
    FeedTokenRevoked,
    /// The holder has the most feed tokens it may.
    TooManyFeedTokens,
    /// The holder has the most machines it may.
    TooManyMachines,
    /// The machine a login or alerts came from was revoked.
    MachineRevoked,
}

/// Runs the list operations in order, in one visit: one answer per call.
#[derive(Debug, Serialize, Deserialize)]
pub struct Perform(pub Vec<ListCall>);

/// One operation of the holder's allow list. The license is named so that the
/// object can tell its record whether the holder has entries.
#[derive(Debug, Serialize, Deserialize)]
pub struct AllowPerform {
    pub license: LicenseId,
    pub call: AllowCall,
}

/// Reports of attackers, in order, in one visit: one answer per call. The
/// license is named, with when it was issued, so that the object's alarm can
/// send them on under it; every report comes from the client's `network`. The
/// canaries among the request's addresses (however the lists answered them)
/// suspend the license from the network.
#[derive(Debug, Serialize, Deserialize)]
pub struct Report {
    pub license: LicenseId,
    #[serde(default)]
    pub licensed_at: UnixTime,
    #[serde(default)]
    pub network: ReporterNetwork,
    pub calls: Vec<ReportCall>,
    #[serde(default)]
    pub canaries: Vec<PublicIp>,
}

/// The operator suspends the license from the network or reinstates it:
/// answered with its standing as kept. The change goes to every shard and, as
/// an audit row with who made it, to the directory.
#[derive(Debug, Serialize, Deserialize)]
pub struct SetNetwork {
    /// Named so that an object that never had a call of its license's knows it.
    pub license: LicenseId,
    pub suspended: bool,
    pub by: Stamp,
}

/// A page of the allow list, newest first.
#[derive(Debug, Serialize, Deserialize)]
pub struct AllowPage(pub PageQuery<AllowCursor>);

/// A page of the live entries, newest first.
#[derive(Debug, Serialize, Deserialize)]
pub struct EntryPage(pub PageQuery<EntryCursor>);

/// A page of the history, newest first.
#[derive(Debug, Serialize, Deserialize)]
pub struct History(pub PageQuery<HistoryCursor>);

/// The day's usage as stored (of any day).
#[derive(Debug, Serialize, Deserialize)]
pub struct Usage;

/// The feed's personal part: the whole live list in address order, or its changes
/// after a history number, a page at a time.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Feed {
    /// The feed token the request came with, if any: it must still exist.
    pub token: Option<String>,
    /// Who pulls with that token, and what, for its record.
    pub client: Option<PullClient>,
    /// A CrowdSec stream pull: the token's position says what changed, not `since`.
    pub pull: Option<Pull>,
    /// The changes since this history number, instead of the whole list.
    pub since: Option<u64>,
    /// The history number the caller already has: nothing else is sent if it is current.
    pub known: Option<u64>,
    /// Entries to look up (at most `store::holder::feed::MAX_PROBED`): which the list holds.
    pub probe: Vec<Listed>,
    /// Where a change of the allow list since the cursor moved the list's entries
    /// (at most `store::holder::feed::MAX_MOVED_RANGES` intervals): a delta carries them.
    pub moves: AllowMoves,
    /// A pull of a token that cuts its feed: how far the cut reaches now, which
    /// its position keeps.
    #[serde(default)]
    pub cut: CursorCut,
    /// A pull of a token that cuts its feed: how many items the cut left out,
    /// which its record shows.
    #[serde(default)]
    pub left_out: Option<u64>,
}

/// How a feed's personal part begins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedStart {
    pub head: FeedHead,
    /// What the token's CrowdSec decisions say (`ban` for an access token).
    pub decision: DecisionType,
    /// Of the entries probed, those the list holds live, in key order.
    pub listed: Vec<Listed>,
    /// The holder's own allow list, which the feed weighs beside the operator's.
    #[serde(default)]
    pub own_allow: OwnAllow,
    /// A pull: how far the cut the token's bouncer holds reached, as its
    /// position kept it.
    #[serde(default)]
    pub held_cut: CursorCut,
}

/// The holder's allow list as a feed weighs it: the addresses it holds, each
/// family as intervals (at most its bound of entries), and, for a delta, those
/// whose membership changed since the feed's cursor.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnAllow {
    pub v4: Intervals<u32>,
    pub v6: Intervals<u128>,
    pub change: VersionChange,
}

impl OwnAllow {
    pub fn is_empty(&self) -> bool {
        self.v4.is_empty() && self.v6.is_empty() && self.change.is_empty()
    }

    /// The intervals as the precedence's lists take them.
    pub fn intervals(&self) -> (Rc<Intervals>, Rc<Intervals<u128>>) {
        (Rc::new(self.v4.clone()), Rc::new(self.v6.clone()))
    }
}

/// The last 30 days' activity, oldest first.
#[derive(Debug, Serialize, Deserialize)]
pub struct Activity;

/// Records a new feed token.
#[derive(Debug, Serialize, Deserialize)]
pub struct CreateFeedToken(pub NewFeedTokenRecord);

/// The holder's feed tokens, never the tokens themselves.
#[derive(Debug, Serialize, Deserialize)]
pub struct FeedTokens;

/// Deletes a feed token; answers its digest, or none when there was no such token.
#[derive(Debug, Serialize, Deserialize)]
pub struct RevokeFeedToken(pub String);

/// A CrowdSec bouncer's live question: the token's decision type, and the live
/// entry of one address, if the list holds it.
#[derive(Debug, Serialize, Deserialize)]
pub struct LiveLookup {
    pub token: String,
    pub client: PullClient,
    pub ip: PublicIp,
    /// Which of the address's keys to look under first (`Listed::keys`).
    #[serde(default)]
    pub prefix: Ipv6Prefix,
}

/// The license is revoked: every later call is refused.
#[derive(Debug, Serialize, Deserialize)]
pub struct Revoke;

/// Whether the license may log in: refused once it is revoked, which this object
/// knows at once, however long KV's caches still show the license's key.
#[derive(Debug, Serialize, Deserialize)]
pub struct AdmitLicense;

/// What the operator's page of one license shows of its holder. Answered for a
/// revoked license too: the operator sees what it held.
#[derive(Debug, Serialize, Deserialize)]
pub struct Summary;

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HolderSummary {
    /// Live personal entries.
    pub entries: u64,
    /// Today's usage (UTC).
    pub today: DailyUsage,
    pub feed_tokens: Vec<FeedTokenInfo>,
    /// When the list last changed, as far as its history says.
    pub last_change: Option<String>,
    /// Its CrowdSec engines and what their alerts came to (none from an object
    /// of the version before them).
    #[serde(default)]
    pub machines: Vec<MachineInfo>,
    /// Its standing in the network, as kept.
    #[serde(default)]
    pub network: Kept,
}

/// The live entry that lists an address, under either of its keys, and the
/// allow-list entry that holds it (the operator's lookup; answered for a
/// revoked license too).
#[derive(Debug, Serialize, Deserialize)]
pub struct WhyListed(pub PublicIp);

#[derive(Debug, Serialize, Deserialize)]
pub struct AddressListing {
    pub entry: Option<Entry>,
    pub allowed_by: Option<AllowEntry>,
}

/// Records a new machine, with the settings every machine starts with.
#[derive(Debug, Serialize, Deserialize)]
pub struct CreateMachine(pub NewMachineRecord);

/// The holder's machines, never their passwords.
#[derive(Debug, Serialize, Deserialize)]
pub struct Machines;

/// Changes a machine's label or settings: its state after, or none when there
/// is no such machine.
#[derive(Debug, Serialize, Deserialize)]
pub struct ChangeMachine {
    pub id: String,
    pub change: MachineChange,
}

/// Deletes a machine: its login name, for its login record to go too, or none
/// when there was no such machine.
#[derive(Debug, Serialize, Deserialize)]
pub struct RevokeMachine(pub String);

/// Whether a machine may log in: refused once it is revoked (or its license
/// is), which this object knows at once, however long KV's caches still show
/// its login record. Records the login and the scenarios it named.
#[derive(Debug, Serialize, Deserialize)]
pub struct RecordMachineLogin {
    pub id: String,
    pub scenarios: Vec<String>,
}

/// A request's alerts from one machine, in one visit: one call per alert the
/// request carried, in order (an empty one for an alert that asks nothing), and
/// how many more it carried past the number one request takes. The license is
/// named so that the object's alarm can send the reports on under it.
#[derive(Debug, Serialize, Deserialize)]
pub struct TakeAlerts {
    pub license: LicenseId,
    /// When the license was issued, which its probation counts from.
    #[serde(default)]
    pub licensed_at: UnixTime,
    /// The canaries among the alerts' reported addresses: they suspend the license.
    #[serde(default)]
    pub canaries: Vec<PublicIp>,
    /// The machine's id at its holder's.
    pub machine: String,
    pub alerts: Vec<AlertCall>,
    pub beyond: u64,
    /// The engine's address, for the history.
    pub client: Option<String>,
}

/// What a request's alerts came to, and the number of its first alert at its
/// machine's: each alert's id is its number.
#[derive(Debug, Serialize, Deserialize)]
pub struct AlertsAnswer {
    pub first: u64,
    pub counts: AlertCounts,
}

/// What one of the holder's bouncers or engines reports of itself (CrowdSec's
/// usage metrics), kept on its feed token or machine; refused once that is
/// revoked, as its pulls and alerts are.
#[derive(Debug, Serialize, Deserialize)]
pub enum RecordUsage {
    /// A bouncer, by the id of the feed token it sends as its key.
    Bouncer {
        token: String,
        report: BouncerReport,
    },
    /// An engine, by its machine's id at its holder's.
    Engine {
        machine: String,
        report: EngineReport,
    },
}

/// Runs the alarm now, as the runtime fires it (the alarm set is taken off
/// first): the test build's hook, not in the deployable one.
#[cfg(feature = "test-hooks")]
#[derive(Debug, Serialize, Deserialize)]
pub struct RunAlarm;

/// The second the object's alarm is set for, as its storage holds it, if one is
/// set: the test build's hook, so that a test sees each sweep scheduled.
#[cfg(feature = "test-hooks")]
#[derive(Debug, Serialize, Deserialize)]
pub struct AlarmAt;

/// The object's WebAssembly memory in bytes (test build only).
#[cfg(feature = "test-hooks")]
#[derive(Debug, Serialize, Deserialize)]
pub struct WasmMemory;

/// The billable calls the object's isolate made (test build only).
#[cfg(feature = "test-hooks")]
#[derive(Debug, Serialize, Deserialize)]
pub struct Meter;

/// Panics in the object, as a bug would (test build only).
#[cfg(feature = "test-hooks")]
#[derive(Debug, Serialize, Deserialize)]
pub struct Panic;

/// The next pull this object tells to ask again (`FeedHead::Moved`) is followed at
/// once by another pull of the same token, through an isolate that already knew
/// the next version of the global list: two bouncers sharing a token (test build
/// only).
#[cfg(feature = "test-hooks")]
#[derive(Debug, Serialize, Deserialize)]
pub struct PulledElsewhere;

/// Adds `ip` to the list as the next pull of any token reaches the object,
/// before the pull reads it: a change between a cut's count and its pull.
#[cfg(feature = "test-hooks")]
#[derive(Debug, Serialize, Deserialize)]
pub struct AddBeforePull {
    pub ip: PublicIp,
}

/// Connects the holder's Cloudflare account: the token checked, the list found
/// or made, the zone's rule found or made; answered with the status, or why not.
#[derive(Debug, Serialize, Deserialize)]
pub struct CloudflareConnect {
    pub license: LicenseId,
    pub connect: Connect,
}

/// How the holder's Cloudflare connection stands.
#[derive(Debug, Serialize, Deserialize)]
pub struct CloudflareState;

/// Stops the sync and forgets the token; with `delete_list`, the list goes too.
#[derive(Debug, Serialize, Deserialize)]
pub struct CloudflareDisconnect {
    pub delete_list: bool,
}
