//! A Cloudflare account's turn in its object's database: who holds it, until when.

use crate::domain::time::UnixTime;
use crate::store::sql::{Sql, SqlError, Value};

pub struct Turns<S> {
    sql: S,
}

impl<S: Sql> Turns<S> {
    pub fn new(sql: S) -> Self {
        Self { sql }
    }

    pub fn migrate(&self) -> Result<(), SqlError> {
        crate::store::sql::migrate(
            &self.sql,
            &["CREATE TABLE turn (
                id INTEGER PRIMARY KEY CHECK (id = 0), license TEXT NOT NULL, until INTEGER NOT NULL
            );"],
        )
    }

    /// Gives `license` the turn until `until`, unless another license holds one
    /// that has not lapsed at `now`; answers whether it has it.
    pub fn take(&self, license: &str, until: UnixTime, now: UnixTime) -> Result<bool, SqlError> {
        let taken = self.sql.execute(
            "INSERT INTO turn (id, license, until) VALUES (0, ?1, ?2)
             ON CONFLICT (id) DO UPDATE SET license = excluded.license, until = excluded.until
             WHERE turn.license = excluded.license OR turn.until <= ?3",
            &[Value::text(license), Value::int(until.0), Value::int(now.0)],
        )?;
        Ok(taken == 1)
    }

    /// Ends `license`'s turn, if it holds it.
    pub fn end(&self, license: &str) -> Result<(), SqlError> {
        self.sql.execute(
            "DELETE FROM turn WHERE license = ?1",
            &[Value::text(license)],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sql::native::NativeSql;

    #[test]
    fn one_license_holds_the_turn_until_it_ends_it_or_it_lapses() {
        let sql = NativeSql::new();
        let turns = Turns::new(&sql);
        turns.migrate().unwrap();
        assert!(turns.take("a", UnixTime(100), UnixTime(0)).unwrap());
        assert!(
            !turns.take("b", UnixTime(100), UnixTime(50)).unwrap(),
            "a holds it"
        );
        assert!(
            turns.take("a", UnixTime(200), UnixTime(60)).unwrap(),
            "its holder takes it again"
        );
        turns.end("b").unwrap();
        assert!(
            !turns.take("b", UnixTime(300), UnixTime(70)).unwrap(),
            "only its holder ends it"
        );
        turns.end("a").unwrap();
        assert!(turns.take("b", UnixTime(300), UnixTime(80)).unwrap());
        assert!(
            turns.take("a", UnixTime(400), UnixTime(300)).unwrap(),
            "a lapsed turn goes"
        );
    }
}
