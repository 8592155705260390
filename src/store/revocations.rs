//! The revocations' object's SQLite database: every license whose holder's object
//! is still to be told of its revocation, and every revocation still to be filed
//! in the directory (with who made it), each with when to try again.

use super::sql::{Row, Sql, SqlError, Value};
use crate::domain::access::audit::Stamp;
use crate::domain::access::license::LicenseId;
use crate::domain::time::UnixTime;

/// See `sql::migrate`. The second step keeps the revocations this object makes
/// itself (the directory made them before) until the directory has filed them.
const MIGRATIONS: [&str; 2] = [
    "CREATE TABLE pending (
    license TEXT PRIMARY KEY, since INTEGER NOT NULL, attempts INTEGER NOT NULL,
    next_at INTEGER NOT NULL
);
CREATE INDEX pending_by_time ON pending (next_at);",
    "CREATE TABLE filing (
    license TEXT PRIMARY KEY, at INTEGER NOT NULL, actor TEXT, actor_key TEXT, client TEXT,
    attempts INTEGER NOT NULL, next_at INTEGER NOT NULL
);
CREATE INDEX filing_by_time ON filing (next_at);",
];

/// A revocation the directory is still to file: when it was made (in
/// milliseconds), by whom, and how often filing it failed so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filing {
    pub license: LicenseId,
    pub at: u64,
    pub by: Stamp,
    pub attempts: u32,
}

fn license_of(row: &Row, column: usize) -> Result<LicenseId, SqlError> {
    let text = row.text(column)?;
    LicenseId::parse(&text).ok_or_else(|| SqlError(format!("a pending license {text:?} is no id")))
}

pub struct PendingRevocations<S: Sql> {
    sql: S,
}

impl<S: Sql> PendingRevocations<S> {
    pub fn new(sql: S) -> Self {
        Self { sql }
    }

    pub fn migrate(&self) -> Result<(), SqlError> {
        super::sql::migrate(&self.sql, &MIGRATIONS)
    }

    /// Records that `license`'s object is to be told, due now; a license already
    /// pending keeps its count of attempts.
    pub fn add(&self, license: &LicenseId, now: UnixTime) -> Result<(), SqlError> {
        self.sql.execute(
            "INSERT INTO pending (license, since, attempts, next_at) VALUES (?1, ?2, 0, ?2)
             ON CONFLICT (license) DO UPDATE SET next_at = excluded.next_at",
            &[Value::text(license.as_str()), Value::int(now.0)],
        )?;
        Ok(())
    }

    /// The object knows: the license is no longer pending.
    pub fn told(&self, license: &LicenseId) -> Result<(), SqlError> {
        self.sql.execute(
            "DELETE FROM pending WHERE license = ?1",
            &[Value::text(license.as_str())],
        )?;
        Ok(())
    }

    /// Telling it failed once more; the next try is at `next_at`. Returns the attempts so far.
    pub fn failed(&self, license: &LicenseId, next_at: UnixTime) -> Result<u32, SqlError> {
        let rows = self.sql.query(
            "UPDATE pending SET attempts = attempts + 1, next_at = ?2 WHERE license = ?1
             RETURNING attempts",
            &[Value::text(license.as_str()), Value::int(next_at.0)],
        )?;
        Ok(rows.first().map_or(Ok(0), |row| row.int(0))? as u32)
    }

    /// At most `limit` licenses due at `now`, with their failed attempts so far.
    pub fn due(&self, now: UnixTime, limit: usize) -> Result<Vec<(LicenseId, u32)>, SqlError> {
        let rows = self.sql.query(
            "SELECT license, attempts FROM pending WHERE next_at <= ?1 ORDER BY next_at LIMIT ?2",
            &[Value::int(now.0), Value::int(limit as u64)],
        )?;
        rows.iter()
            .map(|row| Ok((license_of(row, 0)?, row.int(1)? as u32)))
            .collect()
    }

    /// Records that `license`'s revocation, made at `at_ms` by `by`, is to be
    /// filed in the directory, due at `now`; one waiting already keeps its time.
    pub fn add_filing(
        &self,
        license: &LicenseId,
        (at_ms, by): (u64, &Stamp),
        now: UnixTime,
    ) -> Result<(), SqlError> {
        self.sql.execute(
            "INSERT INTO filing (license, at, actor, actor_key, client, attempts, next_at)
             VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6)
             ON CONFLICT (license) DO UPDATE SET next_at = excluded.next_at",
            &[
                Value::text(license.as_str()),
                Value::int(at_ms),
                Value::opt_text(by.actor.as_deref()),
                Value::opt_text(by.key.as_deref()),
                Value::opt_text(by.client.as_deref()),
                Value::int(now.0),
            ],
        )?;
        Ok(())
    }

    /// The directory filed it.
    pub fn filed(&self, license: &LicenseId) -> Result<(), SqlError> {
        self.sql.execute(
            "DELETE FROM filing WHERE license = ?1",
            &[Value::text(license.as_str())],
        )?;
        Ok(())
    }

    /// Filing it failed once more; the next try is at `next_at`.
    pub fn filing_failed(&self, license: &LicenseId, next_at: UnixTime) -> Result<(), SqlError> {
        self.sql.execute(
            "UPDATE filing SET attempts = attempts + 1, next_at = ?2 WHERE license = ?1",
            &[Value::text(license.as_str()), Value::int(next_at.0)],
        )?;
        Ok(())
    }

    /// At most `limit` revocations due to be filed at `now`.
    pub fn due_filings(&self, now: UnixTime, limit: usize) -> Result<Vec<Filing>, SqlError> {
        let rows = self.sql.query(
            "SELECT license, at, actor, actor_key, client, attempts FROM filing
             WHERE next_at <= ?1 ORDER BY next_at LIMIT ?2",
            &[Value::int(now.0), Value::int(limit as u64)],
        )?;
        rows.iter()
            .map(|row| {
                Ok(Filing {
                    license: license_of(row, 0)?,
                    at: row.int(1)?,
                    by: Stamp {
                        actor: row.opt_text(2)?,
                        key: row.opt_text(3)?,
                        client: row.opt_text(4)?,
                    },
                    attempts: row.int(5)? as u32,
                })
            })
            .collect()
    }

    /// How many revocations wait to be filed in the directory.
    pub fn filings(&self) -> Result<usize, SqlError> {
        let rows = self.sql.query("SELECT count(*) FROM filing", &[])?;
        Ok(rows.first().map_or(Ok(0), |row| row.int(0))? as usize)
    }

    /// When the next notice or filing is due, if any is.
    pub fn next_due(&self) -> Result<Option<UnixTime>, SqlError> {
        let rows = self.sql.query(
            "SELECT min(next_at) FROM (
                SELECT next_at FROM pending UNION ALL SELECT next_at FROM filing
             )",
            &[],
        )?;
        Ok(rows
            .first()
            .map(|row| row.opt_int(0))
            .transpose()?
            .flatten()
            .map(UnixTime))
    }

    pub fn count(&self) -> Result<usize, SqlError> {
        let rows = self.sql.query("SELECT count(*) FROM pending", &[])?;
        Ok(rows.first().map_or(Ok(0), |row| row.int(0))? as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sql::native::NativeSql;

    #[test]
    fn a_pending_revocation_is_due_until_told_and_waits_after_a_failure() {
        let pending = PendingRevocations::new(NativeSql::new());
        pending.migrate().unwrap();
        let (a, b) = (
            LicenseId::generate().unwrap(),
            LicenseId::generate().unwrap(),
        );
        pending.add(&a, UnixTime(100)).unwrap();
        pending.add(&b, UnixTime(101)).unwrap();
        assert_eq!(pending.due(UnixTime(100), 10).unwrap(), [(a.clone(), 0)]);
        assert_eq!(pending.failed(&a, UnixTime(110)).unwrap(), 1);
        assert_eq!(pending.due(UnixTime(105), 10).unwrap(), [(b.clone(), 0)]);
        assert_eq!(pending.next_due().unwrap(), Some(UnixTime(101)));
        pending.told(&b).unwrap();
        pending.add(&a, UnixTime(106)).unwrap();
        assert_eq!(
            pending.due(UnixTime(106), 10).unwrap(),
            [(a.clone(), 1)],
            "revoking again makes it due at once, its failures remembered"
        );
        pending.told(&a).unwrap();
        assert_eq!(
            (pending.count().unwrap(), pending.next_due().unwrap()),
            (0, None)
        );
    }

    fn stamp() -> Stamp {
        Stamp {
            actor: Some("deputy".into()),
            key: Some("key_0123456789abcdef".into()),
            client: Some("192.0.2.1".into()),
        }
    }

    #[test]
    fn a_revocation_waits_to_be_filed_with_who_made_it_until_the_directory_has_it() {
        let pending = PendingRevocations::new(NativeSql::new());
        pending.migrate().unwrap();
        let license = LicenseId::generate().unwrap();
        pending
            .add_filing(&license, (100_000, &stamp()), UnixTime(100))
            .unwrap();
        let filing = Filing {
            license: license.clone(),
            at: 100_000,
            by: stamp(),
            attempts: 0,
        };
        let due = pending.due_filings(UnixTime(100), 10).unwrap();
        assert_eq!(due, [filing]);
        pending.filing_failed(&license, UnixTime(105)).unwrap();
        assert!(pending.due_filings(UnixTime(104), 10).unwrap().is_empty());
        assert_eq!(pending.next_due().unwrap(), Some(UnixTime(105)));
        let again = pending.due_filings(UnixTime(105), 10).unwrap();
        assert_eq!(
            (again[0].at, again[0].attempts),
            (100_000, 1),
            "its first time kept"
        );
        pending.filed(&license).unwrap();
        assert_eq!(pending.filings().unwrap(), 0);
        assert_eq!(pending.next_due().unwrap(), None);
    }

    #[test]
    fn revocations_waiting_before_the_upgrade_are_still_told() {
        let sql = NativeSql::new();
        crate::store::sql::migrate(&sql, &MIGRATIONS[..1]).unwrap();
        let pending = PendingRevocations::new(sql);
        let license = LicenseId::generate().unwrap();
        pending.add(&license, UnixTime(100)).unwrap();
        pending.migrate().unwrap();
        assert_eq!(pending.due(UnixTime(100), 10).unwrap(), [(license, 0)]);
        assert_eq!(pending.filings().unwrap(), 0);
    }
}
