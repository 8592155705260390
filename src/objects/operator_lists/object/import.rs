//! How the lists change: an edit, applied to the chunks it falls in, and an
//! import, staged a run at a time beside the list and swapped in at once; each saved
//! in one transaction with its record, then installed in memory. Neither changes
//! the global list's promoted entries (`object/promotion.rs`) but where the
//! operator says so: an edit's `removePromoted` takes them off, and an entry an
//! edit adds or an import lists is the operator's from then on.

use worker::console_error;

use super::{Answered, Chunks, OperatorLists};
use crate::domain::access::audit::{Action, Record, Stamp};
use crate::domain::code::Coded;
use crate::domain::net::address::Ipv6;
use crate::domain::operator_lists::list::{
    Changes, EditRequest, EntrySet, Import, ListKind, ParsedEdit, MAX_IMPORT_BYTES,
    MAX_IPV6_LIST_ENTRIES, MAX_LIST_ENTRIES,
};
use crate::objects::operator_lists::protocol::{Edited, OperatorListsRefusal, Replaced};
use crate::objects::protocol::Failure;
use crate::platform::clock;
use crate::platform::stream::{gunzip, Chunks as BodyChunks};
use crate::store::operator_lists::edits::Source;
use crate::store::operator_lists::tables::{OperatorListTables, PublicationState};
use crate::store::sql::{DurableSql, SqlError, Transactional};
use crate::store::StoreError;

/// The runs an import staged, numbered across both families, each family's apart.
#[derive(Default)]
struct Runs {
    v4: Vec<usize>,
    v6: Vec<usize>,
}

impl Runs {
    /// Stages a run's entries, each family as a run of its own; an IPv6 run only
    /// when it holds any (an IPv4 run always, as a list always has an IPv4 chunk).
    fn stage(
        &mut self,
        tables: &OperatorListTables<&DurableSql>,
        import: u64,
        run: &crate::domain::operator_lists::list::EntrySet,
    ) -> std::result::Result<(), SqlError> {
        let next = self.v4.len() + self.v6.len();
        tables.stage_run(import, next, &run.v4)?;
        self.v4.push(next);
        if !run.v6.is_empty() {
            tables.stage_run(import, next + 1, &run.v6)?;
            self.v6.push(next + 1);
        }
        Ok(())
    }
}

/// How a change treats the entries of the chunks it falls in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Way {
    /// The operator's edit (`OperatorListTables::edit`).
    Edit,
    /// Promotions and their decays, or the operator's dismissal of promoted
    /// entries (`OperatorListTables::promote`).
    Promote,
}

/// Who made a change, as the operator lists' object is told: whether IPv6 entries are taken, the
/// acting key's name (kept with the change), and who acted from where (its audit row).
pub(super) type Who<'a> = (Ipv6, Option<&'a str>, Option<&'a Stamp>);

/// A change's audit row, when the caller said who acted.
fn audit_row(
    kind: ListKind,
    action: Action,
    detail: String,
    stamp: Option<&Stamp>,
) -> Option<Record> {
    stamp.map(|by| Record {
        action,
        target: format!("{} list", kind.code()),
        detail,
        by: by.clone(),
    })
}

/// Applies a change of both families, numbered `id`, to the chunks it falls in:
/// what changed, and the list's chunks after it.
pub(super) fn change_chunks(
    tables: &OperatorListTables<&DurableSql>,
    kind: ListKind,
    chunks: &Chunks,
    (add, remove): (&EntrySet, &EntrySet),
    (way, id): (Way, u64),
) -> std::result::Result<(Changes, Chunks), SqlError> {
    let (mut changes, v4) = match way {
        Way::Edit => tables.edit(kind, &chunks.v4, (&add.v4, &remove.v4), id)?,
        Way::Promote => tables.promote(kind, &chunks.v4, (&add.v4, &remove.v4), id)?,
    };
    let v6 = if add.v6.is_empty() && remove.v6.is_empty() {
        chunks.v6.clone()
    } else {
        let (more, v6) = match way {
            Way::Edit => tables.edit(kind, &chunks.v6, (&add.v6, &remove.v6), id)?,
            Way::Promote => tables.promote(kind, &chunks.v6, (&add.v6, &remove.v6), id)?,
        };
        changes += more;
        v6
    };
    Ok((changes, Chunks { v4, v6 }))
}

impl OperatorLists {
    /// Within the transaction that wrote a change to the list's chunks: records it,
    /// keeps its audit row if it has one (sent to the directory once committed:
    /// `object/audit.rs`), and counts it saved. Answers the publication state to
    /// install once committed.
    pub(super) fn count_change(
        &self,
        kind: ListKind,
        (id, source, changes): (u64, Source, Changes),
        (by, audit): (Option<&str>, Option<&Record>),
        chunks: &Chunks,
    ) -> std::result::Result<PublicationState, SqlError> {
        let tables = self.tables();
        let mut stored = self.with_list(kind, |list| list.stored.clone());
        stored.publication.saved_one();
        let at = clock::now().0;
        tables.record_edit(id, kind, (at, by), (source, changes), chunks.entries())?;
        if let Some(record) = audit {
            tables.keep_audit(id, at, record)?;
        }
        tables.save_publication(kind, &stored)?;
        self.injected_fault()?;
        Ok(stored)
    }

    /// Installs a committed change: the list's chunks and publication state. Returns
    /// the change's number, once the alarm stands for its publication.
    pub(super) async fn install(
        &self,
        kind: ListKind,
        chunks: Chunks,
        stored: PublicationState,
    ) -> Answered<u64> {
        let change = stored.publication.saved;
        self.with_list_mut(kind, |list| {
            list.chunks = chunks;
            list.stored = stored;
        });
        // The change is committed: a fault here only delays the clean-up to the next change.
        if self.exports.get() == 0 {
            if let Err(error) = self.tables().forget_replaced_chunks() {
                console_error!("lists: replaced chunks kept for now: {error}");
            }
        }
        self.schedule().await.map_err(StoreError::from)?;
        Ok(change)
    }

    /// Validates every entry, then applies the edit to the chunks it falls in, or
    /// refuses it whole naming the first bad entry: the promoted entries it names
    /// taken off first, then the operator's removals and additions, all one change.
    /// Returns what changed and the change's number.
    pub(super) async fn edit(
        &self,
        kind: ListKind,
        edit: EditRequest,
        (ipv6, by, stamp): Who<'_>,
    ) -> Answered<(Edited, u64)> {
        let ParsedEdit {
            add,
            remove,
            remove_promoted,
        } = kind
            .parse_edit(edit, ipv6)
            .map_err(|why| Failure::Refused(OperatorListsRefusal::BadEdit(why)))?;
        let (chunks, saved) = self.with_list(kind, |list| {
            (list.chunks.clone(), list.stored.publication.saved)
        });
        // Promoted entries count too: the isolates hold them in the snapshot like any other.
        let (v4, v6) = chunks.sizes();
        let full = if v4 + add.v4.len() > MAX_LIST_ENTRIES {
            Some(format!("{MAX_LIST_ENTRIES} entries"))
        } else if v6 + add.v6.len() > MAX_IPV6_LIST_ENTRIES {
            Some(format!("{MAX_IPV6_LIST_ENTRIES} IPv6 entries"))
        } else {
            None
        };
        if let Some(most) = full {
            let why = format!("a list holds at most {most}; replace it whole with PUT");
            return Err(Failure::Refused(OperatorListsRefusal::BadEdit(why)));
        }
        let asked = remove_promoted.is_some();
        let dismiss = remove_promoted.unwrap_or_default();
        let id = self.next_edit();
        let tables = self.tables();
        let edited = self.sql.atomically(|| {
            let none = EntrySet::default();
            let (dismissed, chunks) = change_chunks(
                &tables,
                kind,
                &chunks,
                (&none, &dismiss),
                (Way::Promote, id),
            )?;
            let (changes, chunks) =
                change_chunks(&tables, kind, &chunks, (&add, &remove), (Way::Edit, id))?;
            let edited = Edited {
                added: changes.added,
                removed: changes.removed,
                promoted_removed: asked.then_some(dismissed.removed),
            };
            // The list's record counts the promoted entries that went among its removals.
            let total = Changes {
                added: changes.added,
                removed: changes.removed + dismissed.removed,
            };
            if total == Changes::default() {
                return Ok((edited, None));
            }
            let dismissed = match dismissed.removed {
                0 => String::new(),
                count => format!(", promoted entries removed {count}"),
            };
            let detail = format!(
                "added {}, removed {}{dismissed}",
                changes.added, changes.removed
            );
            let audit = audit_row(kind, Action::ListEdited, detail, stamp);
            let stored = self.count_change(
                kind,
                (id, Source::Edit, total),
                (by, audit.as_ref()),
                &chunks,
            )?;
            Ok((edited, Some((chunks, stored))))
        });
        match self.or_reload(edited)? {
            (edited, None) => Ok((edited, saved)),
            (edited, Some((chunks, stored))) => {
                Ok((edited, self.install(kind, chunks, stored).await?))
            }
        }
    }

    /// Reads the upload as it streams in, a sorted run of entries at a time kept
    /// in SQLite, merges the runs into chunks staged beside the list, and swaps
    /// them in at once; then publishes. Nothing here holds more than a run.
    pub(super) async fn replace(
        &self,
        kind: ListKind,
        body: Option<worker::web_sys::ReadableStream>,
        gzip: bool,
        (ipv6, by, stamp): Who<'_>,
    ) -> Answered<Replaced> {
        let import = self.next_edit();
        let staged = self.stage(kind, import, (body, gzip), ipv6).await;
        let tables = self.tables();
        let (count, changes) = match staged {
            Ok(staged) => staged,
            Err(failure) => {
                self.or_reload(tables.drop_import(import))?;
                return Err(failure);
            }
        };
        let detail = format!(
            "{count} entries, added {}, removed {}",
            changes.added, changes.removed
        );
        let audit = audit_row(kind, Action::ListReplaced, detail.clone(), stamp);
        let changed = changes != Changes::default();
        let change = if !changed {
            self.or_reload(tables.drop_import(import))?;
            self.with_list(kind, |list| list.stored.publication.saved)
        } else {
            // Numbered anew, so that a publication made while it was staged counts its chunks as changed.
            let rev = self.next_edit();
            let swapped = self.sql.atomically(|| {
                tables.swap_in(kind, import, rev)?;
                let chunks = Chunks::read(&tables, kind)?;
                let stored = self.count_change(
                    kind,
                    (import, Source::Import, changes),
                    (by, audit.as_ref()),
                    &chunks,
                )?;
                Ok((chunks, stored))
            });
            if swapped.is_err() {
                // Undone: what the import staged goes too, not at the next restart.
                self.or_reload(tables.drop_import(import))?;
            }
            let (chunks, stored) = self.or_reload(swapped)?;
            self.install(kind, chunks, stored).await?
        };
        let version = self.publish_including(kind, change).await?;
        // The row says the version too, once there is one: a change's row was kept
        // with it and only says more; an import that changed nothing has no
        // change to be kept with, and its row is written now.
        if let Some(mut record) = audit {
            let detail = format!("{detail}, version {version}");
            let kept = if changed {
                tables.tell_audit(import, &detail)
            } else {
                record.detail = detail;
                tables.keep_audit(import, clock::now().0, &record)
            };
            self.or_reload(kept)?;
        }
        Ok(Replaced {
            entries: count,
            changes,
            version,
        })
    }

    /// Reads the import into runs, then merges them into staged chunks: the
    /// number of entries, and what the import changes.
    pub(super) async fn stage(
        &self,
        kind: ListKind,
        import: u64,
        (body, gzip): (Option<worker::web_sys::ReadableStream>, bool),
        ipv6: Ipv6,
    ) -> Answered<(usize, Changes)> {
        let bad = |why: String| Failure::Refused(OperatorListsRefusal::BadImport(why));
        let broke_off = if gzip {
            "the body is not gzip, or broke off"
        } else {
            "the body broke off"
        };
        let tables = self.tables();
        let mut reading = Import::new(kind, ipv6);
        let mut runs = Runs::default();
        // The limit is on the text, however it was sent.
        let mut total = 0;
        let body = match body {
            Some(body) if gzip => Some(gunzip(body)?),
            body => body,
        };
        if let Some(body) = body {
            let chunks = BodyChunks::of(body);
            while let Some(chunk) = chunks.next().await.map_err(|_| bad(broke_off.to_owned()))? {
                total += chunk.length() as usize;
                if total > MAX_IMPORT_BYTES {
                    return Err(Failure::Refused(OperatorListsRefusal::ImportTooLarge(
                        MAX_IMPORT_BYTES,
                    )));
                }
                reading
                    .push(&chunk.to_vec())
                    .map_err(|e| bad(e.to_string()))?;
                if let Some(run) = reading.run() {
                    runs.stage(&tables, import, &run)?;
                }
            }
        }
        let last = reading.finish().map_err(|e| bad(e.to_string()))?;
        runs.stage(&tables, import, &last)?;
        // The list as it is now: the runs were read while edits went on.
        let chunks = self.with_list(kind, |list| list.chunks.clone());
        let (v4, mut changes) = tables.merge_runs(kind, import, &runs.v4, &chunks.v4)?;
        let (v6, more) = tables.merge_runs(kind, import, &runs.v6, &chunks.v6)?;
        changes += more;
        Ok((v4 + v6, changes))
    }
}
