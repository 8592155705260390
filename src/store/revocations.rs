//! The revocations' object's SQLite database: every license whose holder's object
//! is still to be told of its revocation, with when to try again.

use super::sql::{Sql, SqlError, Value};
use crate::domain::access::license::LicenseId;
use crate::domain::time::UnixTime;

/// See `sql::migrate`.
const MIGRATIONS: [&str; 1] = ["CREATE TABLE pending (
    license TEXT PRIMARY KEY, since INTEGER NOT NULL, attempts INTEGER NOT NULL,
    next_at INTEGER NOT NULL
);
CREATE INDEX pending_by_time ON pending (next_at);"];

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
            .map(|row| {
                let text = row.text(0)?;
                let license = LicenseId::parse(&text)
                    .ok_or_else(|| SqlError(format!("a pending license {text:?} is no id")))?;
                Ok((license, row.int(1)? as u32))
            })
            .collect()
    }

    /// When the next pending license is due, if any is.
    pub fn next_due(&self) -> Result<Option<UnixTime>, SqlError> {
        let rows = self.sql.query("SELECT min(next_at) FROM pending", &[])?;
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
}
