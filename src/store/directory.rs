//! The directory object's SQLite database: every license with its label, note and
//! times; the named operator keys, as digests; and the audit log. One object holds
//! all three, so that a key revoked is refused by the next call, a search sees one
//! order, and an audit row is written in the same call as what it records.

use super::sql::{Sql, SqlError};

/// See `sql::migrate`. The second step keeps, for each object that sends the
/// directory audit rows it kept with its changes, the number of the last one
/// written (`audit::Forwarded`). The third indexes the log by each filter a page
/// takes, each followed by the time and the id a page is ordered and cut by, so
/// that a filtered page, newest first, is a range of one index (the index by
/// time alone replaced by one with the id after it).
const MIGRATIONS: [&str; 5] = [
    "
CREATE TABLE licenses (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, label TEXT NOT NULL,
    folded TEXT NOT NULL, note TEXT NOT NULL, created_at INTEGER NOT NULL, revoked_at INTEGER
);
CREATE INDEX licenses_by_age ON licenses (created_at, seq);
CREATE TABLE operator_keys (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, role TEXT NOT NULL, digest TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL, revoked_at INTEGER
);
CREATE TABLE audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, action TEXT NOT NULL,
    actor TEXT, actor_key TEXT, client TEXT, target TEXT NOT NULL, detail TEXT NOT NULL,
    count INTEGER NOT NULL DEFAULT 1, refusal INTEGER NOT NULL, n INTEGER NOT NULL
);
CREATE INDEX audit_by_time ON audit (at);
CREATE INDEX audit_by_kind ON audit (refusal, n);
CREATE TABLE takeover (id INTEGER PRIMARY KEY CHECK (id = 0), cursor TEXT, done INTEGER NOT NULL);
",
    "
CREATE TABLE forwarded (source TEXT PRIMARY KEY, seq INTEGER NOT NULL);
",
    "
DROP INDEX audit_by_time;
CREATE INDEX audit_by_when ON audit (at, id);
CREATE INDEX audit_by_action ON audit (action, at, id);
CREATE INDEX audit_by_key ON audit (actor_key, at, id);
CREATE INDEX audit_by_target ON audit (target, at, id);
CREATE INDEX audit_by_refusal ON audit (refusal, at, id);
",
    // The licenses' number kept as they are made (none is ever deleted), where
    // the operator's status counted every license at each call.
    "
CREATE TABLE license_count (id INTEGER PRIMARY KEY CHECK (id = 0), licenses INTEGER NOT NULL);
INSERT INTO license_count (id, licenses) SELECT 0, count(*) FROM licenses;
CREATE TRIGGER licenses_counted AFTER INSERT ON licenses
    BEGIN UPDATE license_count SET licenses = licenses + 1 WHERE id = 0; END;
",
    // The canaries, which the directory keeps and publishes as it does the keys.
    super::canaries::SCHEMA,
];

pub mod audit;
pub mod audit_query;
pub mod keys;
pub mod licenses;
#[cfg(test)]
mod test_directory;

pub struct Directory<S: Sql> {
    sql: S,
}

impl<S: Sql> Directory<S> {
    pub fn new(sql: S) -> Self {
        Self { sql }
    }

    pub fn migrate(&self) -> Result<(), SqlError> {
        super::sql::migrate(&self.sql, &MIGRATIONS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::time::UnixTime;

    use crate::store::directory::test_directory::*;
    use crate::store::sql::native::NativeSql;

    #[test]
    fn a_directory_from_the_step_before_takes_forwarded_rows_after_its_upgrade() {
        let directory = Directory::new(NativeSql::new());
        crate::store::sql::migrate(&directory.sql, &MIGRATIONS[..1]).unwrap();
        directory
            .add_license(&id(1), ("Acme", ""), UnixTime(1), None)
            .unwrap();
        directory.migrate().unwrap();
        assert_eq!(directory.license(&id(1)).unwrap().unwrap().label, "Acme");
        assert!(directory.record_forwarded(&forwarded(1, "one")).unwrap());
        assert!(
            !directory.record_forwarded(&forwarded(1, "one")).unwrap(),
            "a row forwarded again is not written twice"
        );
    }

    #[test]
    fn a_directory_from_before_the_count_counts_its_licenses_in_one_row() {
        let directory = Directory::new(NativeSql::new());
        crate::store::sql::migrate(&directory.sql, &MIGRATIONS[..3]).unwrap();
        for n in 1..=3 {
            let at = UnixTime(n);
            directory
                .add_license(&id(n), ("Acme", ""), at, None)
                .unwrap();
        }
        directory.migrate().unwrap();
        assert_eq!(directory.count().unwrap(), 3);
        directory
            .add_license(&id(4), ("Acme", ""), UnixTime(4), None)
            .unwrap();
        // The same license again changes nothing, and counts nothing.
        directory
            .add_license(&id(4), ("Acme", ""), UnixTime(5), None)
            .unwrap();
        assert_eq!(directory.count().unwrap(), 4);
        // The number is the counter's, read as one row, not a count of the licenses.
        directory
            .sql
            .execute("UPDATE license_count SET licenses = 1000 WHERE id = 0", &[])
            .unwrap();
        assert_eq!(
            directory.count().unwrap(),
            1000,
            "the licenses' number is read from the counter's row, not counted"
        );
    }

    #[test]
    fn a_directory_of_the_step_before_filters_its_log_once_upgraded() {
        let directory = Directory::new(NativeSql::new());
        crate::store::sql::migrate(&directory.sql, &MIGRATIONS[..2]).unwrap();
        filed_log(&directory);
        directory.migrate().unwrap();
        let shown = page(&directory, &filter(None, None, Some(L1)), None, 10).0;
        assert_eq!(shown, ["2000", "1000"]);
        let indexes = directory
            .sql
            .query(
                "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name LIKE 'audit_by_%'",
                &[],
            )
            .unwrap()[0]
            .int(0)
            .unwrap();
        assert_eq!(
            indexes, 6,
            "by kind (for the bound), time, action, key, target, refusal"
        );
    }
}
