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
use crate::domain::ip_list::{
    Changes, EditRequest, Import, ListEntries, ListKind, MAX_IMPORT_BYTES, MAX_LIST_ENTRIES,
};
use crate::domain::range::Ipv4Range;
use crate::domain::snapshot::{self, Manifest, Shard};
use crate::domain::time::UnixTime;
use crate::objects::protocol::{receive, Ask, AskStream, Failure, Streamed};
use crate::platform::clock;
use crate::platform::stream::Chunks;
use crate::store::list_tables::{ListTables, Publication, Retired};
use crate::store::snapshots::{binding, shard_key, MANIFEST_KEY};
use crate::store::sql::SqlError;
use crate::store::{for_each_key, StoreError};

/// KV takes one write a second to a key; the manifest is written at most that often.
const PUBLISH_INTERVAL_MS: u64 = 1_000;
/// Shards of a replaced version stay this long, for isolates that still read its
/// manifest from a cache (30 seconds at the edge, 30 in an isolate).
const RETIRED_SHARDS_KEPT_SECONDS: u64 = 120;
/// Entries in one page of a streamed export.
const EXPORT_PAGE_ENTRIES: usize = 10_000;

type Outcome<T> = std::result::Result<T, Failure<ListsRefusal>>;

/// One list as the object holds it.
struct List {
    /// Shared with exports still streaming; an edit then works on its own copy.
    entries: Rc<ListEntries>,
    publication: Publication,
    /// Counts changes; `published` is the count the last publication included.
    changed: u64,
    published: u64,
    /// When the last publication's manifest was written, in ms.
    published_ms: u64,
    publishing: bool,
}

impl List {
    fn stored(entries: ListEntries, publication: Publication) -> Self {
        let changed = u64::from(publication.dirty);
        Self {
            entries: Rc::new(entries),
            publication,
            changed,
            published: 0,
            published_ms: 0,
            publishing: false,
        }
    }

    fn dirty(&self) -> bool {
        self.changed > self.published
    }

    /// The publication as it is to be stored: dirty while a change waits.
    fn publication(&self) -> Publication {
        Publication {
            dirty: self.dirty(),
            ..self.publication.clone()
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
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        clock::adopt(&req)?;
        let call = receive::<ListsProtocol>(&mut req).await?;
        self.load().await?;
        // A list never published yet is published before anything is answered, so
        // that whoever woke this object finds a manifest from then on.
        for &kind in ListKind::ALL {
            let (version, change) =
                self.with_list(kind, |list| (list.publication.version, list.changed));
            if version == 0 {
                self.publish_including(kind, change).await?;
            }
        }
        match call {
            ListsCall::Status(Status) => Status::reply(Ok(self.status())),
            ListsCall::Edit(Edit { kind, edit }) => {
                let edited = self.edit(kind, edit);
                Edit::reply(match edited {
                    Ok((changes, change)) => self
                        .publish_including(kind, change)
                        .await
                        .map(|_| changes)
                        .map_err(Failure::from),
                    Err(failure) => Err(failure),
                })
            }
            ListsCall::Replace(Replace(kind)) => {
                Replace::reply(self.replace(kind, req.inner().body()).await)
            }
            ListsCall::Export(Export { kind, known }) => {
                // What is exported is published, so its version is the one its ETag names.
                let change = self.with_list(kind, |list| list.changed);
                self.publish_including(kind, change).await?;
                Export::reply(Ok(self.export(kind, known)))
            }
            // For an isolate whose KV read of the manifest came before the first one was written.
            ListsCall::PublishedManifest(PublishedManifest(kind)) => PublishedManifest::reply(
                self.with_list(kind, |list| list.publication.manifest.clone())
                    .ok_or_else(|| {
                        StoreError::Corrupt(format!("the {} list is not published", kind.code()))
                            .into()
                    }),
            ),
            #[cfg(feature = "test-hooks")]
            ListsCall::RunAlarm(super::protocol::RunAlarm) => {
                DurableObject::alarm(self).await?;
                super::protocol::RunAlarm::reply(Ok(()))
            }
            #[cfg(feature = "test-hooks")]
            ListsCall::FailNextSave(super::protocol::FailNextSave) => {
                self.fail_next_save.set(true);
                super::protocol::FailNextSave::reply(Ok(()))
            }
        }
    }

    /// Publishes what an earlier publication could not (KV was unreachable).
    async fn alarm(&self) -> Result<Response> {
        self.load().await?;
        for &kind in ListKind::ALL {
            let change = self.with_list(kind, |list| list.changed);
            self.publish_including(kind, change).await?;
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
        for (kind, publication) in tables.publications().map_err(fault)? {
            lists.insert(
                kind,
                List::stored(tables.entries(kind).map_err(fault)?, publication),
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
            let list = List::stored(entries, Publication::unpublished());
            tables
                .save(kind, &list.entries, &list.publication())
                .map_err(fault)?;
            lists.insert(kind, list);
        }
        let dirty = lists.values().any(List::dirty);
        *self.lists.borrow_mut() = Some(lists);
        if dirty {
            self.state
                .storage()
                .set_alarm(Duration::from_millis(PUBLISH_INTERVAL_MS))
                .await?;
        }
        Ok(())
    }

    /// Saves `entries` as the list's new content and only then installs them: a
    /// failed save leaves the list as it was. Returns the change's number.
    fn save_change(
        &self,
        kind: ListKind,
        entries: ListEntries,
    ) -> std::result::Result<u64, SqlError> {
        if self.fail_next_save.replace(false) {
            return Err(SqlError(
                "a storage fault, made by the test hook".to_owned(),
            ));
        }
        self.with_list_mut(kind, |list| {
            let publication = Publication {
                dirty: true,
                ..list.publication.clone()
            };
            self.tables().save(kind, &entries, &publication)?;
            list.entries = Rc::new(entries);
            list.changed += 1;
            Ok(list.changed)
        })
    }

    /// Validates every entry, then applies the edit, or refuses it whole naming the
    /// first bad entry. Returns what changed and the change's number.
    fn edit(&self, kind: ListKind, edit: EditRequest) -> Outcome<(Changes, u64)> {
        let (add, remove) = kind
            .parse_edit(edit)
            .map_err(|why| Failure::Refused(ListsRefusal::BadEdit(why)))?;
        let (mut entries, changed) = self.with_list(kind, |list| {
            (ListEntries::clone(&list.entries), list.changed)
        });
        if entries.len() + add.len() > MAX_LIST_ENTRIES {
            let why = format!(
                "a list holds at most {MAX_LIST_ENTRIES} entries; replace it whole with PUT"
            );
            return Err(Failure::Refused(ListsRefusal::BadEdit(why)));
        }
        let changes = entries.edit(add, remove);
        if changes == Changes::default() {
            return Ok((changes, changed));
        }
        Ok((changes, self.save_change(kind, entries)?))
    }

    /// Reads the upload as it streams in, so the text is never held whole, then
    /// replaces the list and publishes it.
    async fn replace(
        &self,
        kind: ListKind,
        body: Option<worker::web_sys::ReadableStream>,
    ) -> Outcome<Replaced> {
        let bad = |why: String| Failure::Refused(ListsRefusal::BadImport(why));
        let mut import = Import::new(kind);
        let mut total = 0;
        if let Some(body) = body {
            let chunks = Chunks::of(body);
            while let Some(chunk) = chunks
                .next()
                .await
                .map_err(|_| bad("the body broke off".to_owned()))?
            {
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
        let (mut entries, changed) = self.with_list(kind, |list| {
            (ListEntries::clone(&list.entries), list.changed)
        });
        let changes = entries.replace(imported);
        let count = entries.len();
        let change = if changes == Changes::default() {
            changed
        } else {
            self.save_change(kind, entries)?
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
            (Rc::clone(&list.entries), list.publication.version)
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
            self.with_list(kind, |list| ListStatus {
                entries: list.entries.len(),
                version: list.publication.version.to_string(),
                published_at: (list.publication.version > 0)
                    .then(|| UnixTime(list.publication.published_at).to_rfc3339()),
                snapshot_bytes: snapshot::build(&list.entries)
                    .1
                    .iter()
                    .map(Shard::size)
                    .sum(),
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
    /// while one waits here.
    async fn publish_including(
        &self,
        kind: ListKind,
        change: u64,
    ) -> std::result::Result<u64, StoreError> {
        loop {
            let (published, publishing, last_ms) = self.with_list(kind, |list| {
                (list.published, list.publishing, list.published_ms)
            });
            if published >= change {
                return Ok(self.with_list(kind, |list| list.publication.version));
            }
            let wait = (last_ms + PUBLISH_INTERVAL_MS).saturating_sub(clock::now().0);
            if publishing || wait > 0 {
                Delay::from(Duration::from_millis(wait.clamp(10, PUBLISH_INTERVAL_MS))).await;
                continue;
            }
            self.with_list_mut(kind, |list| list.publishing = true);
            let published = self.publish(kind).await;
            self.with_list_mut(kind, |list| list.publishing = false);
            if let Err(error) = published {
                // Nothing is lost: the list stays marked changed, and the alarm tries again.
                self.state
                    .storage()
                    .set_alarm(Duration::from_secs(5))
                    .await?;
                return Err(error);
            }
        }
    }

    /// Writes the new version's shards, then its manifest; only then is it the
    /// version isolates read. Old versions' shards go once no cache can still name them.
    async fn publish(&self, kind: ListKind) -> std::result::Result<(), StoreError> {
        let now_ms = clock::now().0;
        let tables = self.tables();
        let (version, upto, starts, shards, entries) = self.with_list_mut(kind, |list| {
            // A number is never used twice, even when a publication fails after writing shards.
            list.publication.reserved = list.publication.reserved.max(list.publication.version) + 1;
            tables.save_publication(kind, &list.publication())?;
            let (starts, shards) = snapshot::build(&list.entries);
            Ok::<_, SqlError>((
                list.publication.reserved,
                list.changed,
                starts,
                shards,
                list.entries.len(),
            ))
        })?;
        let manifest = Manifest {
            version,
            published_at: now_ms / 1000,
            entries,
            shards: starts,
        };
        let kv = self.env.kv(binding(kind))?;
        for (index, shard) in shards.iter().enumerate() {
            kv.put_bytes(&shard_key(version, index), &shard.encode())?
                .execute()
                .await?;
        }
        kv.put(MANIFEST_KEY, serde_json::to_string(&manifest)?)?
            .execute()
            .await?;
        let previous = self.with_list_mut(kind, |list| {
            // The next manifest write is a second after this one, not after this publication began.
            list.published_ms = clock::now().0;
            let previous = Retired {
                kind,
                version: list.publication.version,
                shards: list.publication.shards,
            };
            list.published = upto;
            list.publication.version = version;
            list.publication.published_at = manifest.published_at;
            list.publication.shards = shards.len();
            list.publication.manifest = Some(manifest.clone());
            tables
                .save_publication(kind, &list.publication())
                .map(|_| previous)
        })?;
        let now = manifest.published_at;
        tables.retire(previous, now)?;
        for retired in tables.retired_before(now.saturating_sub(RETIRED_SHARDS_KEPT_SECONDS))? {
            let kv = self.env.kv(binding(retired.kind))?;
            for index in 0..retired.shards {
                kv.delete(&shard_key(retired.version, index)).await?;
            }
            tables.forget_retired(retired)?;
        }
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
