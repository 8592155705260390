//! The lists' writer's SQLite database: each list's entries (compact rows of five
//! bytes an entry), its publication state, and the versions whose shards still
//! wait to be deleted from KV.

use super::sql::{Row, Sql, SqlError, Value};
use crate::domain::code::Coded;
use crate::domain::ip_list::{ListEntries, ListKind, ENTRY_BYTES};
use crate::domain::snapshot::Manifest;

/// Entries in one stored row: SQLite rows here hold at most 2 MB.
const ROW_ENTRIES: usize = 200_000;

/// See `sql::migrate`. The first step is the schema objects had before it was versioned.
const MIGRATIONS: [&str; 1] = ["
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
    );"];

/// A list's publication as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Publication {
    /// The version isolates read; 0 before the first publication.
    pub version: u64,
    /// Seconds since the epoch.
    pub published_at: u64,
    /// The highest version number ever handed to a publication, published or not:
    /// a publication that failed half way may have written shards under it.
    pub reserved: u64,
    /// Shards of the current version.
    pub shards: usize,
    /// A change was saved that no publication includes yet.
    pub dirty: bool,
    pub manifest: Option<Manifest>,
}

impl Publication {
    /// A list never published: changed, so that it will be.
    pub fn unpublished() -> Self {
        Self {
            version: 0,
            published_at: 0,
            reserved: 0,
            shards: 0,
            dirty: true,
            manifest: None,
        }
    }
}

/// A replaced version whose shards are deleted once no cache can name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retired {
    pub kind: ListKind,
    pub version: u64,
    pub shards: usize,
}

pub struct ListTables<S: Sql> {
    sql: S,
}

impl<S: Sql> ListTables<S> {
    pub fn new(sql: S) -> Self {
        Self { sql }
    }

    pub fn migrate(&self) -> Result<(), SqlError> {
        super::sql::migrate(&self.sql, &MIGRATIONS)
    }

    /// Every list stored, with its publication.
    pub fn publications(&self) -> Result<Vec<(ListKind, Publication)>, SqlError> {
        let rows = self.sql.query(
            "SELECT kind, version, published_at, reserved, shards, dirty, manifest FROM lists",
            &[],
        )?;
        rows.iter().map(publication_of).collect()
    }

    pub fn entries(&self, kind: ListKind) -> Result<ListEntries, SqlError> {
        let mut bytes = Vec::new();
        for row in self.sql.query(
            "SELECT data FROM entries WHERE kind = ?1 ORDER BY n",
            &[Value::text(kind.code())],
        )? {
            bytes.extend_from_slice(row.blob(0)?);
        }
        ListEntries::decode(&bytes).ok_or_else(|| {
            SqlError(format!(
                "stored entries of the {} list do not decode",
                kind.code()
            ))
        })
    }

    /// Writes a list whole, with its publication. No `await` runs between the
    /// statements, so the runtime commits them together.
    pub fn save(
        &self,
        kind: ListKind,
        entries: &ListEntries,
        publication: &Publication,
    ) -> Result<(), SqlError> {
        self.sql.execute(
            "DELETE FROM entries WHERE kind = ?1",
            &[Value::text(kind.code())],
        )?;
        for (n, part) in entries
            .encode()
            .chunks(ROW_ENTRIES * ENTRY_BYTES)
            .enumerate()
        {
            self.sql.execute(
                "INSERT INTO entries (kind, n, data) VALUES (?1, ?2, ?3)",
                &[
                    Value::text(kind.code()),
                    Value::int(n as u64),
                    Value::Blob(part.to_vec()),
                ],
            )?;
        }
        self.save_publication(kind, publication)
    }

    pub fn save_publication(
        &self,
        kind: ListKind,
        publication: &Publication,
    ) -> Result<(), SqlError> {
        let manifest = publication
            .manifest
            .as_ref()
            .map(|m| serde_json::to_string(m).map_err(|e| SqlError(e.to_string())))
            .transpose()?;
        self.sql.execute(
            "INSERT INTO lists (kind, version, published_at, shards, dirty, reserved, manifest)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (kind) DO UPDATE SET version = excluded.version, published_at = excluded.published_at,
                shards = excluded.shards, dirty = excluded.dirty, reserved = excluded.reserved,
                manifest = excluded.manifest",
            &[
                Value::text(kind.code()),
                Value::int(publication.version),
                Value::int(publication.published_at),
                Value::int(publication.shards as u64),
                Value::int(u64::from(publication.dirty)),
                Value::int(publication.reserved),
                Value::opt_text(manifest.as_deref()),
            ],
        )?;
        Ok(())
    }

    /// Remembers a replaced version's shards, replaced at `at` (seconds).
    pub fn retire(&self, retired: Retired, at: u64) -> Result<(), SqlError> {
        self.sql.execute(
            "INSERT OR IGNORE INTO retired (kind, version, shards, at) VALUES (?1, ?2, ?3, ?4)",
            &[
                Value::text(retired.kind.code()),
                Value::int(retired.version),
                Value::int(retired.shards as u64),
                Value::int(at),
            ],
        )?;
        Ok(())
    }

    /// The versions replaced before `before` (seconds), whose shards may go.
    pub fn retired_before(&self, before: u64) -> Result<Vec<Retired>, SqlError> {
        let rows = self.sql.query(
            "SELECT kind, version, shards FROM retired WHERE at < ?1",
            &[Value::int(before)],
        )?;
        rows.iter()
            .map(|row| {
                Ok(Retired {
                    kind: kind_of(row, 0)?,
                    version: row.int(1)?,
                    shards: row.int(2)? as usize,
                })
            })
            .collect()
    }

    pub fn forget_retired(&self, retired: Retired) -> Result<(), SqlError> {
        self.sql.execute(
            "DELETE FROM retired WHERE kind = ?1 AND version = ?2",
            &[
                Value::text(retired.kind.code()),
                Value::int(retired.version),
            ],
        )?;
        Ok(())
    }
}

fn kind_of(row: &Row, column: usize) -> Result<ListKind, SqlError> {
    let code = row.text(column)?;
    ListKind::from_code(&code)
        .ok_or_else(|| SqlError(format!("a list this writer never kept: {code:?}")))
}

fn publication_of(row: &Row) -> Result<(ListKind, Publication), SqlError> {
    let manifest = match row.opt_text(6)? {
        Some(text) => Some(
            serde_json::from_str(&text).map_err(|e| SqlError(format!("stored manifest: {e}")))?,
        ),
        None => None,
    };
    let publication = Publication {
        version: row.int(1)?,
        published_at: row.int(2)?,
        reserved: row.int(3)?,
        shards: row.int(4)? as usize,
        dirty: row.int(5)? != 0,
        manifest,
    };
    Ok((kind_of(row, 0)?, publication))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::range::Ipv4Range;
    use crate::store::sql::native::NativeSql;

    fn tables() -> ListTables<NativeSql> {
        let tables = ListTables::new(NativeSql::new());
        tables.migrate().unwrap();
        tables
    }

    #[test]
    fn a_list_and_its_publication_round_trip_through_rows_of_at_most_200_000_entries() {
        let tables = tables();
        let many = ListEntries::new(
            (0..450_000u32)
                .map(|n| Ipv4Range::from_parts(0x0800_0000 + n, 32).unwrap())
                .collect(),
        );
        let manifest = Manifest {
            version: 3,
            published_at: 9,
            entries: many.len(),
            shards: vec![0],
        };
        let publication = Publication {
            version: 3,
            published_at: 9,
            reserved: 4,
            shards: 1,
            dirty: false,
            manifest: Some(manifest),
        };
        tables.save(ListKind::Global, &many, &publication).unwrap();
        tables
            .save(
                ListKind::Allow,
                &ListEntries::default(),
                &Publication::unpublished(),
            )
            .unwrap();
        assert_eq!(tables.entries(ListKind::Global).unwrap(), many);
        let rows = tables
            .sql
            .query("SELECT count(*) FROM entries WHERE kind = 'global'", &[])
            .unwrap();
        assert_eq!(rows[0].int(0).unwrap(), 3);
        let mut stored = tables.publications().unwrap();
        stored.sort_by_key(|(kind, _)| kind.code());
        assert_eq!(
            stored,
            [
                (ListKind::Allow, Publication::unpublished()),
                (ListKind::Global, publication)
            ]
        );
    }

    #[test]
    fn retired_versions_are_due_once_their_time_has_passed() {
        let tables = tables();
        let retired = Retired {
            kind: ListKind::Allow,
            version: 2,
            shards: 3,
        };
        tables.retire(retired, 100).unwrap();
        tables.retire(retired, 500).unwrap();
        assert_eq!(tables.retired_before(100).unwrap(), []);
        assert_eq!(
            tables.retired_before(101).unwrap(),
            [retired],
            "the first retirement counts"
        );
        tables.forget_retired(retired).unwrap();
        assert_eq!(tables.retired_before(1_000).unwrap(), []);
    }

    #[test]
    fn a_stored_list_this_writer_never_kept_fails_the_read() {
        let tables = tables();
        tables
            .sql
            .execute(
                "INSERT INTO lists VALUES ('deny', 1, 1, 1, 0, 1, NULL)",
                &[],
            )
            .unwrap();
        assert!(tables.publications().unwrap_err().0.contains("\"deny\""));
    }
}
