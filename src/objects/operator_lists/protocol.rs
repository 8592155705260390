//! The calls the operator lists' object takes, each with its answer, and its refusals.

use serde::{Deserialize, Serialize};

use crate::domain::access::audit::Stamp;
use crate::domain::net::address::{Ipv6, Listed};
use crate::domain::operator_lists::list::{Changes, EditRequest, EntrySource, ListEntry, ListKind};
use crate::domain::operator_lists::snapshot::Manifest;
use crate::objects::calls;
use crate::objects::protocol::{Json, Protocol};
use crate::store::operator_lists::review::Queued;

pub enum OperatorListsProtocol {}

impl Protocol for OperatorListsProtocol {
    type Call = OperatorListsCall;
    type Refusal = OperatorListsRefusal;
}

calls!(OperatorListsProtocol => OperatorListsCall {
    Edit => Json<Edited>,
    Promote => Promoted,
    Replace => Replaced,
    WhyListed => CoveringEntries,
    Status => ListsStatus,
    PublishedManifest => Json<Manifest>,
    PendingPromotions => PendingPage,
    Review => Reviewed,
    #[cfg(feature = "test-hooks")]
    RunAlarm => bool,
    #[cfg(feature = "test-hooks")]
    FailNextSave => (),
    #[cfg(feature = "test-hooks")]
    FailPublications => (),
    #[cfg(feature = "test-hooks")]
    FailForwards => (),
    #[cfg(feature = "test-hooks")]
    WriterMemory => u64,
    #[cfg(feature = "test-hooks")]
    WriterMeter => crate::platform::meter::Reading,
} streamed {
    Export => (ExportHead, ListEntry),
});

/// What the operator lists' object refuses: the operator's input, named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperatorListsRefusal {
    /// An entry of an edit is not one the list takes; the message names it.
    BadEdit(String),
    /// A line of an import is not an entry; the message names it by number.
    BadImport(String),
    /// An import over this many bytes.
    ImportTooLarge(usize),
    /// A review named an address that is not waiting for one; the message names it.
    NotPending(String),
}

/// Removals, then additions, checked whole before anything changes; answered once
/// published. The global list's promoted entries it names (`removePromoted`) go
/// first, in the same change.
#[derive(Debug, Serialize, Deserialize)]
pub struct Edit {
    pub kind: ListKind,
    pub edit: Json<EditRequest>,
    /// Whether IPv6 entries are taken (the service's `IPV6` setting); off when
    /// a caller from before IPv6 does not say.
    #[serde(default)]
    pub ipv6: Ipv6,
    /// The acting operator key's name, kept with the change.
    #[serde(default)]
    pub by: Option<String>,
    /// Who acted and from where: the operator lists' object keeps the change's audit row with
    /// it, in the same transaction, and sends it to the directory. None from a
    /// Worker that writes the row itself, as one from before did.
    #[serde(default)]
    pub stamp: Option<Stamp>,
}

/// What an edit changed of the operator's own entries, and how many promoted
/// entries it took off when it named any (`removePromoted`): the operator's
/// answer as it is. Flat, as `Changes`, which it was before promotions, so that a
/// Worker and a writer from either side of a deployment read each other.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Edited {
    pub added: usize,
    pub removed: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promoted_removed: Option<usize>,
}

/// A batch of promotions to the global list and of their decays, from a report
/// shard: each entry an IPv4 address, an IPv6 address or a /64, as text. The
/// shards batch them, as promotions are rare and each batch is a change the
/// writer saves and publishes; it answers once saved, and the publication follows
/// at the operator lists' object's usual spacing (at most one a second, by its alarm).
#[derive(Debug, Serialize, Deserialize)]
pub struct Promote {
    pub add: Vec<String>,
    pub remove: Vec<String>,
}

/// What a batch of promotions did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Promoted {
    /// Entries promoted: not on the list before, the operator's or promoted.
    pub added: usize,
    /// Promoted entries let go of.
    pub removed: usize,
    /// Entries not promoted because the allow list holds them whole.
    pub allowed: usize,
    /// Entries the global list does not take (`ListKind::parse_entry`), and
    /// promotions of a family already at its bound.
    pub refused: usize,
    /// Promotions queued for the operator's review (`PROMOTION_REVIEW` on).
    #[serde(default)]
    pub queued: usize,
}

/// A page of the promotions waiting for the operator's review, in address
/// order, after `after`.
#[derive(Debug, Serialize, Deserialize)]
pub struct PendingPromotions {
    pub after: Option<Listed>,
    pub limit: u32,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct PendingPage {
    pub pending: Vec<Queued>,
    /// Where the next page starts, when there is one.
    pub cursor: Option<Listed>,
}

/// The operator's review: the promotions approved join the global list as any
/// promotion does, those rejected leave the queue. Every address named must be
/// waiting, or nothing changes.
#[derive(Debug, Serialize, Deserialize)]
pub struct Review {
    pub approve: Vec<String>,
    pub reject: Vec<String>,
    pub stamp: Stamp,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reviewed {
    pub approved: usize,
    pub rejected: usize,
}

/// The whole list, from the text the request uploads (gzipped when `gzip`);
/// answered once published.
#[derive(Debug, Serialize, Deserialize)]
pub struct Replace {
    pub kind: ListKind,
    pub gzip: bool,
    /// Whether IPv6 entries are taken (the service's `IPV6` setting); off when
    /// a caller from before IPv6 does not say.
    #[serde(default)]
    pub ipv6: Ipv6,
    /// The acting operator key's name, kept with the change.
    #[serde(default)]
    pub by: Option<String>,
    /// Who acted and from where, for the change's audit row, as `Edit::stamp`.
    #[serde(default)]
    pub stamp: Option<Stamp>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replaced {
    pub entries: usize,
    pub changes: Changes,
    pub version: u64,
}

/// Both lists' sizes and published versions.
#[derive(Debug, Serialize, Deserialize)]
pub struct Status;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListsStatus {
    pub global_list: ListStatus,
    pub allow_list: ListStatus,
    /// Promotions waiting for the operator's review.
    #[serde(default)]
    pub pending_promotions: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListStatus {
    pub entries: usize,
    /// Of those, the entries the holders' reports promoted (the global list's only).
    pub promoted: usize,
    /// Decimal text, as every version is shown.
    pub version: String,
    pub published_at: Option<String>,
    pub snapshot_bytes: usize,
    /// Shards of the published version, and how many of them its publication wrote.
    pub shards: usize,
    pub shards_written: usize,
    /// The list's size after each of its last changes, oldest first.
    pub recent: Vec<SizeAt>,
}

/// A list's size after a change, and when the change was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeAt {
    pub at: String,
    pub entries: usize,
}

/// A list's current manifest, for an isolate that found none in KV: the operator lists' object
/// publishes first if it never did.
#[derive(Debug, Serialize, Deserialize)]
pub struct PublishedManifest(pub ListKind);

/// The list as published, a page of entries at a time, unless the caller holds
/// that version already: the operator's own entries, or the promoted ones.
#[derive(Debug, Serialize, Deserialize)]
pub struct Export {
    pub kind: ListKind,
    pub known: Option<u64>,
    /// The operator's when a caller from before promotions does not say.
    #[serde(default)]
    pub source: EntrySource,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExportHead {
    /// The caller's version is current; no entries follow.
    NotModified {
        version: u64,
    },
    List {
        version: u64,
        entries: usize,
    },
}

/// Runs the alarm now, answering whether one was set (test build only).
#[cfg(feature = "test-hooks")]
#[derive(Debug, Serialize, Deserialize)]
pub struct RunAlarm;

/// Makes the next save of a list fail, as a storage fault would (test build only).
#[cfg(feature = "test-hooks")]
#[derive(Debug, Serialize, Deserialize)]
pub struct FailNextSave;

/// Makes every publication fail after its shards, before its manifest, until the
/// object restarts (test build only).
#[cfg(feature = "test-hooks")]
#[derive(Debug, Serialize, Deserialize)]
pub struct FailPublications;

/// Makes every call that sends the operator lists' object's audit rows to the directory fail, as
/// an unreachable directory would, or no longer (test build only).
#[cfg(feature = "test-hooks")]
#[derive(Debug, Serialize, Deserialize)]
pub struct FailForwards(pub bool);

/// The operator lists' object's WebAssembly linear memory, in bytes: the high-water mark of what
/// its Rust side ever held at once (test build only).
#[cfg(feature = "test-hooks")]
#[derive(Debug, Serialize, Deserialize)]
pub struct WriterMemory;

/// The billable calls the operator lists' object's isolate made (test build only).
#[cfg(feature = "test-hooks")]
#[derive(Debug, Serialize, Deserialize)]
pub struct WriterMeter;

/// The entries of both lists that cover one address, each with the change that added it.
#[derive(Debug, Serialize, Deserialize)]
pub struct WhyListed(pub std::net::IpAddr);

/// What the lists say of one address.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct CoveringEntries {
    pub global: Vec<Covering>,
    pub allow: Vec<Covering>,
}

/// One entry that covers the address looked up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Covering {
    pub entry: String,
    /// The edit or import that added it, by its number; 0 for a promoted entry.
    pub change: u64,
    /// `edit`, `import`, `taken-over` or `promoted`; none for an entry older than
    /// the operator lists' object's record of changes.
    pub source: Option<String>,
    pub added_at: Option<String>,
    /// The operator key that made the change.
    pub by: Option<String>,
}
