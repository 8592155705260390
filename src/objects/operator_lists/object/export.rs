//! How the lists are read: the export, a chunk a page from the chunks of its
//! moment, of the operator's own entries or of the promoted ones; the status of
//! both lists; and the lookup of the entries covering an address with the change
//! that added each.

use std::cell::Cell;
use std::net::IpAddr;
use std::rc::Rc;

use futures_util::stream::{self, StreamExt};

use super::{Answered, Chunks, OperatorLists};
use crate::domain::net::family::Addr;
use crate::domain::operator_lists::chunk::ChunkInfo;
use crate::domain::operator_lists::list::{EntrySource, ListEntry, ListKind};
use crate::domain::operator_lists::snapshot::Manifest;
use crate::domain::time::UnixTime;
use crate::objects::operator_lists::protocol::{
    Covering, CoveringEntries, ExportHead, ListStatus, ListsStatus, SizeAt,
};
use crate::objects::protocol::Streamed;
use crate::store::operator_lists::tables::OperatorListTables;
use crate::store::sql::SqlError;

/// Changes whose list sizes a status shows: the operator page's chart of them.
const RECENT_SIZES: usize = 30;

/// A page of an export: one chunk of either family, the IPv4 ones first.
enum ExportPage {
    V4(ChunkInfo<u32>),
    V6(ChunkInfo<u128>),
}

impl ExportPage {
    /// The chunks holding any entry from `source`.
    fn all(chunks: Chunks, source: EntrySource) -> impl Iterator<Item = ExportPage> {
        let v4 = chunks.v4.into_iter().map(ExportPage::V4);
        let v6 = chunks.v6.into_iter().map(ExportPage::V6);
        v4.chain(v6).filter(move |page| match page {
            ExportPage::V4(info) => info.count(source) > 0,
            ExportPage::V6(info) => info.count(source) > 0,
        })
    }
}

/// Entries of these chunks from `source`.
fn count<A: Addr>(chunks: &[ChunkInfo<A>], source: EntrySource) -> usize {
    chunks.iter().map(|info| info.count(source)).sum()
}

/// An export under way: counted while its stream lives, so that the chunks it
/// reads are not deleted under it.
struct Reading(Rc<Cell<usize>>);

impl Reading {
    fn new(exports: Rc<Cell<usize>>) -> Self {
        exports.set(exports.get() + 1);
        Self(exports)
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        self.0.set(self.0.get() - 1);
    }
}

fn covering<A: Addr>(
    found: Vec<(
        crate::domain::net::range::Cidr<A>,
        crate::store::operator_lists::edits::Provenance,
    )>,
) -> Vec<Covering> {
    found
        .into_iter()
        .map(|(range, provenance)| Covering {
            entry: range.to_string(),
            change: provenance.edit,
            source: provenance.source,
            added_at: provenance
                .at_ms
                .map(|at| crate::domain::time::Millis(at).unix().to_rfc3339()),
            by: provenance.by,
        })
        .collect()
}

impl OperatorLists {
    /// The entries of both lists that cover `ip` (an IPv4-mapped IPv6 address is
    /// its IPv4 address), each with the change that added it.
    pub(super) fn why_listed(&self, ip: IpAddr) -> Answered<CoveringEntries> {
        let tables = self.tables();
        let ip = ip.to_canonical();
        let mut entries = CoveringEntries::default();
        for kind in [ListKind::Global, ListKind::Allow] {
            let chunks = self.with_list(kind, |list| list.chunks.clone());
            let found: Vec<Covering> = match ip {
                IpAddr::V4(v4) => covering(tables.covering(kind, &chunks.v4, u32::from(v4))?),
                IpAddr::V6(v6) => covering(tables.covering(kind, &chunks.v6, u128::from(v6))?),
            };
            match kind {
                ListKind::Global => entries.global = found,
                ListKind::Allow => entries.allow = found,
            }
        }
        Ok(entries)
    }

    /// The list as published, its entries from `source`, a chunk a page, from the
    /// chunks of that moment: those an edit replaces meanwhile stay until no
    /// export reads them.
    pub(super) fn export(
        &self,
        kind: ListKind,
        known: Option<u64>,
        source: EntrySource,
    ) -> Streamed<ExportHead, ListEntry> {
        let (chunks, version) = self.with_list(kind, |list| {
            (list.chunks.clone(), list.stored.publication.version)
        });
        if known == Some(version) {
            return Streamed {
                head: ExportHead::NotModified { version },
                pages: Box::pin(stream::empty()),
            };
        }
        let entries = count(&chunks.v4, source) + count(&chunks.v6, source);
        let head = ExportHead::List { version, entries };
        let reading = Reading::new(self.exports.clone());
        let sql = self.sql.clone();
        let pages = stream::iter(ExportPage::all(chunks, source)).map(move |page| {
            let _reading = &reading;
            let tables = OperatorListTables::new(&sql);
            Ok(match page {
                ExportPage::V4(info) => tables
                    .chunk(kind, &info)?
                    .into_iter()
                    .filter(|kept| kept.source() == source)
                    .map(|kept| ListEntry::V4(kept.range))
                    .collect(),
                ExportPage::V6(info) => tables
                    .chunk(kind, &info)?
                    .into_iter()
                    .filter(|kept| kept.source() == source)
                    .map(|kept| ListEntry::V6(kept.range))
                    .collect(),
            })
        });
        Streamed {
            head,
            pages: Box::pin(pages),
        }
    }

    pub(super) fn status(&self) -> Answered<ListsStatus> {
        let tables = self.tables();
        let summary = |kind| {
            self.with_list(kind, |list| {
                let manifest = list.stored.manifest.as_ref();
                Ok::<_, SqlError>(ListStatus {
                    entries: list.entries(),
                    promoted: list.chunks.promoted(),
                    version: list.stored.publication.version.to_string(),
                    published_at: manifest
                        .map(|manifest| UnixTime(manifest.published_at).to_rfc3339()),
                    snapshot_bytes: manifest
                        .map(|manifest| tables.snapshot_bytes(kind, manifest))
                        .transpose()?
                        .unwrap_or(0),
                    shards: manifest.map_or(0, Manifest::shard_count),
                    shards_written: manifest.map_or(0, Manifest::written),
                    recent: tables
                        .sizes(kind, RECENT_SIZES)?
                        .into_iter()
                        .map(|(at_ms, entries)| SizeAt {
                            at: UnixTime(at_ms / 1000).to_rfc3339(),
                            entries: entries as usize,
                        })
                        .collect(),
                })
            })
        };
        Ok(ListsStatus {
            global_list: summary(ListKind::Global)?,
            allow_list: summary(ListKind::Allow)?,
            pending_promotions: self.tables().queue_length()?,
        })
    }
}
