//! The one writer of the operator's two lists: a singleton Durable Object. Every
//! edit, import and export goes through it, one at a time, so no edit is lost; it
//! keeps the lists in SQLite and publishes each change to KV as an immutable,
//! versioned snapshot that every isolate answers lookups from.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use futures_util::stream::{self, StreamExt};
use worker::{
    durable_object, Delay, DurableObject, Env, Request, Response, Result, SqlStorage, State,
};

use super::protocol::{
    Edit, Export, ExportHead, ListStatus, ListsCall, ListsProtocol, ListsRefusal, ListsStatus,
    PublishedManifest, Replace, Replaced, Status,
};
use crate::domain::code::Coded;
use crate::domain::cut::{self, Published};
use crate::domain::delta::{self, Piece};
use crate::domain::intervals::{combine_iter, Op};
use crate::domain::ip_list::{
    Changes, EditRequest, Import, ListEntries, ListKind, MAX_IMPORT_BYTES, MAX_LIST_ENTRIES,
};
use crate::domain::publication::{Attempt, Next};
use crate::domain::range::Ipv4Range;
use crate::domain::snapshot::{self, Manifest, Shard};
use crate::domain::time::UnixTime;
use crate::objects::protocol::{receive, Ask, AskStream, Failure, Streamed};
use crate::platform::clock;
use crate::platform::stream::{gunzip, Chunks};
use crate::store::list_tables::{ListTables, PieceKey, Stored};
use crate::store::snapshots::{binding, piece_key, MANIFEST_KEY};
use crate::store::sql::SqlError;
use crate::store::{for_each_key, StoreError};

/// Shards of a replaced version stay this long, for isolates that still read its
/// manifest from a cache (30 seconds at the edge, 30 in an isolate).
const RETIRED_SHARDS_KEPT_SECONDS: u64 = 120;
/// Entries in one page of a streamed export.
const EXPORT_PAGE_ENTRIES: usize = 10_000;
/// The changes of at least this long are published, whatever their number.
const DELTA_WINDOW_SECONDS: u64 = 24 * 60 * 60;

type Outcome<T> = std::result::Result<T, Failure<ListsRefusal>>;

/// One list as the object holds it.
struct List {
    /// Shared with exports still streaming; an edit then works on its own copy.
    entries: Rc<ListEntries>,
    /// What the last version number handed out holds, when this instance knows it
    /// (it does not after a restart with a change unpublished): the next piece of
    /// changes is counted from it.
    base: Option<Rc<ListEntries>>,
    /// What the published version holds, when this instance knows it: the next
    /// version is cut like it, and keeps the shards it shares with it.
    published: Option<Rc<ListEntries>>,
    stored: Stored,
    publishing: bool,
}

impl List {
    fn stored(entries: ListEntries, stored: Stored) -> Self {
        let entries = Rc::new(entries);
        let p = &stored.publication;
        let settled = p.version > 0 && p.reserved == p.version && p.includes(p.saved);
        Self {
            base: settled.then(|| entries.clone()),
            published: settled.then(|| entries.clone()),
            entries,
            stored,
            publishing: false,
        }
    }
}

#[durable_object]
pub struct OperatorLists {
    state: State,
    env: Env,
    sql: SqlStorage,
    lists: RefCell<Option<HashMap<ListKind, List>>>,
    /// The test build's way to make the next save fail, as a storage fault would.
    fail_next_save: Cell<bool>,
    /// The test build's way to make every publication of this instance fail after
    /// its shards, before its manifest, as KV failing half way would until a restart.
    failing_publications: Cell<bool>,
}

impl DurableObject for OperatorLists {
    fn new(state: State, env: Env) -> Self {
        let sql = state.storage().sql();
        Self {
            state,
            env,
            sql,
            lists: RefCell::new(None),
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
            ListsCall::Status(Status) => Status::reply(Ok(self.status())),
            ListsCall::Edit(Edit { kind, edit }) => {
                let edited = self.edit(kind, edit).await;
                Edit::reply(match edited {
                    Ok((changes, change)) => self
                        .publish_including(kind, change)
                        .await
                        .map(|_| changes)
                        .map_err(Failure::from),
                    Err(failure) => Err(failure),
                })
            }
            ListsCall::Replace(Replace { kind, gzip }) => {
                Replace::reply(self.replace(kind, req.inner().body(), gzip).await)
            }
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
    fn tables(&self) -> ListTables<&SqlStorage> {
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

    /// Reads both lists once per instance; a first start takes over the lists the
    /// service kept in KV before this object existed.
    async fn load(&self) -> Result<()> {
        if self.lists.borrow().is_some() {
            return Ok(());
        }
        let tables = self.tables();
        tables.migrate().map_err(fault)?;
        let mut lists = HashMap::new();
        for (kind, stored) in tables.publications().map_err(fault)? {
            lists.insert(
                kind,
                List::stored(tables.entries(kind).map_err(fault)?, stored),
            );
        }
        let mut legacy = Vec::new();
        for kind in ListKind::ALL
            .iter()
            .copied()
            .filter(|kind| !lists.contains_key(kind))
        {
            legacy.push((kind, legacy_entries(&self.env, kind).await?));
        }
        // Other requests ran while KV was read: the first to get here installs the lists,
        // and no await comes between this check and the install.
        if self.lists.borrow().is_some() {
            return Ok(());
        }
        for (kind, entries) in legacy {
            let list = List::stored(entries, Stored::default());
            tables
                .save(kind, &list.entries, &list.stored)
                .map_err(fault)?;
            lists.insert(kind, list);
        }
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

    /// Saves `entries` as the list's new content and only then installs them: a
    /// failed save leaves the list as it was. Returns the change's number, once the
    /// alarm stands for its publication.
    async fn save_change(&self, kind: ListKind, entries: ListEntries) -> Outcome<u64> {
        if self.fail_next_save.replace(false) {
            let fault = SqlError("a storage fault, made by the test hook".to_owned());
            return Err(StoreError::from(fault).into());
        }
        let change = self.with_list_mut(kind, |list| {
            let mut stored = list.stored.clone();
            let change = stored.publication.saved_one();
            self.tables().save(kind, &entries, &stored)?;
            list.entries = Rc::new(entries);
            list.stored = stored;
            Ok::<_, SqlError>(change)
        })?;
        self.schedule().await.map_err(StoreError::from)?;
        Ok(change)
    }

    /// Validates every entry, then applies the edit, or refuses it whole naming the
    /// first bad entry. Returns what changed and the change's number.
    async fn edit(&self, kind: ListKind, edit: EditRequest) -> Outcome<(Changes, u64)> {
        let (add, remove) = kind
            .parse_edit(edit)
            .map_err(|why| Failure::Refused(ListsRefusal::BadEdit(why)))?;
        let (mut entries, saved) = self.with_list(kind, |list| {
            (
                ListEntries::clone(&list.entries),
                list.stored.publication.saved,
            )
        });
        if entries.len() + add.len() > MAX_LIST_ENTRIES {
            let why = format!(
                "a list holds at most {MAX_LIST_ENTRIES} entries; replace it whole with PUT"
            );
            return Err(Failure::Refused(ListsRefusal::BadEdit(why)));
        }
        let changes = entries.edit(add, remove);
        if changes == Changes::default() {
            return Ok((changes, saved));
        }
        Ok((changes, self.save_change(kind, entries).await?))
    }

    /// Reads the upload as it streams in, so the text is never held whole, then
    /// replaces the list and publishes it.
    async fn replace(
        &self,
        kind: ListKind,
        body: Option<worker::web_sys::ReadableStream>,
        gzip: bool,
    ) -> Outcome<Replaced> {
        let bad = |why: String| Failure::Refused(ListsRefusal::BadImport(why));
        let broke_off = if gzip {
            "the body is not gzip, or broke off"
        } else {
            "the body broke off"
        };
        let mut import = Import::new(kind);
        // The limit is on the text, however it was sent.
        let mut total = 0;
        let body = match body {
            Some(body) if gzip => Some(gunzip(body)?),
            body => body,
        };
        if let Some(body) = body {
            let chunks = Chunks::of(body);
            while let Some(chunk) = chunks.next().await.map_err(|_| bad(broke_off.to_owned()))? {
                total += chunk.length() as usize;
                if total > MAX_IMPORT_BYTES {
                    return Err(Failure::Refused(ListsRefusal::ImportTooLarge(
                        MAX_IMPORT_BYTES,
                    )));
                }
                import
                    .push(&chunk.to_vec())
                    .map_err(|e| bad(e.to_string()))?;
            }
        }
        let imported = import.finish().map_err(|e| bad(e.to_string()))?;
        let (mut entries, saved) = self.with_list(kind, |list| {
            (
                ListEntries::clone(&list.entries),
                list.stored.publication.saved,
            )
        });
        let changes = entries.replace(imported);
        let count = entries.len();
        let change = if changes == Changes::default() {
            saved
        } else {
            self.save_change(kind, entries).await?
        };
        let version = self.publish_including(kind, change).await?;
        Ok(Replaced {
            entries: count,
            changes,
            version,
        })
    }

    /// The list as published, a page at a time from a shared copy of its entries,
    /// so even ten million are never one string here.
    fn export(&self, kind: ListKind, known: Option<u64>) -> Streamed<ExportHead, Ipv4Range> {
        let (entries, version) = self.with_list(kind, |list| {
            (Rc::clone(&list.entries), list.stored.publication.version)
        });
        if known == Some(version) {
            return Streamed {
                head: ExportHead::NotModified { version },
                pages: Box::pin(stream::empty()),
            };
        }
        let head = ExportHead::List {
            version,
            entries: entries.len(),
        };
        let pages = stream::iter(0..entries.len().div_ceil(EXPORT_PAGE_ENTRIES)).map(move |page| {
            Ok(entries
                .as_slice()
                .iter()
                .skip(page * EXPORT_PAGE_ENTRIES)
                .take(EXPORT_PAGE_ENTRIES)
                .copied()
                .collect())
        });
        Streamed {
            head,
            pages: Box::pin(pages),
        }
    }

    fn status(&self) -> ListsStatus {
        let summary = |kind| {
            self.with_list(kind, |list| {
                let manifest = list.stored.manifest.as_ref();
                let shards = manifest.map_or(1, |manifest| manifest.shards.len());
                ListStatus {
                    entries: list.entries.len(),
                    version: list.stored.publication.version.to_string(),
                    published_at: manifest
                        .map(|manifest| UnixTime(manifest.published_at).to_rfc3339()),
                    snapshot_bytes: snapshot::size(list.entries.intervals(), shards),
                    shards,
                    shards_written: manifest.map_or(0, Manifest::written),
                }
            })
        };
        ListsStatus {
            global_list: summary(ListKind::Global),
            allow_list: summary(ListKind::Allow),
        }
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

    /// Writes the new version's pieces of changes and the shards it does not share
    /// with the version before, then its manifest; only then is it the version
    /// isolates read. Shards no manifest names any more, a failed publication's
    /// included, go once no cache can still name them.
    async fn publish(&self, kind: ListKind) -> std::result::Result<(), StoreError> {
        let now_ms = clock::now().0;
        let now = now_ms / 1000;
        let tables = self.tables();
        let (attempt, entries, reset) = self.with_list_mut(kind, |list| {
            // The number is stored before anything is written under it, so it is never used twice.
            let attempt = list.stored.publication.begin();
            tables.save_publication(kind, &list.stored)?;
            let reset = self.save_pieces(kind, list, attempt)?;
            list.base = Some(list.entries.clone());
            Ok::<_, SqlError>((attempt, list.entries.clone(), reset))
        })?;
        let plan = self.with_list(kind, |list| {
            let before = list.stored.manifest.as_ref().map(|manifest| Published {
                manifest,
                entries: list.published.as_deref(),
            });
            cut::plan(attempt.version, &entries, before)
        });
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
        let manifest = Manifest {
            version: attempt.version,
            published_at: now,
            entries: entries.len(),
            shards: plan.starts,
            keys: plan.keys,
            deltas_from,
        };
        let kv = self.env.kv(binding(kind))?;
        let written = self.write(kind, &kv, &plan.writes, &manifest).await;
        if let Err(error) = written {
            // What was written under the number is never named by a manifest this
            // writer knows of: it goes like a replaced version's shards.
            let orphans: Vec<String> = plan
                .writes
                .iter()
                .map(|(index, _)| manifest.keys[*index].clone())
                .collect();
            tables.retire(kind, &orphans, now)?;
            return Err(error);
        }
        self.with_list_mut(kind, |list| {
            // The next manifest write is a second after this one, not after this publication began.
            list.stored.publication.succeeded(attempt, clock::now().0);
            list.stored.manifest = Some(manifest.clone());
            list.published = Some(entries);
            tables.save_publication(kind, &list.stored)
        })?;
        tables.retire(kind, &plan.gone, now)?;
        for retired in tables.retired_before(now.saturating_sub(RETIRED_SHARDS_KEPT_SECONDS))? {
            self.env
                .kv(binding(retired.kind))?
                .delete(&retired.key)
                .await?;
            tables.forget_retired(&retired)?;
        }
        for key in tables.pieces_until(kind, deltas_from)? {
            kv.delete(&piece_key(key.version, key.level)).await?;
            tables.forget_piece(kind, key)?;
        }
        Ok(())
    }

    /// Stores the pieces of changes the attempt's version publishes: level 0 from
    /// what the last number held, each level above from two of the level below.
    /// Answers whether a cursor cannot cross this version (its change is unknown).
    fn save_pieces(
        &self,
        kind: ListKind,
        list: &List,
        attempt: Attempt,
    ) -> std::result::Result<bool, SqlError> {
        let tables = self.tables();
        let first = match &list.base {
            Some(base) => Piece::of(combine_iter(
                base.intervals(),
                list.entries.intervals(),
                Op::Xor,
            )),
            None => Piece::Reset,
        };
        let reset = first == Piece::Reset;
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
        Ok(reset)
    }

    /// Writes to KV what a publication needs before its manifest: every piece not
    /// there yet (a failed publication's included), the shards, then the manifest.
    async fn write(
        &self,
        kind: ListKind,
        kv: &worker::kv::KvStore,
        shards: &[(usize, Shard)],
        manifest: &Manifest,
    ) -> std::result::Result<(), StoreError> {
        let tables = self.tables();
        for key in tables.pieces_not_in_kv(kind)? {
            if let Some(piece) = tables.piece(kind, key)? {
                kv.put_bytes(&piece_key(key.version, key.level), &piece.encode())?
                    .execute()
                    .await?;
            }
            tables.piece_in_kv(kind, key)?;
        }
        for (index, shard) in shards {
            kv.put_bytes(&manifest.keys[*index], &shard.encode())?
                .execute()
                .await?;
        }
        if self.failing_publications.get() {
            return Err(StoreError::Corrupt(
                "KV failed before the manifest, made by the test hook".to_owned(),
            ));
        }
        kv.put(MANIFEST_KEY, serde_json::to_string(manifest)?)?
            .execute()
            .await?;
        Ok(())
    }
}

fn fault(error: SqlError) -> worker::Error {
    worker::Error::RustError(format!("lists storage: {error}"))
}

/// The list as the service kept it in KV before this object: the allow list as one
/// text value, the global list as one key per address.
async fn legacy_entries(env: &Env, kind: ListKind) -> Result<ListEntries> {
    let kv = env.kv(binding(kind))?;
    let mut entries = Vec::new();
    match kind {
        ListKind::Allow => {
            let text = kv.get("ranges").text().await?.unwrap_or_default();
            entries.extend(
                text.lines()
                    .filter_map(|line| Ipv4Range::parse(line.trim())),
            );
        }
        ListKind::Global => {
            for_each_key(&kv, None, |keys| {
                entries.extend(
                    keys.iter()
                        .filter_map(|key| kind.parse_entry(&key.name).ok()),
                )
            })
            .await?;
        }
    }
    Ok(ListEntries::new(entries))
}
