//! The audit log as it is written: each change's row, refusals counted into
//! one row a minute, rows forwarded by other objects written once, a year and
//! at most `MAX_ROWS` of each kind kept, and a page read back.

use crate::domain::access::audit::Action;
use crate::domain::access::audit::AuditFilter;
use crate::domain::access::audit::AuditRow;
use crate::domain::access::audit::Forwarded;
use crate::domain::access::audit::Record;
use crate::domain::access::audit::MAX_ROWS;
use crate::domain::access::audit::REFUSALS_MERGED_SECONDS;
use crate::domain::access::audit::RETENTION_DAYS;
use crate::domain::code::Coded;
use crate::domain::time::Millis;
use crate::store::directory::audit_query::AuditCursor;
use crate::store::directory::audit_query::{audit_row_of, AuditQuery};
use crate::store::directory::Directory;
use crate::store::sql::{Row, Sql, SqlError, Value};

impl<S: Sql> Directory<S> {
    /// Writes an audit row, and lets go of those past the log's bounds: a year,
    /// and `MAX_ROWS` of its kind (refusals and changes are counted apart, each
    /// row numbered `n` within its kind). A refusal of the call the last refusal
    /// was recorded for, from the same address within a minute, counts on its row.
    pub fn record(&self, record: &Record, at: Millis) -> Result<(), SqlError> {
        self.record_counted(record, at, 1)
    }
    /// `record`, for what happened `count` times (the refusals an isolate counted).
    pub fn record_counted(&self, record: &Record, at: Millis, count: u64) -> Result<(), SqlError> {
        let refusal = u64::from(record.action == Action::Refused);
        let merged = refusal == 1
            && self.sql.execute(
                "UPDATE audit INDEXED BY audit_by_kind SET count = count + ?6
                 WHERE refusal = 1 AND n = (SELECT max(n) FROM audit INDEXED BY audit_by_kind WHERE refusal = 1)
                   AND at >= ?1 AND target = ?2 AND detail = ?3 AND client IS ?4
                   AND actor_key IS ?5",
                &[
                    Value::int(at.0.saturating_sub(REFUSALS_MERGED_SECONDS * 1000)),
                    Value::text(record.target.as_str()),
                    Value::text(record.detail.as_str()),
                    Value::opt_text(record.by.client.as_deref()),
                    Value::opt_text(record.by.key.as_deref()),
                    Value::int(count),
                ],
            )? == 1;
        if merged {
            return Ok(());
        }
        let rows = self.sql.query(
            "INSERT INTO audit (at, action, actor, actor_key, client, target, detail, refusal, n, count)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8,
                     coalesce((SELECT max(n) FROM audit INDEXED BY audit_by_kind WHERE refusal = ?8), 0) + 1, ?9)
             RETURNING n",
            &[
                Value::int(at.0),
                Value::text(record.action.code()),
                Value::opt_text(record.by.actor.as_deref()),
                Value::opt_text(record.by.key.as_deref()),
                Value::opt_text(record.by.client.as_deref()),
                Value::text(record.target.as_str()),
                Value::text(record.detail.as_str()),
                Value::int(refusal),
                Value::int(count),
            ],
        )?;
        let n = rows.first().map_or(Ok(0), |row| row.int(0))?;
        self.sql.execute(
            // By (refusal, n): the filters' index on (refusal, at, id) would make
            // each row's bookkeeping a scan of its kind.
            "DELETE FROM audit INDEXED BY audit_by_kind WHERE refusal = ?1 AND n <= ?2",
            &[Value::int(refusal), Value::int(n.saturating_sub(MAX_ROWS))],
        )?;
        self.forget_before(at)
    }
    /// Writes a row another object kept with its change, at the time of the
    /// change, unless this or a later row of that object was written already:
    /// `false` then. The object sends its rows in order and again until they are
    /// taken, so each is written exactly once.
    pub fn record_forwarded(&self, row: &Forwarded) -> Result<bool, SqlError> {
        let written = self.sql.query(
            "SELECT seq FROM forwarded WHERE source = ?1",
            &[Value::text(row.from.as_str())],
        )?;
        let last = written.first().map(|last| last.int(0)).transpose()?;
        if last.is_some_and(|last| row.seq <= last) {
            return Ok(false);
        }
        self.record(&row.record, Millis(row.at))?;
        self.sql.execute(
            "INSERT INTO forwarded (source, seq) VALUES (?1, ?2)
             ON CONFLICT (source) DO UPDATE SET seq = excluded.seq",
            &[Value::text(row.from.as_str()), Value::int(row.seq)],
        )?;
        Ok(true)
    }
    /// Lets go of the rows older than a year.
    fn forget_before(&self, now: Millis) -> Result<(), SqlError> {
        let year_ago = now.0.saturating_sub(RETENTION_DAYS * 86_400_000);
        self.sql
            .execute("DELETE FROM audit WHERE at < ?1", &[Value::int(year_ago)])?;
        Ok(())
    }
    /// Up to `limit` audit rows that `filter` lets through, newest first (by
    /// the time of what each records, then the order it was written in), after
    /// `after`; and where the next page goes on, if it does. Each filter is a
    /// range of an index (`AuditQuery`); with two or more, a page passes over
    /// at most `AUDIT_SCANNED_ROWS` rows, and one that came short goes on from
    /// the last it passed over.
    pub fn audit(
        &self,
        filter: &AuditFilter,
        after: Option<&AuditCursor>,
        limit: u32,
        now: Millis,
    ) -> Result<(Vec<AuditRow>, Option<AuditCursor>), SqlError> {
        // A log no one writes to still shows nothing older than its bound.
        self.forget_before(now)?;
        let limit = limit.max(1);
        let mut query = AuditQuery::of(filter, after);
        let statement = query.rows(limit);
        let rows = self.sql.query(&statement, &query.args)?;
        let cursor = |row: &Row| -> Result<AuditCursor, SqlError> {
            Ok(AuditCursor {
                at: row.int(1)?,
                id: row.int(0)?,
            })
        };
        if rows.len() > limit as usize {
            let page = rows[..limit as usize]
                .iter()
                .map(audit_row_of)
                .collect::<Result<Vec<_>, _>>()?;
            let next = cursor(&rows[limit as usize - 1])?;
            return Ok((page, Some(next)));
        }
        let page = rows
            .iter()
            .map(audit_row_of)
            .collect::<Result<Vec<_>, _>>()?;
        if query.within.is_empty() {
            return Ok((page, None));
        }
        // The page came short: it goes on from the last row passed over, when
        // the range holds more.
        let mut query = AuditQuery::of(filter, after);
        let statement = query.passed_over();
        let passed = self.sql.query(&statement, &query.args)?;
        let next = match passed.as_slice() {
            [last, _] => Some(AuditCursor {
                at: last.int(0)?,
                id: last.int(1)?,
            }),
            _ => None,
        };
        Ok((page, next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::access::audit::Action;
    use crate::domain::access::audit::MAX_ROWS;
    use crate::domain::access::audit::RETENTION_DAYS;
    use crate::domain::time::Millis;

    use crate::store::directory::test_directory::*;

    #[test]
    fn refusals_counted_elsewhere_add_their_count_to_the_row() {
        let directory = directory();
        directory
            .record_counted(&refusal("203.0.113.1"), Millis(1_000), 40)
            .unwrap();
        directory
            .record_counted(&refusal("203.0.113.1"), Millis(20_000), 2)
            .unwrap();
        directory
            .record_counted(&refusal("203.0.113.2"), Millis(20_000), 5)
            .unwrap();
        let (rows, _) = directory
            .audit(&EVERYTHING, None, 10, Millis(30_000))
            .unwrap();
        let counts: Vec<u64> = rows.iter().map(|row| row.count).collect();
        assert_eq!(counts, [5, 42]);
    }

    #[test]
    fn a_forwarded_row_is_written_once_at_its_changes_time_and_none_older_than_the_last() {
        let directory = directory();
        assert!(directory.record_forwarded(&forwarded(1, "one")).unwrap());
        assert!(
            !directory.record_forwarded(&forwarded(1, "one")).unwrap(),
            "a row forwarded again is not written twice"
        );
        assert!(directory.record_forwarded(&forwarded(3, "three")).unwrap());
        assert!(
            !directory.record_forwarded(&forwarded(2, "two")).unwrap(),
            "sent in order, so an older one was written already"
        );
        let mut other = forwarded(1, "another object's");
        other.from = "elsewhere".into();
        assert!(directory.record_forwarded(&other).unwrap());
        let (rows, _) = directory
            .audit(&EVERYTHING, None, 10, Millis(10_000))
            .unwrap();
        let written: Vec<(&str, &str)> = rows
            .iter()
            .map(|row| (row.detail.as_str(), row.at.as_str()))
            .collect();
        let at = |ms: u64| Millis(ms).unix().to_rfc3339();
        // Listed by the time of their changes, a row that came late among them.
        assert_eq!(
            written,
            [
                ("three", at(5_003).as_str()),
                ("another object's", at(5_001).as_str()),
                ("one", at(5_001).as_str()),
            ]
        );
    }

    #[test]
    fn refusals_of_one_call_from_one_address_within_a_minute_are_one_counted_row() {
        let directory = directory();
        for (client, at) in [
            ("203.0.113.1", 1_000),
            ("203.0.113.1", 60_999),
            ("203.0.113.2", 61_000),
            ("203.0.113.1", 62_000),
            ("203.0.113.1", 200_000),
        ] {
            directory.record(&refusal(client), Millis(at)).unwrap();
        }
        let (rows, next) = directory
            .audit(&EVERYTHING, None, 10, Millis(200_000))
            .unwrap();
        let counts: Vec<u64> = rows.iter().map(|row| row.count).collect();
        assert_eq!(
            (counts, next),
            (vec![1, 1, 1, 2], None),
            "a refusal merges into the last row only from its address within a minute"
        );
    }

    #[test]
    fn the_log_keeps_a_year_and_at_most_its_rows_of_each_kind_and_pages_newest_first() {
        let directory = directory();
        let day = 86_400_000;
        let mut created = refusal("x");
        created.action = Action::LicenseCreated;
        directory.record(&created, Millis(day)).unwrap();
        let later = Millis(day * (RETENTION_DAYS + 1) + 1);
        assert_eq!(
            directory
                .audit(&EVERYTHING, None, 10, later)
                .unwrap()
                .0
                .len(),
            0,
            "a year on, even unwritten"
        );
        directory.record(&created, later).unwrap();
        let (rows, _) = directory.audit(&EVERYTHING, None, 10, later).unwrap();
        assert_eq!(rows.len(), 1, "the row of a year before went");
        // A flood of refusals, each of another call, one more than the log keeps
        // of a kind, as production records them: they push out refusals only.
        let most = MAX_ROWS;
        let start = later.0 + 1;
        for n in 0..most + 1 {
            let mut flood = refusal("203.0.113.9");
            flood.target = format!("GET /admin/x{n}");
            directory.record(&flood, Millis(start + n)).unwrap();
        }
        let now = Millis(start + most + 1);
        let count = |refusal: u64| {
            directory
                .sql
                .query(
                    "SELECT count(*) FROM audit WHERE refusal = ?1",
                    &[Value::int(refusal)],
                )
                .unwrap()[0]
                .int(0)
                .unwrap()
        };
        assert_eq!(
            (count(0), count(1)),
            (1, most),
            "the refusals keep at most their rows of the kind, and the change stands"
        );
        for n in 0..most {
            directory.record(&created, Millis(now.0 + n)).unwrap();
        }
        assert_eq!((count(0), count(1)), (most, most));
        let (first, next) = directory.audit(&EVERYTHING, None, 3, now).unwrap();
        let newest = first[0].id;
        let (second, _) = directory.audit(&EVERYTHING, next.as_ref(), 3, now).unwrap();
        assert_eq!(second[0].id, newest - 3);
        assert!(first
            .iter()
            .chain(&second)
            .all(|row| row.action == "license.created"));
    }
}
