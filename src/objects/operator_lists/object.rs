//! The one writer of the operator's two lists: a singleton Durable Object. Every
//! edit, import and export goes through it, one at a time, so no edit is lost; it
//! keeps the lists in SQLite and publishes each change to KV as an immutable,
//! versioned snapshot that every isolate answers lookups from.
//!
//! Here: the object, its start (loading both lists' indexes once per instance),
//! and the dispatch of each call. How the lists change is in `object/import.rs`
//! (the operator's edits and imports) and `object/promotion.rs` (the entries the
//! holders' reports promote to the global list), how they are published in
//! `object/publishing.rs`, and how they are read (the export, the status, the
//! lookup) in `object/export.rs`.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use worker::{console_error, durable_object, DurableObject, Env, Request, Response, Result, State};

use super::protocol::{
    Edit, Export, OperatorListsCall, OperatorListsProtocol, OperatorListsRefusal,
    PendingPromotions, Promote, PublishedManifest, Replace, Review, Status, WhyListed,
};
use crate::domain::code::Coded;
use crate::domain::net::address::Ipv6;
use crate::domain::net::range::Ipv4Range;
use crate::domain::network::consensus::Review as ReviewSetting;
use crate::domain::operator_lists::chunk::{ChunkInfo, PROMOTED};
use crate::domain::operator_lists::list::{Changes, FamilyEntries, ListEntry, ListKind};
use crate::objects::protocol::{receive, Ask, AskStream, Failure, Json, Received};
use crate::platform::meter::{self, Billable};
use crate::platform::{clock, config};
use crate::store::operator_lists::edits::Source;
use crate::store::operator_lists::snapshots::binding;
use crate::store::operator_lists::tables::{OperatorListTables, PublicationState};
use crate::store::sql::{DurableSql, SqlError, Transactional};
use crate::store::{for_each_key, StoreError};

mod audit;
mod export;
mod import;
mod promotion;
mod publishing;
mod review;

/// What a call comes to: its answer, or the refusal or fault that stops it.
type Answered<T> = std::result::Result<T, Failure<OperatorListsRefusal>>;

/// One list as the object holds it: the index of its chunks, never its entries.
struct List {
    chunks: Chunks,
    stored: PublicationState,
    publishing: bool,
}

/// A list's live chunks, each family's in address order.
#[derive(Debug, Clone, Default)]
struct Chunks {
    v4: Vec<ChunkInfo<u32>>,
    v6: Vec<ChunkInfo<u128>>,
}

impl Chunks {
    fn read(
        tables: &OperatorListTables<&DurableSql>,
        kind: ListKind,
    ) -> std::result::Result<Self, SqlError> {
        Ok(Self {
            v4: tables.chunk_index(kind)?,
            v6: tables.chunk_index(kind)?,
        })
    }

    /// Entries of each family: IPv4, IPv6.
    fn sizes(&self) -> (usize, usize) {
        (size(&self.v4), size(&self.v6))
    }

    fn entries(&self) -> usize {
        let (v4, v6) = self.sizes();
        v4 + v6
    }

    /// Entries the holders' reports promoted, of both families.
    fn promoted(&self) -> usize {
        let v4: usize = self.v4.iter().map(|chunk| chunk.promoted).sum();
        v4 + self.v6.iter().map(|chunk| chunk.promoted).sum::<usize>()
    }
}

impl List {
    fn entries(&self) -> usize {
        self.chunks.entries()
    }
}

/// Entries these chunks hold.
fn size<A>(chunks: &[ChunkInfo<A>]) -> usize {
    chunks.iter().map(|chunk| chunk.entries).sum()
}

#[durable_object(alarm)]
pub struct OperatorLists {
    state: State,
    env: Env,
    sql: DurableSql,
    lists: RefCell<Option<HashMap<ListKind, List>>>,
    /// The last number an edit or import was given (the `edits` table).
    last_edit: Cell<u64>,
    /// Exports streaming now: the chunks an edit replaces stay until none is.
    exports: Rc<Cell<usize>>,
    /// The test build's way to make the next save fail, as a storage fault would.
    fail_next_save: Cell<bool>,
    /// The test build's way to make every publication of this instance fail after
    /// its shards, before its manifest, as KV failing half way would until a restart.
    failing_publications: Cell<bool>,
    /// Whether a call is sending the audit rows kept to the directory: one at a
    /// time, so that the directory meets them in order (`object/audit.rs`).
    forwarding: Cell<bool>,
    /// When to send the audit rows kept again, after the directory failed to take them.
    audit_retry_at: Cell<Option<u64>>,
    /// The test build's way to make sending them fail, as an unreachable directory would.
    failing_forwards: Cell<bool>,
    /// Whether the network's promotions wait for the operator (`PROMOTION_REVIEW`).
    review: Cell<ReviewSetting>,
    /// Whether promotions queued under review wait to join the list, review being off.
    draining: Cell<bool>,
}

impl DurableObject for OperatorLists {
    fn new(state: State, env: Env) -> Self {
        let (state, sql) = DurableSql::of(state).expect("a Durable Object has its storage");
        Self {
            state,
            env,
            sql,
            lists: RefCell::new(None),
            last_edit: Cell::new(0),
            exports: Rc::new(Cell::new(0)),
            fail_next_save: Cell::new(false),
            failing_publications: Cell::new(false),
            forwarding: Cell::new(false),
            audit_retry_at: Cell::new(None),
            failing_forwards: Cell::new(false),
            review: Cell::new(ReviewSetting::Off),
            draining: Cell::new(false),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        clock::adopt(&req)?;
        let call = match receive::<OperatorListsProtocol>(&mut req).await? {
            Received::Call(call) => call,
            Received::OtherShape(answer) => return Ok(answer),
        };
        self.start().await?;
        // A list never published yet is published before anything is answered, so
        // that whoever woke this object finds a manifest from then on.
        for &kind in ListKind::ALL {
            let (version, saved) = self.with_list(kind, |list| {
                (
                    list.stored.publication.version,
                    list.stored.publication.saved,
                )
            });
            if version == 0 {
                self.publish_including(kind, saved).await?;
            }
        }
        match call {
            OperatorListsCall::Status(Status) => Status::reply(self.status()),
            OperatorListsCall::Edit(Edit {
                kind,
                edit,
                ipv6,
                by,
                stamp,
            }) => {
                let edited = self
                    .edit(kind, edit.0, (ipv6, by.as_deref(), stamp.as_ref()))
                    .await;
                let answer = match edited {
                    Ok((edited, change)) => self
                        .publish_including(kind, change)
                        .await
                        .map(|_| Json(edited))
                        .map_err(Failure::from),
                    Err(failure) => Err(failure),
                };
                self.forward_audit_now().await;
                Edit::reply(answer)
            }
            // Answered once saved: the alarm publishes it, as the operator lists' object's spacing allows.
            OperatorListsCall::Promote(promote) => Promote::reply(self.promote(promote).await),
            OperatorListsCall::PendingPromotions(page) => {
                PendingPromotions::reply(self.pending_promotions(page))
            }
            OperatorListsCall::Review(review) => Review::reply(self.review(review).await),
            OperatorListsCall::Replace(Replace {
                kind,
                gzip,
                ipv6,
                by,
                stamp,
            }) => {
                let who = (ipv6, by.as_deref(), stamp.as_ref());
                let replaced = self.replace(kind, req.inner().body(), gzip, who).await;
                self.forward_audit_now().await;
                Replace::reply(replaced)
            }
            OperatorListsCall::WhyListed(WhyListed(ip)) => WhyListed::reply(self.why_listed(ip)),
            OperatorListsCall::Export(Export {
                kind,
                known,
                source,
            }) => {
                // What is exported is published, so its version is the one its ETag names.
                let saved = self.with_list(kind, |list| list.stored.publication.saved);
                self.publish_including(kind, saved).await?;
                Export::reply(Ok(self.export(kind, known, source)))
            }
            // For an isolate whose KV read of the manifest came before the first one was written.
            OperatorListsCall::PublishedManifest(PublishedManifest(kind)) => {
                PublishedManifest::reply(
                    self.with_list(kind, |list| list.stored.manifest.clone().map(Json))
                        .ok_or_else(|| {
                            StoreError::Corrupt(format!(
                                "the {} list is not published",
                                kind.code()
                            ))
                            .into()
                        }),
                )
            }
            #[cfg(feature = "test-hooks")]
            OperatorListsCall::RunAlarm(super::protocol::RunAlarm) => {
                let scheduled = self.state.storage().get_alarm().await?.is_some();
                DurableObject::alarm(self).await?;
                super::protocol::RunAlarm::reply(Ok(scheduled))
            }
            #[cfg(feature = "test-hooks")]
            OperatorListsCall::FailNextSave(super::protocol::FailNextSave) => {
                self.fail_next_save.set(true);
                super::protocol::FailNextSave::reply(Ok(()))
            }
            #[cfg(feature = "test-hooks")]
            OperatorListsCall::WriterMemory(super::protocol::WriterMemory) => {
                super::protocol::WriterMemory::reply(Ok(crate::platform::memory::wasm_bytes()))
            }
            #[cfg(feature = "test-hooks")]
            OperatorListsCall::WriterMeter(super::protocol::WriterMeter) => {
                super::protocol::WriterMeter::reply(
                    crate::platform::meter::reading().map_err(Failure::from),
                )
            }
            #[cfg(feature = "test-hooks")]
            OperatorListsCall::FailPublications(super::protocol::FailPublications) => {
                self.failing_publications.set(true);
                super::protocol::FailPublications::reply(Ok(()))
            }
            #[cfg(feature = "test-hooks")]
            OperatorListsCall::FailForwards(super::protocol::FailForwards(failing)) => {
                self.failing_forwards.set(failing);
                super::protocol::FailForwards::reply(Ok(()))
            }
        }
    }

    /// Publishes every saved change no publication includes yet: set whenever a
    /// change is saved, so none is left behind by a failure or a restart. Sends
    /// the audit rows the directory does not have yet, first: they wait on no
    /// publication.
    async fn alarm(&self) -> Result<Response> {
        self.start().await?;
        self.forward_audit().await?;
        let more = self.drain_review().await.map_err(|failure| match failure {
            Failure::Fault(fault) => worker::Error::RustError(fault.to_string()),
            Failure::Refused(refusal) => worker::Error::RustError(format!("{refusal:?}")),
        })?;
        self.draining.set(more);
        for &kind in ListKind::ALL {
            let saved = self.with_list(kind, |list| list.stored.publication.saved);
            self.publish_including(kind, saved).await?;
        }
        Response::ok("published")
    }
}

impl OperatorLists {
    fn tables(&self) -> OperatorListTables<&DurableSql> {
        OperatorListTables::new(&self.sql)
    }

    fn with_list<T>(&self, kind: ListKind, f: impl FnOnce(&List) -> T) -> T {
        f(&self.lists.borrow().as_ref().expect("loaded")[&kind])
    }

    fn with_list_mut<T>(&self, kind: ListKind, f: impl FnOnce(&mut List) -> T) -> T {
        f(self
            .lists
            .borrow_mut()
            .as_mut()
            .expect("loaded")
            .get_mut(&kind)
            .expect("both lists"))
    }

    /// The schema brought up to date and both lists' indexes read, once per instance
    /// (the lists held, which every change updates, say it has run: see
    /// `objects::startup`); a first start takes over the lists an earlier version of
    /// the service kept whole, in this object's rows or in KV.
    async fn start(&self) -> Result<()> {
        if self.lists.borrow().is_some() {
            return Ok(());
        }
        let tables = self.tables();
        tables.migrate().map_err(fault)?;
        let stored: HashMap<ListKind, PublicationState> =
            tables.publications().map_err(fault)?.into_iter().collect();
        let mut legacy = Vec::new();
        for kind in ListKind::ALL
            .iter()
            .copied()
            .filter(|kind| !stored.contains_key(kind))
        {
            legacy.push((kind, legacy_entries(&self.env, kind).await?));
        }
        // Other requests ran while KV was read: the first to get here installs the lists,
        // and no await comes between this check and the install.
        if self.lists.borrow().is_some() {
            return Ok(());
        }
        tables.drop_imports().map_err(fault)?;
        let mut last_edit = tables.last_edit().map_err(fault)?;
        let mut lists = HashMap::new();
        for &kind in ListKind::ALL {
            let mut chunks = Chunks::read(&tables, kind).map_err(fault)?;
            let stored = stored.get(&kind).cloned();
            if chunks.v4.is_empty() {
                let entries = match (&stored, legacy.iter().find(|(k, _)| *k == kind)) {
                    (_, Some((_, entries))) => entries.clone(),
                    _ => tables.entries(kind).map_err(fault)?,
                };
                last_edit += 1;
                let changes = Changes {
                    added: entries.len(),
                    removed: 0,
                };
                let at = clock::now().0;
                chunks.v4 = self
                    .sql
                    .atomically(|| {
                        let chunks = tables.install(kind, &entries, last_edit)?;
                        let entries = size(&chunks);
                        tables.record_edit(
                            last_edit,
                            kind,
                            (at, None),
                            (Source::TakenOver, changes),
                            entries,
                        )?;
                        tables.forget_entries(kind)?;
                        Ok(chunks)
                    })
                    .map_err(fault)?;
            }
            let stored = stored.unwrap_or_default();
            tables.save_publication(kind, &stored).map_err(fault)?;
            lists.insert(
                kind,
                List {
                    chunks,
                    stored,
                    publishing: false,
                },
            );
        }
        self.last_edit.set(last_edit);
        *self.lists.borrow_mut() = Some(lists);
        let review = config::object_settings(&self.env)
            .map_err(|e| e.0)?
            .consensus
            .review;
        self.review.set(review);
        // Review turned off with promotions still queued: the alarm lets them in.
        self.draining
            .set(review == ReviewSetting::Off && tables.queue_length().map_err(fault)? > 0);
        // Audit rows an instance before this one kept and did not get to send.
        if !tables.audit_kept(1).map_err(fault)?.is_empty() {
            self.audit_retry_at.set(Some(clock::now().0));
        }
        self.schedule().await
    }

    /// Sets the alarm for the earliest publication any list waits for, or the
    /// next try at sending the audit rows kept, whichever comes first.
    async fn schedule(&self) -> Result<()> {
        let now = clock::now().0;
        let due = ListKind::ALL
            .iter()
            .filter_map(|&kind| self.with_list(kind, |list| list.stored.publication.alarm_at(now)))
            .chain(self.audit_retry_at.get())
            .chain(self.draining.get().then_some(now))
            .min();
        if let Some(due) = due {
            self.state
                .storage()
                .set_alarm(Duration::from_millis(due.saturating_sub(now)))
                .await?;
        }
        Ok(())
    }

    /// The number the next edit or import is given: one a change, never near
    /// `PROMOTED`, the provenance a chunk keeps for a promoted entry.
    fn next_edit(&self) -> u64 {
        self.last_edit.set(self.last_edit.get() + 1);
        debug_assert!(self.last_edit.get() < PROMOTED, "edit numbers ran out");
        self.last_edit.get()
    }

    /// A fault of the storage, after which the lists' indexes and publications are
    /// read again from it, in place (other requests hold on to the lists): what was
    /// written before the fault stays, and memory never says otherwise.
    fn or_reload<T>(&self, result: std::result::Result<T, SqlError>) -> Answered<T> {
        result.map_err(|error| {
            if let Err(again) = self.reindex() {
                console_error!("lists: read again after a fault, and failed: {again}");
            }
            Failure::from(StoreError::from(error))
        })
    }

    /// Reads both lists' chunk indexes and publications again into the lists held.
    fn reindex(&self) -> std::result::Result<(), SqlError> {
        let tables = self.tables();
        let stored: HashMap<ListKind, PublicationState> =
            tables.publications()?.into_iter().collect();
        for &kind in ListKind::ALL {
            let chunks = Chunks::read(&tables, kind)?;
            let stored = stored.get(&kind).cloned().unwrap_or_default();
            self.with_list_mut(kind, |list| {
                list.chunks = chunks;
                list.stored = stored;
            });
        }
        self.last_edit
            .set(self.last_edit.get().max(tables.last_edit()?));
        Ok(())
    }

    /// The test build's storage fault, made by `FailNextSave`: raised after a
    /// change's writes, inside their transaction, so that it must undo them all.
    fn injected_fault(&self) -> std::result::Result<(), SqlError> {
        match self.fail_next_save.replace(false) {
            true => Err(SqlError(
                "a storage fault, made by the test hook".to_owned(),
            )),
            false => Ok(()),
        }
    }
}

fn fault(error: SqlError) -> worker::Error {
    worker::Error::RustError(format!("lists storage: {error}"))
}

/// The list as the service kept it in KV before this object: the allow list as one
/// text value, the global list as one key per address.
async fn legacy_entries(env: &Env, kind: ListKind) -> Result<FamilyEntries> {
    let kv = env.kv(binding(kind))?;
    let mut entries = Vec::new();
    match kind {
        ListKind::Allow => {
            meter::count(Billable::KvRead);
            let text = kv.get("ranges").text().await?.unwrap_or_default();
            entries.extend(
                text.lines()
                    .filter_map(|line| Ipv4Range::parse(line.trim())),
            );
        }
        ListKind::Global => {
            for_each_key(&kv, None, |keys| {
                entries.extend(keys.iter().filter_map(|key| {
                    match kind.parse_entry(&key.name, Ipv6::Off) {
                        Ok(ListEntry::V4(range)) => Some(range),
                        _ => None,
                    }
                }))
            })
            .await?;
        }
    }
    Ok(FamilyEntries::new(entries))
}
