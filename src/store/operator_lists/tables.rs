//! The operator lists' object's SQLite database: each list's entries (compact rows of five
//! bytes an entry), its publication state, the pieces of its recent changes, the
//! versions it published when, and the versions whose shards wait to be deleted
//! from KV.

use crate::domain::access::audit::{Action, Forwarded, Record, Stamp};
use crate::domain::code::Coded;
use crate::domain::operator_lists::delta::Piece;
use crate::domain::operator_lists::list::{FamilyEntries, ListKind};
use crate::domain::operator_lists::publication::Publication;
use crate::domain::operator_lists::snapshot::Manifest;
use crate::store::sql::{Row, Sql, SqlError, Value, MAX_EXACT_INTEGER};

/// Bytes of a piece of changes in one stored row.
const ROW_PIECE_BYTES: usize = 1 << 20;

/// What the directory knows this writer's audit rows by (`Forwarded::from`).
const FORWARDED_FROM: &str = "lists";

/// See `sql::migrate`. The first step is the schema objects had before it was
/// versioned; the second replaces the `dirty` flag by counts of changes saved and
/// published (a list marked dirty had one change saved that none published), and
/// adds the pieces of changes and the versions' times.
/// The third names retired shards by key, not by version and count, since a
/// version keeps the shards it shares with the one before (`cut`). The fourth
/// keeps the lists in chunks with their provenance (`chunks`), the edits
/// that made them, the runs of imports under way, the shards the publications
/// built, and the last edit each published version includes; the whole lists of
/// the `entries` table are taken over into chunks by the operator lists' object when it loads.
const MIGRATIONS: [&str; 9] = [
    "
    CREATE TABLE IF NOT EXISTS lists (
        kind TEXT PRIMARY KEY, version INTEGER NOT NULL, published_at INTEGER NOT NULL,
        shards INTEGER NOT NULL, dirty INTEGER NOT NULL, reserved INTEGER NOT NULL, manifest TEXT
    );
    CREATE TABLE IF NOT EXISTS entries (
        kind TEXT NOT NULL, n INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (kind, n)
    );
    CREATE TABLE IF NOT EXISTS retired (
        kind TEXT NOT NULL, version INTEGER NOT NULL, shards INTEGER NOT NULL, at INTEGER NOT NULL,
        PRIMARY KEY (kind, version)
    );",
    "
    ALTER TABLE lists ADD COLUMN saved INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE lists ADD COLUMN published INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE lists ADD COLUMN published_at_ms INTEGER NOT NULL DEFAULT 0;
    UPDATE lists SET saved = dirty, published_at_ms = published_at * 1000;
    ALTER TABLE lists DROP COLUMN dirty;
    ALTER TABLE lists DROP COLUMN published_at;
    CREATE TABLE pieces (
        kind TEXT NOT NULL, version INTEGER NOT NULL, level INTEGER NOT NULL, part INTEGER NOT NULL,
        data BLOB NOT NULL, in_kv INTEGER NOT NULL, PRIMARY KEY (kind, version, level, part)
    );
    CREATE TABLE versions (
        kind TEXT NOT NULL, version INTEGER NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (kind, version)
    );",
    "
    CREATE TABLE retired_shards (
        kind TEXT NOT NULL, key TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (kind, key)
    );
    WITH RECURSIVE n(i) AS (
        SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < (SELECT max(shards) FROM retired)
    )
    INSERT OR IGNORE INTO retired_shards (kind, key, at)
        SELECT retired.kind, 'v' || retired.version || '/' || n.i, retired.at
        FROM retired JOIN n ON n.i < retired.shards;
    DROP TABLE retired;
    ALTER TABLE lists DROP COLUMN shards;",
    "
    CREATE TABLE chunks (
        kind TEXT NOT NULL, start INTEGER NOT NULL, rev INTEGER NOT NULL, state INTEGER NOT NULL,
        entries INTEGER NOT NULL, first INTEGER, reach INTEGER, data BLOB NOT NULL,
        PRIMARY KEY (kind, start, rev)
    );
    CREATE INDEX chunks_by_state ON chunks (kind, state, start);
    CREATE TABLE edits (
        id INTEGER PRIMARY KEY, kind TEXT NOT NULL, at INTEGER NOT NULL, source TEXT NOT NULL,
        added INTEGER NOT NULL, removed INTEGER NOT NULL
    );
    CREATE TABLE runs (
        import INTEGER NOT NULL, run INTEGER NOT NULL, part INTEGER NOT NULL, data BLOB NOT NULL,
        PRIMARY KEY (import, run, part)
    );
    CREATE TABLE shards (
        kind TEXT NOT NULL, key TEXT NOT NULL, part INTEGER NOT NULL, data BLOB NOT NULL,
        PRIMARY KEY (kind, key, part)
    );
    ALTER TABLE lists ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;",
    // The list's size after each change, for the operator's chart of it.
    "ALTER TABLE edits ADD COLUMN entries INTEGER;",
    // Who made each change (the acting operator key's name), for the operator's lookup.
    "ALTER TABLE edits ADD COLUMN by_actor TEXT;",
    // How many of a chunk's entries the holders' reports promoted (`chunk::PROMOTED`):
    // none before, every entry of the lists then being the operator's.
    "ALTER TABLE chunks ADD COLUMN promoted INTEGER NOT NULL DEFAULT 0;",
    // Each change's audit row, written in the change's transaction and kept until
    // the directory has it (`audit::Forwarded`): numbered in the order the rows
    // were written and never again, so the directory writes each once.
    "
    CREATE TABLE audit_kept (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, edit INTEGER NOT NULL, at INTEGER NOT NULL,
        action TEXT NOT NULL, target TEXT NOT NULL, detail TEXT NOT NULL,
        actor TEXT, actor_key TEXT, client TEXT
    );",
    // Promotions waiting for the operator's review (`PROMOTION_REVIEW`), by the
    // key of the address or /64 promoted (`review.rs`).
    "CREATE TABLE review (ip BLOB PRIMARY KEY, queued_at INTEGER NOT NULL) WITHOUT ROWID;",
];

/// A list's publication as stored: its state, and what its published version is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PublicationState {
    pub publication: Publication,
    /// The last edit the published version includes: a chunk written later changed.
    pub rev: u64,
    pub manifest: Option<Manifest>,
}

/// A shard no manifest names any more, deleted once no cache can name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retired {
    pub kind: ListKind,
    pub key: String,
}

/// Names one piece of a list's changes: the version it ends at, and its level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PieceKey {
    pub version: u64,
    pub level: u8,
}

pub struct OperatorListTables<S: Sql> {
    pub(super) sql: S,
}

impl<S: Sql> OperatorListTables<S> {
    pub fn new(sql: S) -> Self {
        Self { sql }
    }

    pub fn migrate(&self) -> Result<(), SqlError> {
        crate::store::sql::migrate(&self.sql, &MIGRATIONS)
    }

    /// Keeps the audit row of change `edit`, made at `at_ms`, until the directory
    /// has it: called in the change's own transaction.
    pub fn keep_audit(&self, edit: u64, at_ms: u64, record: &Record) -> Result<(), SqlError> {
        self.sql.execute(
            "INSERT INTO audit_kept (edit, at, action, target, detail, actor, actor_key, client)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            &[
                Value::int(edit),
                Value::int(at_ms),
                Value::text(record.action.code()),
                Value::text(record.target.as_str()),
                Value::text(record.detail.as_str()),
                Value::opt_text(record.by.actor.as_deref()),
                Value::opt_text(record.by.key.as_deref()),
                Value::opt_text(record.by.client.as_deref()),
            ],
        )?;
        Ok(())
    }

    /// Says more of change `edit` in its audit row, while the row is still kept
    /// (an import's version, known once published).
    pub fn tell_audit(&self, edit: u64, detail: &str) -> Result<(), SqlError> {
        self.sql.execute(
            "UPDATE audit_kept SET detail = ?2 WHERE edit = ?1",
            &[Value::int(edit), Value::text(detail)],
        )?;
        Ok(())
    }

    /// The oldest `limit` audit rows the directory does not have yet, in order.
    pub fn audit_kept(&self, limit: usize) -> Result<Vec<Forwarded>, SqlError> {
        let rows = self.sql.query(
            "SELECT seq, at, action, target, detail, actor, actor_key, client FROM audit_kept
             ORDER BY seq LIMIT ?1",
            &[Value::int(limit as u64)],
        )?;
        rows.iter()
            .map(|row| {
                let code = row.text(2)?;
                let action = Action::from_code(&code)
                    .ok_or_else(|| SqlError(format!("an audit row of action {code:?}")))?;
                Ok(Forwarded {
                    from: FORWARDED_FROM.to_owned(),
                    seq: row.int(0)?,
                    at: row.int(1)?,
                    record: Record {
                        action,
                        target: row.text(3)?,
                        detail: row.text(4)?,
                        by: Stamp {
                            actor: row.opt_text(5)?,
                            key: row.opt_text(6)?,
                            client: row.opt_text(7)?,
                        },
                    },
                })
            })
            .collect()
    }

    /// Lets go of the audit rows up to `seq`, which the directory has.
    pub fn audit_forwarded(&self, seq: u64) -> Result<(), SqlError> {
        self.sql
            .execute("DELETE FROM audit_kept WHERE seq <= ?1", &[Value::int(seq)])?;
        Ok(())
    }

    /// Every list stored, with its publication.
    pub fn publications(&self) -> Result<Vec<(ListKind, PublicationState)>, SqlError> {
        let rows = self.sql.query(
            "SELECT kind, version, reserved, saved, published, published_at_ms, manifest, rev FROM lists",
            &[],
        )?;
        rows.iter().map(stored_of).collect()
    }

    /// A list as an earlier version of the operator lists' object kept it: whole, in rows of entries.
    pub fn entries(&self, kind: ListKind) -> Result<FamilyEntries, SqlError> {
        let mut bytes = Vec::new();
        for row in self.sql.query(
            "SELECT data FROM entries WHERE kind = ?1 ORDER BY n",
            &[Value::text(kind.code())],
        )? {
            bytes.extend_from_slice(row.blob(0)?);
        }
        FamilyEntries::decode(&bytes).ok_or_else(|| {
            SqlError(format!(
                "stored entries of the {} list do not decode",
                kind.code()
            ))
        })
    }

    /// Forgets a list kept whole by an earlier version of the operator lists' object, once taken over.
    pub fn forget_entries(&self, kind: ListKind) -> Result<(), SqlError> {
        self.sql.execute(
            "DELETE FROM entries WHERE kind = ?1",
            &[Value::text(kind.code())],
        )?;
        Ok(())
    }

    pub fn save_publication(
        &self,
        kind: ListKind,
        stored: &PublicationState,
    ) -> Result<(), SqlError> {
        let manifest = stored
            .manifest
            .as_ref()
            .map(|m| serde_json::to_string(m).map_err(|e| SqlError(e.to_string())))
            .transpose()?;
        let p = &stored.publication;
        self.sql.execute(
            "INSERT INTO lists (kind, version, reserved, saved, published, published_at_ms, manifest, rev)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
             ON CONFLICT (kind) DO UPDATE SET version = excluded.version, reserved = excluded.reserved,
                saved = excluded.saved, published = excluded.published,
                published_at_ms = excluded.published_at_ms, manifest = excluded.manifest,
                rev = excluded.rev",
            &[
                Value::text(kind.code()),
                Value::int(p.version),
                Value::int(p.reserved),
                Value::int(p.saved),
                Value::int(p.published),
                Value::int(p.published_at_ms),
                Value::opt_text(manifest.as_deref()),
                Value::int(stored.rev),
            ],
        )?;
        Ok(())
    }

    /// Stores a piece of changes, not yet in KV.
    pub fn save_piece(&self, kind: ListKind, key: PieceKey, piece: &Piece) -> Result<(), SqlError> {
        let bytes = piece.encode();
        for (part, data) in bytes.chunks(ROW_PIECE_BYTES).enumerate() {
            self.sql.execute(
                "INSERT OR REPLACE INTO pieces (kind, version, level, part, data, in_kv)
                 VALUES (?1, ?2, ?3, ?4, ?5, 0)",
                &[
                    Value::text(kind.code()),
                    Value::int(key.version),
                    Value::int(u64::from(key.level)),
                    Value::int(part as u64),
                    Value::Blob(data.to_vec()),
                ],
            )?;
        }
        Ok(())
    }

    /// A stored piece of changes, if the operator lists' object still has it.
    pub fn piece(&self, kind: ListKind, key: PieceKey) -> Result<Option<Piece>, SqlError> {
        let rows = self.sql.query(
            "SELECT data FROM pieces WHERE kind = ?1 AND version = ?2 AND level = ?3 ORDER BY part",
            &[
                Value::text(kind.code()),
                Value::int(key.version),
                Value::int(u64::from(key.level)),
            ],
        )?;
        if rows.is_empty() {
            return Ok(None);
        }
        let mut bytes = Vec::new();
        for row in &rows {
            bytes.extend_from_slice(row.blob(0)?);
        }
        Piece::decode(&bytes).map(Some).ok_or_else(|| {
            SqlError(format!(
                "a stored piece of changes, {key:?}, does not decode"
            ))
        })
    }

    /// The pieces not yet written to KV, oldest first.
    pub fn pieces_not_in_kv(&self, kind: ListKind) -> Result<Vec<PieceKey>, SqlError> {
        let every = MAX_EXACT_INTEGER as u64;
        self.piece_keys(kind, "in_kv = 0 AND version <= ?2", every, every)
    }

    pub fn piece_in_kv(&self, kind: ListKind, key: PieceKey) -> Result<(), SqlError> {
        self.sql.execute(
            "UPDATE pieces SET in_kv = 1 WHERE kind = ?1 AND version = ?2 AND level = ?3",
            &[
                Value::text(kind.code()),
                Value::int(key.version),
                Value::int(u64::from(key.level)),
            ],
        )?;
        Ok(())
    }

    /// At most `limit` of the pieces that end at or before `version`, oldest
    /// first: no cursor the window admits needs them.
    pub fn pieces_until(
        &self,
        kind: ListKind,
        version: u64,
        limit: u64,
    ) -> Result<Vec<PieceKey>, SqlError> {
        self.piece_keys(kind, "version <= ?2", version, limit)
    }

    pub fn forget_piece(&self, kind: ListKind, key: PieceKey) -> Result<(), SqlError> {
        self.sql.execute(
            "DELETE FROM pieces WHERE kind = ?1 AND version = ?2 AND level = ?3",
            &[
                Value::text(kind.code()),
                Value::int(key.version),
                Value::int(u64::from(key.level)),
            ],
        )?;
        Ok(())
    }

    fn piece_keys(
        &self,
        kind: ListKind,
        condition: &str,
        version: u64,
        limit: u64,
    ) -> Result<Vec<PieceKey>, SqlError> {
        let rows = self.sql.query(
            &format!(
                "SELECT DISTINCT version, level FROM pieces WHERE kind = ?1 AND {condition}
                 ORDER BY version, level LIMIT ?3"
            ),
            &[
                Value::text(kind.code()),
                Value::int(version),
                Value::int(limit),
            ],
        )?;
        rows.iter()
            .map(|row| {
                Ok(PieceKey {
                    version: row.int(0)?,
                    level: u8::try_from(row.int(1)?)
                        .map_err(|_| SqlError("a piece's level over 255".to_owned()))?,
                })
            })
            .collect()
    }

    /// Records that `version` was published at `at` (seconds), and answers the newest
    /// version published at or before `before`: older ones are forgotten.
    pub fn published_version(
        &self,
        kind: ListKind,
        version: u64,
        at: u64,
        before: u64,
    ) -> Result<Option<u64>, SqlError> {
        let kind = Value::text(kind.code());
        self.sql.execute(
            "INSERT OR REPLACE INTO versions (kind, version, at) VALUES (?1, ?2, ?3)",
            &[kind.clone(), Value::int(version), Value::int(at)],
        )?;
        let rows = self.sql.query(
            "SELECT max(version) FROM versions WHERE kind = ?1 AND at <= ?2",
            &[kind.clone(), Value::int(before)],
        )?;
        let newest = rows
            .first()
            .map(|row| row.opt_int(0))
            .transpose()?
            .flatten();
        if let Some(newest) = newest {
            self.sql.execute(
                "DELETE FROM versions WHERE kind = ?1 AND version < ?2",
                &[kind, Value::int(newest)],
            )?;
        }
        Ok(newest)
    }

    /// Remembers shards no manifest names any more, from `at` (seconds).
    pub fn retire(&self, kind: ListKind, keys: &[String], at: u64) -> Result<(), SqlError> {
        for key in keys {
            self.sql.execute(
                "INSERT OR IGNORE INTO retired_shards (kind, key, at) VALUES (?1, ?2, ?3)",
                &[Value::text(kind.code()), Value::text(key), Value::int(at)],
            )?;
        }
        Ok(())
    }

    /// At most `limit` of the shards retired before `before` (seconds), which may go.
    pub fn retired_before(&self, before: u64, limit: u64) -> Result<Vec<Retired>, SqlError> {
        let rows = self.sql.query(
            "SELECT kind, key FROM retired_shards WHERE at < ?1 ORDER BY kind, key LIMIT ?2",
            &[Value::int(before), Value::int(limit)],
        )?;
        rows.iter()
            .map(|row| {
                Ok(Retired {
                    kind: kind_of(row, 0)?,
                    key: row.text(1)?,
                })
            })
            .collect()
    }

    pub fn forget_retired(&self, retired: &Retired) -> Result<(), SqlError> {
        self.sql.execute(
            "DELETE FROM retired_shards WHERE kind = ?1 AND key = ?2",
            &[Value::text(retired.kind.code()), Value::text(&retired.key)],
        )?;
        Ok(())
    }
}

fn kind_of(row: &Row, column: usize) -> Result<ListKind, SqlError> {
    let code = row.text(column)?;
    ListKind::from_code(&code)
        .ok_or_else(|| SqlError(format!("a list this writer never kept: {code:?}")))
}

fn stored_of(row: &Row) -> Result<(ListKind, PublicationState), SqlError> {
    let manifest = match row.opt_text(6)? {
        Some(text) => Some(
            serde_json::from_str(&text).map_err(|e| SqlError(format!("stored manifest: {e}")))?,
        ),
        None => None,
    };
    let stored = PublicationState {
        publication: Publication {
            version: row.int(1)?,
            reserved: row.int(2)?,
            saved: row.int(3)?,
            published: row.int(4)?,
            published_at_ms: row.int(5)?,
        },
        rev: row.int(7)?,
        manifest,
    };
    Ok((kind_of(row, 0)?, stored))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::net::range::Ipv4Range;
    use crate::domain::operator_lists::delta::VersionChange;
    use crate::store::sql::native::NativeSql;

    fn tables() -> OperatorListTables<NativeSql> {
        let tables = OperatorListTables::new(NativeSql::new());
        tables.migrate().unwrap();
        tables
    }

    fn audit_row(detail: &str) -> Record {
        Record {
            action: Action::ListEdited,
            target: "global list".to_owned(),
            detail: detail.to_owned(),
            by: Stamp {
                actor: Some("deputy".to_owned()),
                key: Some("key_0123456789abcdef".to_owned()),
                client: Some("192.0.2.1".to_owned()),
            },
        }
    }

    #[test]
    fn an_audit_row_is_kept_until_the_directory_has_it_and_never_numbered_twice() {
        let tables = tables();
        let keep = |edit, at, detail| tables.keep_audit(edit, at, &audit_row(detail)).unwrap();
        keep(7, 1_000, "added 1, removed 0");
        keep(9, 2_000, "1 entries");
        tables.tell_audit(9, "1 entries, version 4").unwrap();
        let kept = tables.audit_kept(10).unwrap();
        assert_eq!(
            kept.iter()
                .map(|row| (row.seq, row.at, row.record.detail.as_str()))
                .collect::<Vec<_>>(),
            [
                (1, 1_000, "added 1, removed 0"),
                (2, 2_000, "1 entries, version 4"),
            ]
        );
        assert_eq!(kept[0].record, audit_row("added 1, removed 0"));
        assert_eq!(kept[0].from, "lists");
        assert_eq!(tables.audit_kept(1).unwrap().len(), 1, "the oldest first");
        tables.audit_forwarded(2).unwrap();
        assert!(tables.audit_kept(10).unwrap().is_empty());
        // The directory keeps the last number it wrote: a new row never reuses one.
        keep(10, 3_000, "added 2, removed 0");
        assert_eq!(tables.audit_kept(10).unwrap()[0].seq, 3);
    }

    #[test]
    fn a_writer_from_the_step_before_takes_audit_rows_after_its_upgrade() {
        let sql = NativeSql::new();
        crate::store::sql::migrate(&sql, &MIGRATIONS[..7]).unwrap();
        sql.execute(
            "INSERT INTO edits (id, kind, at, source, added, removed, entries, by_actor)
             VALUES (5, 'global', 1000, 'edit', 1, 0, 1, 'deputy')",
            &[],
        )
        .unwrap();
        let tables = OperatorListTables::new(sql);
        tables.migrate().unwrap();
        assert_eq!(tables.last_edit().unwrap(), 5, "the edits made before stay");
        assert!(tables.audit_kept(10).unwrap().is_empty());
        tables.keep_audit(6, 2_000, &audit_row("x")).unwrap();
        assert_eq!(tables.audit_kept(10).unwrap()[0].record.detail, "x");
    }

    #[test]
    fn a_publication_round_trips_and_a_list_kept_whole_before_chunks_is_read_back_once() {
        let tables = tables();
        let manifest = Manifest {
            version: 3,
            published_at: 9,
            entries: 2,
            shards: vec![0],
            keys: vec!["v2/0".to_owned()],
            promoted: Some(vec![0]),
            deltas_from: 1,
            ipv6: Default::default(),
        };
        let stored = PublicationState {
            publication: Publication {
                version: 3,
                reserved: 4,
                saved: 7,
                published: 6,
                published_at_ms: 9_000,
            },
            rev: 12,
            manifest: Some(manifest),
        };
        tables.save_publication(ListKind::Global, &stored).unwrap();
        tables
            .save_publication(ListKind::Allow, &PublicationState::default())
            .unwrap();
        let mut read = tables.publications().unwrap();
        read.sort_by_key(|(kind, _)| kind.code());
        assert_eq!(
            read,
            [
                (ListKind::Allow, PublicationState::default()),
                (ListKind::Global, stored)
            ]
        );
        // As the operator lists' object before chunks kept a list: its entries, five bytes each, in rows.
        let many = FamilyEntries::new(
            (0..450_000u32)
                .map(|n| Ipv4Range::from_parts(0x0800_0000 + n, 32).unwrap())
                .collect(),
        );
        for (n, part) in many.encode().chunks(200_000 * 5).enumerate() {
            tables
                .sql
                .execute(
                    "INSERT INTO entries (kind, n, data) VALUES ('global', ?1, ?2)",
                    &[Value::int(n as u64), Value::Blob(part.to_vec())],
                )
                .unwrap();
        }
        assert_eq!(tables.entries(ListKind::Global).unwrap(), many);
        tables.forget_entries(ListKind::Global).unwrap();
        assert_eq!(
            tables.entries(ListKind::Global).unwrap(),
            FamilyEntries::default()
        );
    }

    #[test]
    fn a_list_marked_dirty_before_the_counts_has_one_change_waiting_after_them() {
        let sql = NativeSql::new();
        crate::store::sql::migrate(&sql, &MIGRATIONS[..1]).unwrap();
        sql.execute(
            "INSERT INTO lists VALUES ('global', 5, 1000, 2, 1, 6, NULL)",
            &[],
        )
        .unwrap();
        let tables = OperatorListTables::new(sql);
        tables.migrate().unwrap();
        let (_, stored) = tables.publications().unwrap().remove(0);
        assert_eq!(
            stored.publication,
            Publication {
                version: 5,
                reserved: 6,
                saved: 1,
                published: 0,
                published_at_ms: 1_000_000,
            }
        );
        assert!(
            !stored.publication.includes(1),
            "the change is still to publish"
        );
    }

    #[test]
    fn pieces_of_changes_round_trip_across_rows_and_are_tracked_until_in_kv() {
        let tables = tables();
        let big = Piece::Changed(VersionChange::ipv4(
            (0..300_000u32).map(|n| (n * 4, n * 4 + 1)).collect(),
        ));
        let key = PieceKey {
            version: 4,
            level: 2,
        };
        tables.save_piece(ListKind::Global, key, &big).unwrap();
        let small = PieceKey {
            version: 5,
            level: 0,
        };
        tables
            .save_piece(ListKind::Global, small, &Piece::Reset)
            .unwrap();
        assert_eq!(tables.piece(ListKind::Global, key).unwrap(), Some(big));
        assert_eq!(tables.piece(ListKind::Allow, key).unwrap(), None);
        assert_eq!(
            tables.pieces_not_in_kv(ListKind::Global).unwrap(),
            [key, small]
        );
        tables.piece_in_kv(ListKind::Global, key).unwrap();
        assert_eq!(tables.pieces_not_in_kv(ListKind::Global).unwrap(), [small]);
        assert_eq!(tables.pieces_until(ListKind::Global, 4, 10).unwrap(), [key]);
        assert_eq!(
            tables.pieces_until(ListKind::Global, 5, 1).unwrap(),
            [key],
            "at most the limit, oldest first"
        );
        tables.forget_piece(ListKind::Global, key).unwrap();
        assert_eq!(tables.piece(ListKind::Global, key).unwrap(), None);
    }

    #[test]
    fn the_window_starts_at_the_newest_version_published_before_its_bound() {
        let tables = tables();
        let kind = ListKind::Global;
        assert_eq!(tables.published_version(kind, 1, 100, 50).unwrap(), None);
        assert_eq!(
            tables.published_version(kind, 2, 200, 150).unwrap(),
            Some(1)
        );
        assert_eq!(
            tables.published_version(kind, 4, 300, 250).unwrap(),
            Some(2)
        );
        assert_eq!(
            tables.published_version(kind, 5, 400, 260).unwrap(),
            Some(2),
            "versions before the window's start are forgotten, not the start"
        );
    }

    #[test]
    fn retired_shards_are_due_once_their_time_has_passed() {
        let tables = tables();
        let keys = ["v2/0".to_owned(), "v3/1".to_owned()];
        tables.retire(ListKind::Allow, &keys, 100).unwrap();
        tables.retire(ListKind::Allow, &keys[..1], 500).unwrap();
        assert_eq!(tables.retired_before(100, 10).unwrap(), []);
        let due = tables.retired_before(101, 10).unwrap();
        assert_eq!(
            tables.retired_before(101, 1).unwrap(),
            due[..1],
            "at most the limit of retired shards is due at once"
        );
        assert_eq!(
            due.iter().map(|r| r.key.as_str()).collect::<Vec<_>>(),
            ["v2/0", "v3/1"],
            "the first retirement counts"
        );
        tables.forget_retired(&due[0]).unwrap();
        assert_eq!(tables.retired_before(1_000, 10).unwrap(), due[1..]);
    }

    #[test]
    fn versions_retired_before_keys_are_retired_shard_by_shard() {
        let sql = NativeSql::new();
        crate::store::sql::migrate(&sql, &MIGRATIONS[..2]).unwrap();
        sql.execute(
            "INSERT INTO retired (kind, version, shards, at) VALUES ('global', 4, 3, 70), ('allow', 9, 1, 80)",
            &[],
        )
        .unwrap();
        let tables = OperatorListTables::new(sql);
        tables.migrate().unwrap();
        let due: Vec<(ListKind, String)> = tables
            .retired_before(81, 10)
            .unwrap()
            .into_iter()
            .map(|r| (r.kind, r.key))
            .collect();
        let key = |k: &str| k.to_owned();
        assert_eq!(
            due,
            [
                (ListKind::Allow, key("v9/0")),
                (ListKind::Global, key("v4/0")),
                (ListKind::Global, key("v4/1")),
                (ListKind::Global, key("v4/2"))
            ]
        );
        assert_eq!(tables.retired_before(70, 10).unwrap().len(), 0);
    }

    #[test]
    fn a_stored_list_this_writer_never_kept_fails_the_read() {
        let tables = tables();
        tables
            .sql
            .execute(
                "INSERT INTO lists (kind, version, reserved) VALUES ('deny', 1, 1)",
                &[],
            )
            .unwrap();
        assert!(tables.publications().unwrap_err().0.contains("\"deny\""));
    }
}
