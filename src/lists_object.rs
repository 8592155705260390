//! The one writer of the operator's two lists: a singleton Durable Object. Every
//! edit, import and export goes through it, one at a time, so no edit is lost; it
//! keeps the lists in SQLite and publishes each change to KV as an immutable,
//! versioned snapshot that every isolate answers lookups from.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;
use worker::{
    durable_object, Delay, DurableObject, Env, Request, Response, Result, SqlStorage,
    SqlStorageValue, State,
};

use crate::clock;
use crate::domain::form;
use crate::domain::ip_list::{
    Changes, EditRequest, Import, ListEntries, ListKind, MAX_LIST_ENTRIES,
};
use crate::domain::range::Ipv4Range;
use crate::domain::snapshot::{self, shard_key, Manifest, Shard};
use crate::domain::time::UnixTime;
use crate::store::{for_each_key, lists};
use crate::stream::Chunks;

/// The one instance's name.
pub const NAME: &str = "lists";
pub const BINDING: &str = "LISTS";
/// The most an import may be: the most entries a list holds, with room for comments.
pub const MAX_IMPORT_BYTES: usize = 128 * 1024 * 1024;
/// KV takes one write a second to a key; the manifest is written at most that often.
const PUBLISH_INTERVAL_MS: u64 = 1_000;
/// Shards of a replaced version stay this long, for isolates that still read its
/// manifest from a cache (30 seconds at the edge, 30 in an isolate).
const RETIRED_SHARDS_KEPT_SECONDS: u64 = 120;
/// Entries in one stored row: SQLite rows here hold at most 2 MB.
const ROW_ENTRIES: usize = 200_000;
/// Entries in one part of a streamed export.
const EXPORT_PART_ENTRIES: usize = 10_000;

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS lists (
        kind TEXT PRIMARY KEY, version INTEGER NOT NULL, published_at INTEGER NOT NULL,
        shards INTEGER NOT NULL, dirty INTEGER NOT NULL, reserved INTEGER NOT NULL, manifest TEXT
    );
    CREATE TABLE IF NOT EXISTS entries (kind TEXT NOT NULL, n INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (kind, n));
    CREATE TABLE IF NOT EXISTS retired (
        kind TEXT NOT NULL, version INTEGER NOT NULL, shards INTEGER NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (kind, version)
    );";

/// One list as the object holds it.
struct List {
    /// Shared with exports still streaming; an edit then works on its own copy.
    entries: Rc<ListEntries>,
    version: u64,
    /// Seconds since the epoch.
    published_at: u64,
    /// The current version's manifest, once there is one.
    manifest: Option<Manifest>,
    /// The highest version number ever handed to a publication, published or not:
    /// a publication that failed half way may have written shards under it.
    reserved: u64,
    shards: usize,
    /// Counts changes; `published` is the count the last publication included.
    changed: u64,
    published: u64,
    /// When the last publication started, in ms.
    published_ms: u64,
    publishing: bool,
}

impl List {
    fn stored(entries: ListEntries, row: &ListRow) -> Self {
        let manifest = row
            .manifest
            .as_deref()
            .and_then(|text| serde_json::from_str(text).ok());
        Self {
            entries: Rc::new(entries),
            version: row.version,
            published_at: row.published_at,
            manifest,
            reserved: row.reserved,
            shards: row.shards as usize,
            changed: u64::from(row.dirty != 0),
            published: 0,
            published_ms: 0,
            publishing: false,
        }
    }

    fn dirty(&self) -> bool {
        self.changed > self.published
    }
}

#[durable_object]
pub struct OperatorLists {
    state: State,
    env: Env,
    sql: SqlStorage,
    lists: RefCell<Option<HashMap<ListKind, List>>>,
}

impl DurableObject for OperatorLists {
    fn new(state: State, env: Env) -> Self {
        let sql = state.storage().sql();
        Self {
            state,
            env,
            sql,
            lists: RefCell::new(None),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        clock::adopt(&req)?;
        self.load().await?;
        // A list never published yet is published before anything is answered, so
        // that whoever woke this object finds a manifest from then on.
        for kind in ListKind::ALL {
            let (version, change) = self.with_list(kind, |list| (list.version, list.changed));
            if version == 0 {
                self.publish_including(kind, change).await?;
            }
        }
        let url = req.inner().url();
        let kind = form_urlencoded::parse(form::query_of(&url).as_bytes())
            .find(|(k, _)| k == "list")
            .and_then(|(_, v)| ListKind::from_name(&v));
        match (req.path().as_str(), kind) {
            ("/status", _) => self.status(),
            ("/edit", Some(kind)) => {
                let edit = serde_json::from_str::<EditRequest>(&req.text().await?)
                    .map_err(|e| format!("expected {{\"add\": [...], \"remove\": [...]}}: {e}"))
                    .and_then(|edit| self.edit(kind, edit));
                let (changes, change) = match edit {
                    Ok(edited) => edited,
                    Err(message) => return refuse(400, &message),
                };
                self.publish_including(kind, change).await?;
                Response::from_json(&json!({ "added": changes.added, "removed": changes.removed }))
            }
            ("/replace", Some(kind)) => {
                let imported = match read_import(kind, req.inner().body()).await {
                    Ok(entries) => entries,
                    Err(ImportError::TooLarge) => {
                        return refuse(
                            413,
                            &format!("an import may be at most {} MiB", MAX_IMPORT_BYTES >> 20),
                        )
                    }
                    Err(ImportError::Line(message)) => return refuse(400, &message),
                };
                let (entries, changes, change) = self.replace(kind, imported)?;
                let version = self.publish_including(kind, change).await?;
                Response::from_json(&json!({
                    "entries": entries, "added": changes.added, "removed": changes.removed, "version": version.to_string()
                }))
            }
            ("/export", Some(kind)) => {
                // What is exported is published, so its version is the one its ETag names.
                let change = self.with_list(kind, |list| list.changed);
                self.publish_including(kind, change).await?;
                self.export(
                    kind,
                    &req.headers().get("If-None-Match")?.unwrap_or_default(),
                )
            }
            // For an isolate whose KV read of the manifest came before the first one was written.
            ("/manifest", Some(kind)) => match self.with_list(kind, |list| list.manifest.clone()) {
                Some(manifest) => Response::from_json(&manifest),
                None => Response::error("not published", 404),
            },
            #[cfg(feature = "test-hooks")]
            ("/__test/alarm", _) => DurableObject::alarm(self).await,
            (path, _) => Response::error(format!("no such lists route: {path}"), 404),
        }
    }

    /// Publishes what an earlier publication could not (KV was unreachable).
    async fn alarm(&self) -> Result<Response> {
        self.load().await?;
        for kind in ListKind::ALL {
            let change = self.with_list(kind, |list| list.changed);
            self.publish_including(kind, change).await?;
        }
        Response::ok("published")
    }
}

fn refuse(status: u16, message: &str) -> Result<Response> {
    Ok(Response::from_json(&json!({ "message": message }))?.with_status(status))
}

enum ImportError {
    TooLarge,
    Line(String),
}

/// Parses an import as it streams in, so the text is never held whole.
async fn read_import(
    kind: ListKind,
    body: Option<worker::web_sys::ReadableStream>,
) -> Result<ListEntries, ImportError> {
    let mut import = Import::new(kind);
    let mut total = 0;
    if let Some(body) = body {
        let chunks = Chunks::of(body);
        while let Some(chunk) = chunks
            .next()
            .await
            .map_err(|_| ImportError::Line("the body broke off".to_owned()))?
        {
            total += chunk.length() as usize;
            if total > MAX_IMPORT_BYTES {
                return Err(ImportError::TooLarge);
            }
            import
                .push(&chunk.to_vec())
                .map_err(|e| ImportError::Line(e.to_string()))?;
        }
    }
    import
        .finish()
        .map_err(|e| ImportError::Line(e.to_string()))
}

#[derive(Deserialize)]
struct ListRow {
    kind: String,
    version: u64,
    published_at: u64,
    reserved: u64,
    shards: u64,
    dirty: u64,
    manifest: Option<String>,
}

impl ListRow {
    /// A list this object has never published: changed, so that it will be.
    fn unpublished(kind: ListKind) -> Self {
        Self {
            kind: kind.name().to_owned(),
            version: 0,
            published_at: 0,
            reserved: 0,
            shards: 0,
            dirty: 1,
            manifest: None,
        }
    }
}

#[derive(Deserialize)]
struct RetiredRow {
    kind: String,
    version: u64,
    shards: u64,
}

impl OperatorLists {
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
        self.sql.exec(SCHEMA, None)?;
        let rows: Vec<ListRow> = self
            .sql
            .exec(
                "SELECT kind, version, published_at, reserved, shards, dirty, manifest FROM lists",
                None,
            )?
            .to_array()?;
        let mut lists = HashMap::new();
        for row in rows {
            let Some(kind) = ListKind::from_name(&row.kind) else {
                continue;
            };
            let list = List::stored(self.stored_entries(kind)?, &row);
            lists.insert(kind, list);
        }
        let mut legacy = Vec::new();
        for kind in ListKind::ALL
            .into_iter()
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
            let list = List::stored(entries, &ListRow::unpublished(kind));
            self.save(kind, &list)?;
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

    fn stored_entries(&self, kind: ListKind) -> Result<ListEntries> {
        let mut bytes = Vec::new();
        for row in self
            .sql
            .exec(
                "SELECT data FROM entries WHERE kind = ?1 ORDER BY n",
                vec![kind.name().into()],
            )?
            .raw()
        {
            match row?.into_iter().next() {
                Some(SqlStorageValue::Blob(data)) => bytes.extend_from_slice(&data),
                other => {
                    return Err(
                        format!("stored entries of the {} list: {other:?}", kind.name()).into(),
                    )
                }
            }
        }
        ListEntries::decode(&bytes).ok_or_else(|| {
            format!("stored entries of the {} list do not decode", kind.name()).into()
        })
    }

    /// Writes a list whole. No `await` runs between its statements, so the
    /// runtime commits them together.
    fn save(&self, kind: ListKind, list: &List) -> Result<()> {
        self.sql.exec(
            "DELETE FROM entries WHERE kind = ?1",
            vec![kind.name().into()],
        )?;
        for (n, part) in list.entries.encode().chunks(ROW_ENTRIES * 5).enumerate() {
            self.sql.exec(
                "INSERT INTO entries (kind, n, data) VALUES (?1, ?2, ?3)",
                vec![
                    kind.name().into(),
                    SqlStorageValue::Integer(n as i64),
                    SqlStorageValue::Blob(part.to_vec()),
                ],
            )?;
        }
        self.save_state(kind, list)
    }

    fn save_state(&self, kind: ListKind, list: &List) -> Result<()> {
        self.sql.exec(
            "INSERT INTO lists (kind, version, published_at, shards, dirty, reserved, manifest) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (kind) DO UPDATE SET version = excluded.version, published_at = excluded.published_at,
                shards = excluded.shards, dirty = excluded.dirty, reserved = excluded.reserved, manifest = excluded.manifest",
            vec![
                kind.name().into(),
                SqlStorageValue::Integer(list.version as i64),
                SqlStorageValue::Integer(list.published_at as i64),
                SqlStorageValue::Integer(list.shards as i64),
                SqlStorageValue::Integer(i64::from(list.dirty())),
                SqlStorageValue::Integer(list.reserved as i64),
                list.manifest.as_ref().and_then(|m| serde_json::to_string(m).ok()).map_or(SqlStorageValue::Null, SqlStorageValue::String),
            ],
        )?;
        Ok(())
    }

    /// Validates every entry, then applies the edit, or refuses it whole naming the
    /// first bad entry. Returns what changed and the change's number.
    fn edit(
        &self,
        kind: ListKind,
        edit: EditRequest,
    ) -> std::result::Result<(Changes, u64), String> {
        let (add, remove) = kind.parse_edit(edit)?;
        self.with_list_mut(kind, |list| {
            if list.entries.len() + add.len() > MAX_LIST_ENTRIES {
                return Err(format!(
                    "a list holds at most {MAX_LIST_ENTRIES} entries; replace it whole with PUT"
                ));
            }
            let changes = Rc::make_mut(&mut list.entries).edit(add, remove);
            if changes != Changes::default() {
                list.changed += 1;
                self.save(kind, list).map_err(|e| e.to_string())?;
            }
            Ok((changes, list.changed))
        })
    }

    fn replace(&self, kind: ListKind, entries: ListEntries) -> Result<(usize, Changes, u64)> {
        self.with_list_mut(kind, |list| {
            let changes = Rc::make_mut(&mut list.entries).replace(entries);
            if changes != Changes::default() {
                list.changed += 1;
                self.save(kind, list)?;
            }
            Ok((list.entries.len(), changes, list.changed))
        })
    }

    /// The list in the import format with its version as `ETag`, or 304 when the
    /// caller has that version. Streamed a part at a time from a shared copy of
    /// the entries, so even ten million are never one string here.
    fn export(&self, kind: ListKind, if_none_match: &str) -> Result<Response> {
        let (entries, version) =
            self.with_list(kind, |list| (Rc::clone(&list.entries), list.version));
        let etag = format!("\"{version}\"");
        let response = if if_none_match.split(',').any(|tag| tag.trim() == etag) {
            Response::empty()?.with_status(304)
        } else {
            let header = entries.header(kind, version);
            let parts = (0..entries.len().div_ceil(EXPORT_PART_ENTRIES))
                .map(move |part| entries.lines(part * EXPORT_PART_ENTRIES, EXPORT_PART_ENTRIES));
            let text = std::iter::once(header)
                .chain(parts)
                .map(|text| Ok::<_, worker::Error>(text.into_bytes()));
            let response = Response::from_stream(futures_util::stream::iter(text))?;
            response
                .headers()
                .set("Content-Type", "text/plain; charset=utf-8")?;
            response
        };
        response.headers().set("ETag", &etag)?;
        Ok(response)
    }

    fn status(&self) -> Result<Response> {
        let summary = |kind| {
            self.with_list(kind, |list| {
                let published_at =
                    (list.version > 0).then(|| UnixTime(list.published_at).to_rfc3339());
                let snapshot_bytes: usize = snapshot::build(&list.entries)
                    .1
                    .iter()
                    .map(Shard::size)
                    .sum();
                json!({
                    "entries": list.entries.len(), "version": list.version.to_string(),
                    "publishedAt": published_at, "snapshotBytes": snapshot_bytes,
                })
            })
        };
        Response::from_json(
            &json!({ "globalList": summary(ListKind::Global), "allowList": summary(ListKind::Allow) }),
        )
    }

    /// Returns, with the version, once a publication includes change number
    /// `change`: at once when the last one is a second old, else after it,
    /// together with every change that arrived meanwhile. Other requests run
    /// while one waits here.
    async fn publish_including(&self, kind: ListKind, change: u64) -> Result<u64> {
        loop {
            let (published, publishing, last_ms) = self.with_list(kind, |list| {
                (list.published, list.publishing, list.published_ms)
            });
            if published >= change {
                return Ok(self.with_list(kind, |list| list.version));
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
    async fn publish(&self, kind: ListKind) -> Result<()> {
        let now_ms = clock::now().0;
        let (version, upto, starts, shards, entries) = self.with_list_mut(kind, |list| {
            // A number is never used twice, even when a publication fails after writing shards.
            list.reserved = list.reserved.max(list.version) + 1;
            self.save_state(kind, list)?;
            let (starts, shards) = snapshot::build(&list.entries);
            Ok::<_, worker::Error>((
                list.reserved,
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
        let kv = self.env.kv(lists::binding(kind))?;
        for (index, shard) in shards.iter().enumerate() {
            kv.put_bytes(&shard_key(version, index), &shard.encode())?
                .execute()
                .await?;
        }
        kv.put(Manifest::KEY, serde_json::to_string(&manifest)?)?
            .execute()
            .await?;
        let previous = self.with_list_mut(kind, |list| {
            // The next manifest write is a second after this one, not after this publication began.
            list.published_ms = clock::now().0;
            let previous = (list.version, list.shards);
            list.published = upto;
            list.version = version;
            list.manifest = Some(manifest.clone());
            list.published_at = manifest.published_at;
            list.shards = shards.len();
            self.save_state(kind, list).map(|_| previous)
        })?;
        let now = manifest.published_at;
        self.sql.exec(
            "INSERT OR IGNORE INTO retired (kind, version, shards, at) VALUES (?1, ?2, ?3, ?4)",
            vec![
                kind.name().into(),
                int(previous.0),
                int(previous.1 as u64),
                int(now),
            ],
        )?;
        let due: Vec<RetiredRow> = self
            .sql
            .exec(
                "SELECT kind, version, shards FROM retired WHERE at < ?1",
                vec![int(now.saturating_sub(RETIRED_SHARDS_KEPT_SECONDS))],
            )?
            .to_array()?;
        for row in due {
            let Some(retired_kind) = ListKind::from_name(&row.kind) else {
                continue;
            };
            let kv = self.env.kv(lists::binding(retired_kind))?;
            for index in 0..row.shards as usize {
                kv.delete(&shard_key(row.version, index)).await?;
            }
            self.sql.exec(
                "DELETE FROM retired WHERE kind = ?1 AND version = ?2",
                vec![row.kind.into(), int(row.version)],
            )?;
        }
        Ok(())
    }
}

fn int(value: u64) -> SqlStorageValue {
    SqlStorageValue::Integer(value as i64)
}

/// The list as the service kept it in KV before this object: the allow list as one
/// text value, the global list as one key per address.
async fn legacy_entries(env: &Env, kind: ListKind) -> Result<ListEntries> {
    let kv = env.kv(lists::binding(kind))?;
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
