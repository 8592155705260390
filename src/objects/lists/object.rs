//! The one writer of the operator's two lists: a singleton Durable Object. Every
//! edit, import and export goes through it, one at a time, so no edit is lost; it
//! keeps the lists in SQLite and publishes each change to KV as an immutable,
//! versioned snapshot that every isolate answers lookups from.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use std::net::IpAddr;

use futures_util::stream::{self, StreamExt};
use worker::{
    console_error, durable_object, Delay, DurableObject, Env, Request, Response, Result, State,
};

use super::protocol::{
    Covering, Edit, Export, ExportHead, ListStatus, ListsCall, ListsProtocol, ListsRefusal,
    ListsStatus, Lookup, Provenance, PublishedManifest, Replace, Replaced, SizeAt, Status,
};
use crate::domain::code::Coded;
use crate::domain::net::address::Ipv6;
use crate::domain::net::range::Ipv4Range;
use crate::domain::operator_lists::chunk::ChunkInfo;
use crate::domain::operator_lists::cut::{self, Published};
use crate::domain::operator_lists::delta::{self, Change, Piece};
use crate::domain::operator_lists::ip_list::{
    Changes, EditRequest, Import, ListEntries, ListEntry, ListKind, MAX_IMPORT_BYTES,
    MAX_IPV6_LIST_ENTRIES, MAX_LIST_ENTRIES,
};
use crate::domain::operator_lists::publication::{Attempt, Next};
use crate::domain::operator_lists::snapshot::{Ipv6Shards, Manifest};
use crate::domain::time::UnixTime;
use crate::objects::protocol::{receive, Ask, AskStream, Failure, Streamed};
use crate::platform::clock;
use crate::platform::meter::{self, Billable};
use crate::platform::stream::{gunzip, Chunks as BodyChunks};
use crate::store::operator_lists::chunks::Source;
use crate::store::operator_lists::snapshots::{binding, piece_key, MANIFEST_KEY};
use crate::store::operator_lists::tables::{ListTables, PieceKey, Stored};
use crate::store::sql::{DurableSql, SqlError, Transactional};
use crate::store::{for_each_key, StoreError};

/// Shards of a replaced version stay this long, for isolates that still read its
/// manifest from a cache (30 seconds at the edge, 30 in an isolate).
const RETIRED_SHARDS_KEPT_SECONDS: u64 = 120;
/// The changes of at least this long are published, whatever their number.
const DELTA_WINDOW_SECONDS: u64 = 24 * 60 * 60;

/// What a call comes to: its answer, or the refusal or fault that stops it.
type Answered<T> = std::result::Result<T, Failure<ListsRefusal>>;

/// One list as the object holds it: the index of its chunks, never its entries.
struct List {
    chunks: Chunks,
    stored: Stored,
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
        tables: &ListTables<&DurableSql>,
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
}

impl List {
    fn entries(&self) -> usize {
        self.chunks.entries()
    }
}

/// Changes whose list sizes a status shows: the operator page's chart of them.
const RECENT_SIZES: usize = 30;

/// Entries these chunks hold.
fn size<A>(chunks: &[ChunkInfo<A>]) -> usize {
    chunks.iter().map(|chunk| chunk.entries).sum()
}

#[durable_object]
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
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        clock::adopt(&req)?;
        let call = receive::<ListsProtocol>(&mut req).await?;
        self.load().await?;
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
            ListsCall::Status(Status) => Status::reply(self.status()),
            ListsCall::Edit(Edit {
                kind,
                edit,
                ipv6,
                by,
            }) => {
                let edited = self.edit(kind, edit, (ipv6, by.as_deref())).await;
                Edit::reply(match edited {
                    Ok((changes, change)) => self
                        .publish_including(kind, change)
                        .await
                        .map(|_| changes)
                        .map_err(Failure::from),
                    Err(failure) => Err(failure),
                })
            }
            ListsCall::Replace(Replace {
                kind,
                gzip,
                ipv6,
                by,
            }) => Replace::reply(
                self.replace(kind, req.inner().body(), gzip, (ipv6, by.as_deref()))
                    .await,
            ),
            ListsCall::Lookup(Lookup(ip)) => Lookup::reply(self.lookup(ip)),
            ListsCall::Export(Export { kind, known }) => {
                // What is exported is published, so its version is the one its ETag names.
                let saved = self.with_list(kind, |list| list.stored.publication.saved);
                self.publish_including(kind, saved).await?;
                Export::reply(Ok(self.export(kind, known)))
            }
            // For an isolate whose KV read of the manifest came before the first one was written.
            ListsCall::PublishedManifest(PublishedManifest(kind)) => PublishedManifest::reply(
                self.with_list(kind, |list| list.stored.manifest.clone())
                    .ok_or_else(|| {
                        StoreError::Corrupt(format!("the {} list is not published", kind.code()))
                            .into()
                    }),
            ),
            #[cfg(feature = "test-hooks")]
            ListsCall::RunAlarm(super::protocol::RunAlarm) => {
                let scheduled = self.state.storage().get_alarm().await?.is_some();
                DurableObject::alarm(self).await?;
                super::protocol::RunAlarm::reply(Ok(scheduled))
            }
            #[cfg(feature = "test-hooks")]
            ListsCall::FailNextSave(super::protocol::FailNextSave) => {
                self.fail_next_save.set(true);
                super::protocol::FailNextSave::reply(Ok(()))
            }
            #[cfg(feature = "test-hooks")]
            ListsCall::WriterMemory(super::protocol::WriterMemory) => {
                super::protocol::WriterMemory::reply(Ok(crate::platform::memory::wasm_bytes()))
            }
            #[cfg(feature = "test-hooks")]
            ListsCall::WriterMeter(super::protocol::WriterMeter) => {
                super::protocol::WriterMeter::reply(
                    crate::platform::meter::reading().map_err(Failure::from),
                )
            }
            #[cfg(feature = "test-hooks")]
            ListsCall::FailPublications(super::protocol::FailPublications) => {
                self.failing_publications.set(true);
                super::protocol::FailPublications::reply(Ok(()))
            }
        }
    }

    /// Publishes every saved change no publication includes yet: set whenever a
    /// change is saved, so none is left behind by a failure or a restart.
    async fn alarm(&self) -> Result<Response> {
        self.load().await?;
        for &kind in ListKind::ALL {
            let saved = self.with_list(kind, |list| list.stored.publication.saved);
            self.publish_including(kind, saved).await?;
        }
        Response::ok("published")
    }
}

impl OperatorLists {
    fn tables(&self) -> ListTables<&DurableSql> {
        ListTables::new(&self.sql)
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

    /// Reads both lists' indexes once per instance; a first start takes over the
    /// lists an earlier version of the service kept whole, in this object's rows or in KV.
    async fn load(&self) -> Result<()> {
        if self.lists.borrow().is_some() {
            return Ok(());
        }
        let tables = self.tables();
        tables.migrate().map_err(fault)?;
        let stored: HashMap<ListKind, Stored> =
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
        self.schedule().await
    }

    /// Sets the alarm for the earliest publication any list waits for.
    async fn schedule(&self) -> Result<()> {
        let now = clock::now().0;
        let due = ListKind::ALL
            .iter()
            .filter_map(|&kind| self.with_list(kind, |list| list.stored.publication.alarm_at(now)))
            .min();
        if let Some(due) = due {
            self.state
                .storage()
                .set_alarm(Duration::from_millis(due.saturating_sub(now)))
                .await?;
        }
        Ok(())
    }

    /// The number the next edit or import is given.
    fn next_edit(&self) -> u64 {
        self.last_edit.set(self.last_edit.get() + 1);
        self.last_edit.get()
    }

    /// The entries of both lists that cover `ip` (an IPv4-mapped IPv6 address is
    /// its IPv4 address), each with the change that added it.
    fn lookup(&self, ip: IpAddr) -> Answered<Provenance> {
        let tables = self.tables();
        let ip = ip.to_canonical();
        let mut provenance = Provenance::default();
        for kind in [ListKind::Global, ListKind::Allow] {
            let chunks = self.with_list(kind, |list| list.chunks.clone());
            let found: Vec<Covering> = match ip {
                IpAddr::V4(v4) => covering(tables.covering(kind, &chunks.v4, u32::from(v4))?),
                IpAddr::V6(v6) => covering(tables.covering(kind, &chunks.v6, u128::from(v6))?),
            };
            match kind {
                ListKind::Global => provenance.global = found,
                ListKind::Allow => provenance.allow = found,
            }
        }
        Ok(provenance)
    }

    /// Within the transaction that wrote a change to the list's chunks: records it
    /// and counts it saved. Answers the publication state to install once committed.
    fn count_change(
        &self,
        kind: ListKind,
        (id, source, changes): (u64, Source, Changes),
        by: Option<&str>,
        chunks: &Chunks,
    ) -> std::result::Result<Stored, SqlError> {
        let tables = self.tables();
        let mut stored = self.with_list(kind, |list| list.stored.clone());
        stored.publication.saved_one();
        tables.record_edit(
            id,
            kind,
            (clock::now().0, by),
            (source, changes),
            chunks.entries(),
        )?;
        tables.save_publication(kind, &stored)?;
        self.injected_fault()?;
        Ok(stored)
    }

    /// Installs a committed change: the list's chunks and publication state. Returns
    /// the change's number, once the alarm stands for its publication.
    async fn install(&self, kind: ListKind, chunks: Chunks, stored: Stored) -> Answered<u64> {
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
        let stored: HashMap<ListKind, Stored> = tables.publications()?.into_iter().collect();
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

    /// Validates every entry, then applies the edit to the chunks it falls in, or
    /// refuses it whole naming the first bad entry. Returns what changed and the
    /// change's number.
    async fn edit(
        &self,
        kind: ListKind,
        edit: EditRequest,
        (ipv6, by): (Ipv6, Option<&str>),
    ) -> Answered<(Changes, u64)> {
        let (add, remove) = kind
            .parse_edit(edit, ipv6)
            .map_err(|why| Failure::Refused(ListsRefusal::BadEdit(why)))?;
        let (chunks, saved) = self.with_list(kind, |list| {
            (list.chunks.clone(), list.stored.publication.saved)
        });
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
            return Err(Failure::Refused(ListsRefusal::BadEdit(why)));
        }
        let id = self.next_edit();
        let tables = self.tables();
        let edited = self.sql.atomically(|| {
            let (mut changes, v4) = tables.edit(kind, &chunks.v4, (&add.v4, &remove.v4), id)?;
            let v6 = if add.v6.is_empty() && remove.v6.is_empty() {
                chunks.v6.clone()
            } else {
                let (more, v6) = tables.edit(kind, &chunks.v6, (&add.v6, &remove.v6), id)?;
                changes += more;
                v6
            };
            let chunks = Chunks { v4, v6 };
            if changes == Changes::default() {
                return Ok((changes, None));
            }
            let stored = self.count_change(kind, (id, Source::Edit, changes), by, &chunks)?;
            Ok((changes, Some((chunks, stored))))
        });
        match self.or_reload(edited)? {
            (changes, None) => Ok((changes, saved)),
            (changes, Some((chunks, stored))) => {
                Ok((changes, self.install(kind, chunks, stored).await?))
            }
        }
    }

    /// Reads the upload as it streams in, a sorted run of entries at a time kept
    /// in SQLite, merges the runs into chunks staged beside the list, and swaps
    /// them in at once; then publishes. Nothing here holds more than a run.
    async fn replace(
        &self,
        kind: ListKind,
        body: Option<worker::web_sys::ReadableStream>,
        gzip: bool,
        (ipv6, by): (Ipv6, Option<&str>),
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
        let change = if changes == Changes::default() {
            self.or_reload(tables.drop_import(import))?;
            self.with_list(kind, |list| list.stored.publication.saved)
        } else {
            // Numbered anew, so that a publication made while it was staged counts its chunks as changed.
            let rev = self.next_edit();
            let swapped = self.sql.atomically(|| {
                tables.swap_in(kind, import, rev)?;
                let chunks = Chunks::read(&tables, kind)?;
                let stored =
                    self.count_change(kind, (import, Source::Import, changes), by, &chunks)?;
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
        Ok(Replaced {
            entries: count,
            changes,
            version,
        })
    }

    /// Reads the import into runs, then merges them into staged chunks: the
    /// number of entries, and what the import changes.
    async fn stage(
        &self,
        kind: ListKind,
        import: u64,
        (body, gzip): (Option<worker::web_sys::ReadableStream>, bool),
        ipv6: Ipv6,
    ) -> Answered<(usize, Changes)> {
        let bad = |why: String| Failure::Refused(ListsRefusal::BadImport(why));
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
                    return Err(Failure::Refused(ListsRefusal::ImportTooLarge(
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

    /// The list as published, a chunk a page, from the chunks of that moment:
    /// those an edit replaces meanwhile stay until no export reads them.
    fn export(&self, kind: ListKind, known: Option<u64>) -> Streamed<ExportHead, ListEntry> {
        let (chunks, entries, version) = self.with_list(kind, |list| {
            (
                list.chunks.clone(),
                list.entries(),
                list.stored.publication.version,
            )
        });
        if known == Some(version) {
            return Streamed {
                head: ExportHead::NotModified { version },
                pages: Box::pin(stream::empty()),
            };
        }
        let head = ExportHead::List { version, entries };
        let reading = Reading::new(self.exports.clone());
        let sql = self.sql.clone();
        let pages = stream::iter(Page::all(chunks)).map(move |page| {
            let _reading = &reading;
            let tables = ListTables::new(&sql);
            Ok(match page {
                Page::V4(info) => tables
                    .chunk(kind, &info)?
                    .into_iter()
                    .map(|kept| ListEntry::V4(kept.range))
                    .collect(),
                Page::V6(info) => tables
                    .chunk(kind, &info)?
                    .into_iter()
                    .map(|kept| ListEntry::V6(kept.range))
                    .collect(),
            })
        });
        Streamed {
            head,
            pages: Box::pin(pages),
        }
    }

    fn status(&self) -> Answered<ListsStatus> {
        let tables = self.tables();
        let summary = |kind| {
            self.with_list(kind, |list| {
                let manifest = list.stored.manifest.as_ref();
                Ok::<_, SqlError>(ListStatus {
                    entries: list.entries(),
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
        })
    }

    /// Returns, with the version, once a publication includes change number
    /// `change`: at once when the last one is a second old, else after it,
    /// together with every change that arrived meanwhile. Other requests run
    /// while one waits here; what to do is `Publication::next`'s to say.
    async fn publish_including(
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
    async fn publish(&self, kind: ListKind) -> std::result::Result<(), StoreError> {
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
                let change4 = tables.build_shards(kind, &list.chunks.v4, &v4, manifest)?;
                let change6 = tables.build_shards(kind, &list.chunks.v6, &v6, manifest)?;
                let piece = match (change4, change6) {
                    (Some(v4), Some(v6)) => Piece::of(Change { v4, v6 }),
                    _ => Piece::Reset,
                };
                let reset = piece == Piece::Reset;
                self.save_pieces(kind, piece, attempt)?;
                // Every live chunk was written by an edit numbered at most this one.
                let rev = self.last_edit.get();
                Ok((attempt, (v4, v6), list.entries(), reset, rev))
            })
        });
        let (attempt, (v4, v6), entries, reset, rev) = built?;
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
        let written: Vec<String> = (v4.writes.iter().map(|&index| v4.keys[index].clone()))
            .chain(v6.writes.iter().map(|&index| v6.keys[index].clone()))
            .collect();
        let gone: Vec<String> = v4.gone.into_iter().chain(v6.gone).collect();
        let manifest = Manifest {
            version: attempt.version,
            published_at: now,
            entries,
            shards: v4.starts,
            keys: v4.keys,
            deltas_from,
            ipv6: Ipv6Shards {
                starts: v6.starts,
                keys: v6.keys,
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
        for retired in tables.retired_before(now.saturating_sub(RETIRED_SHARDS_KEPT_SECONDS))? {
            meter::count(Billable::KvWrite);
            self.env
                .kv(binding(retired.kind))?
                .delete(&retired.key)
                .await?;
            tables.forget_shard(retired.kind, &retired.key)?;
            tables.forget_retired(&retired)?;
        }
        for key in tables.pieces_until(kind, deltas_from)? {
            meter::count(Billable::KvWrite);
            kv.delete(&piece_key(key.version, key.level)).await?;
            tables.forget_piece(kind, key)?;
        }
        Ok(())
    }

    /// Stores the pieces of changes the attempt's version publishes: level 0 is
    /// `first`, what changed since the version before; each level above joins two
    /// of the level below.
    fn save_pieces(
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
    async fn write(
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
        kv.put(MANIFEST_KEY, serde_json::to_string(manifest)?)?
            .execute()
            .await?;
        Ok(())
    }
}

fn fault(error: SqlError) -> worker::Error {
    worker::Error::RustError(format!("lists storage: {error}"))
}

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
        tables: &ListTables<&DurableSql>,
        import: u64,
        run: &crate::domain::operator_lists::ip_list::Entries,
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

/// A page of an export: one chunk of either family, the IPv4 ones first.
enum Page {
    V4(ChunkInfo<u32>),
    V6(ChunkInfo<u128>),
}

impl Page {
    fn all(chunks: Chunks) -> impl Iterator<Item = Page> {
        (chunks.v4.into_iter().map(Page::V4)).chain(chunks.v6.into_iter().map(Page::V6))
    }
}

/// The list as the service kept it in KV before this object: the allow list as one
/// text value, the global list as one key per address.
async fn legacy_entries(env: &Env, kind: ListKind) -> Result<ListEntries> {
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
    Ok(ListEntries::new(entries))
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

fn covering<A: crate::domain::net::family::Addr>(
    found: Vec<(
        crate::domain::net::range::Cidr<A>,
        crate::store::operator_lists::chunks::Provenance,
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
