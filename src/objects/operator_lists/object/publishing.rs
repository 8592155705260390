//! Publication to KV: the immutable, versioned snapshot of a list (its shards
//! and the promoted parts of the global list's, then its manifest, written
//! last) and the pieces of what changed, at most once a second, and the shards
//! no manifest names any more let go of, with their promoted parts.

use std::time::Duration;

use worker::Delay;

use super::OperatorLists;
use crate::domain::code::Coded;
use crate::domain::operator_lists::cut::{self, Published};
use crate::domain::operator_lists::delta::{self, Piece, PromotedChange, VersionChange};
use crate::domain::operator_lists::list::ListKind;
use crate::domain::operator_lists::publication::{Attempt, Next};
use crate::domain::operator_lists::snapshot::{Ipv6Shards, Manifest};
use crate::platform::clock;
use crate::platform::meter::{self, Billable};
use crate::store::kv::put_text;
use crate::store::operator_lists::snapshots::{binding, piece_key, MANIFEST_KEY};
use crate::store::operator_lists::tables::PieceKey;
use crate::store::sql::{SqlError, Transactional};
use crate::store::StoreError;

/// Shards of a replaced version stay this long, for isolates that still read its
/// manifest from a cache (30 seconds at the edge, 30 in an isolate).
const RETIRED_SHARDS_KEPT_SECONDS: u64 = 120;

/// What one publication deletes from KV at most, retired shards and pieces no
/// window needs: a reset lets a day's pieces go, and a run of one KV call each
/// for all of them would pass what one invocation may make. The rest go at the
/// next publications; until then they are only kept, never read.
const KV_DELETES_PER_PUBLICATION: u64 = 200;

/// The changes of at least this long are published, whatever their number.
const DELTA_WINDOW_SECONDS: u64 = 24 * 60 * 60;

impl OperatorLists {
    /// Returns, with the version, once a publication includes change number
    /// `change`: at once when the last one is a second old, else after it,
    /// together with every change that arrived meanwhile. Other requests run
    /// while one waits here; what to do is `Publication::next`'s to say.
    pub(super) async fn publish_including(
        &self,
        kind: ListKind,
        change: u64,
    ) -> std::result::Result<u64, StoreError> {
        loop {
            let now = clock::now().0;
            let (publication, publishing) =
                self.with_list(kind, |list| (list.stored.publication, list.publishing));
            if publication.includes(change) {
                return Ok(publication.version);
            }
            let wait = match publication.next(now) {
                _ if publishing => 10,
                Next::WaitUntil(due) => due - now,
                Next::Idle | Next::Publish => 0,
            };
            if wait > 0 {
                Delay::from(Duration::from_millis(wait)).await;
                continue;
            }
            self.with_list_mut(kind, |list| list.publishing = true);
            let published = self.publish(kind).await;
            self.with_list_mut(kind, |list| list.publishing = false);
            if let Err(error) = published {
                // Nothing is lost: the change stays saved and unpublished, and the alarm tries again.
                let retry = publication.failed(clock::now().0);
                self.state
                    .storage()
                    .set_alarm(Duration::from_millis(retry.saturating_sub(now)))
                    .await?;
                return Err(error);
            }
        }
    }

    /// Builds the new version's shards that it does not share with the version
    /// before, from the chunks, and its piece of changes, all kept in SQLite in
    /// one stretch with no await, so they are the list of one moment; then writes
    /// them to KV, then its manifest: only then is it the version isolates read.
    /// Shards no manifest names any more, a failed publication's included, go once
    /// no cache can still name them.
    pub(super) async fn publish(&self, kind: ListKind) -> std::result::Result<(), StoreError> {
        let now = clock::now().0 / 1000;
        let tables = self.tables();
        let built = self.sql.atomically(|| {
            self.with_list_mut(kind, |list| {
                // The number is stored before anything is written under it, so it is never used twice.
                let attempt = list.stored.publication.begin();
                tables.save_publication(kind, &list.stored)?;
                let manifest = list.stored.manifest.as_ref();
                let before = || {
                    manifest.map(|manifest| Published {
                        manifest,
                        rev: list.stored.rev,
                    })
                };
                let v4 = cut::plan(attempt.version, &list.chunks.v4, before());
                let v6 = cut::plan(attempt.version, &list.chunks.v6, before());
                let built4 = tables.build_shards(kind, &list.chunks.v4, &v4, manifest)?;
                let built6 = tables.build_shards(kind, &list.chunks.v6, &v6, manifest)?;
                let piece = match (built4.change, built6.change) {
                    (Some(v4), Some(v6)) => {
                        match (built4.promoted_change, built6.promoted_change) {
                            (Some(p4), Some(p6)) => Piece::of(VersionChange {
                                v4,
                                v6,
                                promoted: PromotedChange { v4: p4, v6: p6 },
                            }),
                            _ => Piece::Reset,
                        }
                    }
                    _ => Piece::Reset,
                };
                let reset = piece == Piece::Reset;
                self.save_pieces(kind, piece, attempt)?;
                // Every live chunk was written by an edit numbered at most this one.
                let rev = self.last_edit.get();
                let promoted = (built4.promoted, built6.promoted);
                Ok((attempt, (v4, v6), promoted, list.entries(), reset, rev))
            })
        });
        let (attempt, (v4, v6), (promoted4, promoted6), entries, reset, rev) = built?;
        let window = tables.published_version(
            kind,
            attempt.version,
            now,
            now.saturating_sub(DELTA_WINDOW_SECONDS),
        )?;
        let since = self.with_list(kind, |list| {
            list.stored.manifest.as_ref().map_or(0, |m| m.deltas_from)
        });
        let deltas_from = match (reset, since) {
            (true, _) | (_, 0) => attempt.version,
            (false, since) => since.max(window.unwrap_or(0)),
        };
        // Each shard written, and the promoted part of those built with one.
        let written: Vec<String> = (v4.writes.iter().map(|&index| v4.keys[index].clone()))
            .chain(v6.writes.iter().map(|&index| v6.keys[index].clone()))
            .chain(v4.promoted_writes(&promoted4))
            .chain(v6.promoted_writes(&promoted6))
            .collect();
        // The global list's manifest names its shards' promoted parts, even none,
        // so that the next version can share them; the allow list promotes nothing.
        let named = |promoted: Vec<u32>| (kind == ListKind::Global).then_some(promoted);
        let (promoted4, promoted6) = (
            named(v4.promoted(&promoted4)),
            named(v6.promoted(&promoted6)),
        );
        let gone: Vec<String> = v4.gone.into_iter().chain(v6.gone).collect();
        let manifest = Manifest {
            version: attempt.version,
            published_at: now,
            entries,
            shards: v4.starts,
            keys: v4.keys,
            promoted: promoted4,
            deltas_from,
            ipv6: Ipv6Shards {
                starts: v6.starts,
                keys: v6.keys,
                promoted: promoted6,
            },
        };
        let kv = self.env.kv(binding(kind))?;
        if let Err(error) = self.write(kind, &kv, &written, &manifest).await {
            // What was written under the number is never named by a manifest this
            // writer knows of: it goes like a replaced version's shards.
            tables.retire(kind, &written, now)?;
            return Err(error);
        }
        self.with_list_mut(kind, |list| {
            // The next manifest write is a second after this one, not after this publication began.
            list.stored.publication.succeeded(attempt, clock::now().0);
            list.stored.manifest = Some(manifest.clone());
            list.stored.rev = rev;
            tables.save_publication(kind, &list.stored)
        })?;
        tables.retire(kind, &gone, now)?;
        let due = now.saturating_sub(RETIRED_SHARDS_KEPT_SECONDS);
        let retired_due = tables.retired_before(due, KV_DELETES_PER_PUBLICATION)?;
        let pieces_left = KV_DELETES_PER_PUBLICATION - retired_due.len() as u64;
        for retired in retired_due {
            meter::count(Billable::KvWrite);
            self.env
                .kv(binding(retired.kind))?
                .delete(&retired.key)
                .await?;
            tables.forget_shard(retired.kind, &retired.key)?;
            tables.forget_retired(&retired)?;
        }
        for key in tables.pieces_until(kind, deltas_from, pieces_left)? {
            meter::count(Billable::KvWrite);
            kv.delete(&piece_key(key.version, key.level)).await?;
            tables.forget_piece(kind, key)?;
        }
        Ok(())
    }

    /// Stores the pieces of changes the attempt's version publishes: level 0 is
    /// `first`, what changed since the version before; each level above joins two
    /// of the level below.
    pub(super) fn save_pieces(
        &self,
        kind: ListKind,
        first: Piece,
        attempt: Attempt,
    ) -> std::result::Result<(), SqlError> {
        let tables = self.tables();
        let mut below = first;
        for level in delta::levels(attempt.version) {
            let piece = match level {
                0 => below,
                _ => {
                    let half = PieceKey {
                        version: delta::piece_start(attempt.version, level - 1),
                        level: level - 1,
                    };
                    match tables.piece(kind, half)? {
                        Some(earlier) => Piece::join(&earlier, &below),
                        None => Piece::Reset,
                    }
                }
            };
            tables.save_piece(
                kind,
                PieceKey {
                    version: attempt.version,
                    level,
                },
                &piece,
            )?;
            below = piece;
        }
        Ok(())
    }

    /// Writes to KV what a publication needs before its manifest: every piece not
    /// there yet (a failed publication's included), the shards, then the manifest.
    pub(super) async fn write(
        &self,
        kind: ListKind,
        kv: &worker::kv::KvStore,
        shards: &[String],
        manifest: &Manifest,
    ) -> std::result::Result<(), StoreError> {
        let tables = self.tables();
        for key in tables.pieces_not_in_kv(kind)? {
            if let Some(piece) = tables.piece(kind, key)? {
                meter::count(Billable::KvWrite);
                kv.put_bytes(&piece_key(key.version, key.level), &piece.encode())?
                    .execute()
                    .await?;
            }
            tables.piece_in_kv(kind, key)?;
        }
        for key in shards {
            let bytes = tables.shard_bytes(kind, key)?.ok_or_else(|| {
                StoreError::Corrupt(format!("{} list: shard {key} was not kept", kind.code()))
            })?;
            meter::count(Billable::KvWrite);
            kv.put_bytes(key, &bytes)?.execute().await?;
        }
        if self.failing_publications.get() {
            return Err(StoreError::Corrupt(
                "KV failed before the manifest, made by the test hook".to_owned(),
            ));
        }
        meter::count(Billable::KvWrite);
        put_text(kv, MANIFEST_KEY, &serde_json::to_string(manifest)?)?
            .execute()
            .await?;
        Ok(())
    }
}
