//! One report shard's database: a row per address and reporting license (its
//! first and last report, how many, the categories), the addresses whose reports
//! reached the consensus, and the licenses revoked, whose reports no longer count.

use serde::{Deserialize, Serialize};

use crate::domain::net::address::Listed;
use crate::domain::network::consensus::Consensus;
use crate::domain::network::report::{Categories, Outgoing};
use crate::domain::time::UnixTime;
use crate::store::sql::{Row, Sql, SqlError, Value};

/// Step `n` brings the schema from version `n` to `n + 1`; a change is a new step.
const MIGRATIONS: [&str; 3] = [
    "CREATE TABLE reports (
        ip BLOB NOT NULL, license TEXT NOT NULL, first_at INTEGER NOT NULL,
        last_at INTEGER NOT NULL, count INTEGER NOT NULL, categories INTEGER NOT NULL,
        PRIMARY KEY (ip, license)
    ) WITHOUT ROWID;
    CREATE INDEX reports_by_age ON reports (last_at);
    CREATE TABLE consensus (
        ip BLOB PRIMARY KEY, reached_at INTEGER NOT NULL, last_report_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE forgotten (license TEXT PRIMARY KEY, at INTEGER NOT NULL) WITHOUT ROWID;",
    // What the lists' writer is still to be told: an address to promote (1) or to
    // let go of (0), sent in batches by the alarm; and the consensus by its last
    // report, so that the alarm finds what decays in order.
    "CREATE TABLE pending (ip BLOB PRIMARY KEY, promote INTEGER NOT NULL) WITHOUT ROWID;
    CREATE INDEX consensus_by_report ON consensus (last_report_at);",
    // A revoked license's reports found by its name, where the primary key
    // (address first) made the forgetting read every report of the shard.
    "CREATE INDEX reports_by_license ON reports (license);",
];

/// A revoked license's reports, dropped from the shard.
const FORGET_REPORTS: &str = "DELETE FROM reports WHERE license = ?1";

/// Rows of reports past every window one tally deletes at most: the table stays
/// as large as the reports that still count, a batch's worth of work at a time.
const AGED_OUT_PER_TALLY: u64 = 1000;

/// One license's reports of an address, as the operator's lookup shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reporter {
    pub license: String,
    pub first_at: UnixTime,
    pub last_at: UnixTime,
    pub count: u64,
    pub categories: Categories,
}

/// What the shard knows of one address: its reporters, most recent first (at
/// most `limit`), how many count towards the consensus now, and since when the
/// consensus holds, if it does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddressTally {
    pub reporters: Vec<Reporter>,
    pub counting: u64,
    pub reached_at: Option<UnixTime>,
    pub last_report_at: Option<UnixTime>,
}

pub struct Tally<S: Sql> {
    sql: S,
}

fn key(ip: Listed) -> Value {
    Value::Blob(ip.key().as_bytes().to_vec())
}

fn reporter_of(row: &Row) -> Result<Reporter, SqlError> {
    Ok(Reporter {
        license: row.text(0)?,
        first_at: UnixTime(row.int(1)?),
        last_at: UnixTime(row.int(2)?),
        count: row.int(3)?,
        categories: Categories::from_bits(u16::try_from(row.int(4)?).unwrap_or(u16::MAX)),
    })
}

impl<S: Sql> Tally<S> {
    pub fn new(sql: S) -> Self {
        Self { sql }
    }

    pub fn migrate(&self) -> Result<(), SqlError> {
        crate::store::sql::migrate(&self.sql, &MIGRATIONS)
    }

    /// Counts a batch of one license's reports; answers the addresses whose
    /// consensus this batch completed. A revoked license's reports are dropped.
    pub fn count(
        &self,
        license: &str,
        reports: &[Outgoing],
        consensus: Consensus,
        now: UnixTime,
    ) -> Result<Vec<Listed>, SqlError> {
        let forgotten = !self
            .sql
            .query(
                "SELECT 1 FROM forgotten WHERE license = ?1",
                &[Value::text(license)],
            )?
            .is_empty();
        if forgotten {
            return Ok(Vec::new());
        }
        for report in reports {
            self.sql.execute(
                "INSERT INTO reports (ip, license, first_at, last_at, count, categories)
                 VALUES (?1, ?2, ?3, ?3, 1, ?4)
                 ON CONFLICT (ip, license) DO UPDATE SET
                    first_at = min(first_at, excluded.first_at),
                    last_at = max(last_at, excluded.last_at),
                    count = count + 1,
                    categories = categories | excluded.categories",
                &[
                    key(report.subject),
                    Value::text(license),
                    Value::int(report.at.0),
                    Value::int(u64::from(report.categories.bits())),
                ],
            )?;
        }
        let mut subjects: Vec<Listed> = reports.iter().map(|r| r.subject).collect();
        subjects.sort_unstable_by_key(|ip| ip.key());
        subjects.dedup();
        let mut reached = Vec::new();
        for ip in subjects {
            let last = reports
                .iter()
                .filter(|r| r.subject == ip)
                .map(|r| r.at)
                .max()
                .unwrap_or(now);
            let updated = self.sql.execute(
                "UPDATE consensus SET last_report_at = max(last_report_at, ?2) WHERE ip = ?1",
                &[key(ip), Value::int(last.0)],
            )?;
            if updated == 0 && consensus.promotes(self.counting(ip, consensus, now)?) {
                self.sql.execute(
                    "INSERT INTO consensus (ip, reached_at, last_report_at) VALUES (?1, ?2, ?3)",
                    &[key(ip), Value::int(now.0), Value::int(last.0)],
                )?;
                self.sql.execute(
                    "INSERT OR REPLACE INTO pending (ip, promote) VALUES (?1, 1)",
                    &[key(ip)],
                )?;
                reached.push(ip);
            }
        }
        let horizon = now.minus(consensus.window.max(consensus.delist_after));
        self.sql.execute(
            "DELETE FROM reports WHERE (ip, license) IN
                (SELECT ip, license FROM reports WHERE last_at < ?1 LIMIT ?2)",
            &[Value::int(horizon.0), Value::int(AGED_OUT_PER_TALLY)],
        )?;
        Ok(reached)
    }

    /// The distinct licenses whose reports of `ip` count towards the consensus at `now`.
    fn counting(&self, ip: Listed, consensus: Consensus, now: UnixTime) -> Result<u64, SqlError> {
        self.sql
            .query(
                "SELECT count(*) FROM reports WHERE ip = ?1 AND last_at >= ?2",
                &[key(ip), Value::int(consensus.counts_from(now).0)],
            )?
            .first()
            .map_or(Ok(0), |row| row.int(0))
    }

    /// Moves at most `limit` addresses whose consensus decayed by `now` (no report
    /// within `delist_after`) to what the writer is to let go of; answers how many.
    pub fn decay(
        &self,
        consensus: Consensus,
        now: UnixTime,
        limit: u64,
    ) -> Result<usize, SqlError> {
        let before = now.minus(consensus.delist_after);
        let rows = self.sql.query(
            "SELECT ip FROM consensus WHERE last_report_at <= ?1 ORDER BY last_report_at LIMIT ?2",
            &[Value::int(before.0), Value::int(limit)],
        )?;
        for row in &rows {
            let ip = Value::Blob(row.blob(0)?.to_vec());
            self.sql.execute(
                "DELETE FROM consensus WHERE ip = ?1",
                std::slice::from_ref(&ip),
            )?;
            self.sql.execute(
                "INSERT OR REPLACE INTO pending (ip, promote) VALUES (?1, 0)",
                &[ip],
            )?;
        }
        Ok(rows.len())
    }

    /// At most `limit` changes the writer is still to be told: each address, and
    /// whether it is promoted (else let go of).
    pub fn pending(&self, limit: u64) -> Result<Vec<(Listed, bool)>, SqlError> {
        let rows = self.sql.query(
            "SELECT ip, promote FROM pending ORDER BY ip LIMIT ?1",
            &[Value::int(limit)],
        )?;
        let mut pending = Vec::with_capacity(rows.len());
        for row in &rows {
            // A key this code never writes is dropped, not sent.
            if let Some(ip) = Listed::from_key(row.blob(0)?) {
                pending.push((ip, row.int(1)? == 1));
            }
        }
        Ok(pending)
    }

    /// Forgets the changes the writer took.
    pub fn sent(&self, changes: &[(Listed, bool)]) -> Result<(), SqlError> {
        for &(ip, promote) in changes {
            self.sql.execute(
                "DELETE FROM pending WHERE ip = ?1 AND promote = ?2",
                &[key(ip), Value::int(u64::from(promote))],
            )?;
        }
        Ok(())
    }

    /// When the earliest consensus decays, if any stands.
    pub fn next_decay(&self, consensus: Consensus) -> Result<Option<UnixTime>, SqlError> {
        let rows = self
            .sql
            .query("SELECT min(last_report_at) FROM consensus", &[])?;
        Ok(rows
            .first()
            .map(|row| row.opt_int(0))
            .transpose()?
            .flatten()
            .map(|last| consensus.decays_at(UnixTime(last))))
    }

    /// Whether the writer is still to be told anything.
    pub fn has_pending(&self) -> Result<bool, SqlError> {
        Ok(!self
            .sql
            .query("SELECT 1 FROM pending LIMIT 1", &[])?
            .is_empty())
    }

    /// The operator took `ip`'s promotion off: its consensus and the reports made
    /// until now are forgotten, so that only new reports promote it again.
    pub fn dismiss(&self, ip: Listed, now: UnixTime) -> Result<(), SqlError> {
        self.sql
            .execute("DELETE FROM consensus WHERE ip = ?1", &[key(ip)])?;
        self.sql
            .execute("DELETE FROM pending WHERE ip = ?1", &[key(ip)])?;
        self.sql.execute(
            "DELETE FROM reports WHERE ip = ?1 AND last_at <= ?2",
            &[key(ip), Value::int(now.0)],
        )?;
        Ok(())
    }

    /// A revoked license: its reports stop counting, now and later.
    pub fn forget(&self, license: &str, now: UnixTime) -> Result<(), SqlError> {
        self.sql.execute(
            "INSERT OR IGNORE INTO forgotten (license, at) VALUES (?1, ?2)",
            &[Value::text(license), Value::int(now.0)],
        )?;
        self.sql.execute(FORGET_REPORTS, &[Value::text(license)])?;
        Ok(())
    }

    /// What the shard knows of `ip`, for the operator's lookup.
    pub fn of(
        &self,
        ip: Listed,
        consensus: Consensus,
        now: UnixTime,
        limit: u64,
    ) -> Result<AddressTally, SqlError> {
        let rows = self.sql.query(
            "SELECT license, first_at, last_at, count, categories FROM reports
             WHERE ip = ?1 ORDER BY last_at DESC, license LIMIT ?2",
            &[key(ip), Value::int(limit)],
        )?;
        let reporters = rows
            .iter()
            .map(reporter_of)
            .collect::<Result<Vec<_>, _>>()?;
        let reached = self.sql.query(
            "SELECT reached_at, last_report_at FROM consensus WHERE ip = ?1",
            &[key(ip)],
        )?;
        let reached = reached
            .first()
            .map(|row| Ok::<_, SqlError>((UnixTime(row.int(0)?), UnixTime(row.int(1)?))))
            .transpose()?;
        Ok(AddressTally {
            reporters,
            counting: self.counting(ip, consensus, now)?,
            reached_at: reached.map(|(at, _)| at),
            last_report_at: reached.map(|(_, last)| last),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sql::native::NativeSql;

    const NOW: UnixTime = UnixTime(1_795_262_400);

    fn tally() -> Tally<NativeSql> {
        let tally = Tally::new(NativeSql::new());
        tally.migrate().unwrap();
        tally
    }

    fn report(ip: &str, categories: &str, at: UnixTime) -> Outgoing {
        Outgoing {
            subject: ip.parse().unwrap(),
            categories: Categories::parse(categories).unwrap(),
            at,
        }
    }

    #[test]
    fn distinct_licenses_within_the_window_reach_the_consensus_once() {
        let tally = tally();
        let consensus = Consensus::default();
        let ip: Listed = "8.8.8.8".parse().unwrap();
        // One license four times is one reporter.
        let many = vec![report("8.8.8.8", "ssh", NOW); 4];
        assert_eq!(tally.count("lic_a", &many, consensus, NOW).unwrap(), vec![]);
        assert_eq!(
            tally
                .count("lic_b", &[report("8.8.8.8", "web", NOW)], consensus, NOW)
                .unwrap(),
            vec![]
        );
        // A report older than the window does not count.
        let old = NOW.minus(consensus.window + 1);
        assert_eq!(
            tally
                .count("lic_c", &[report("8.8.8.8", "scan", old)], consensus, NOW)
                .unwrap(),
            vec![]
        );
        assert_eq!(
            tally
                .count("lic_d", &[report("8.8.8.8", "scan", NOW)], consensus, NOW)
                .unwrap(),
            vec![]
        );
        assert_eq!(
            tally
                .count("lic_e", &[report("8.8.8.8", "spam", NOW)], consensus, NOW)
                .unwrap(),
            vec![ip]
        );
        assert_eq!(
            tally
                .count(
                    "lic_f",
                    &[report("8.8.8.8", "ssh", NOW.plus(5))],
                    consensus,
                    NOW.plus(5)
                )
                .unwrap(),
            vec![],
            "reached once"
        );
        let seen = tally.of(ip, consensus, NOW.plus(5), 10).unwrap();
        assert_eq!(seen.counting, 5);
        assert_eq!(
            seen.reporters.len(),
            5,
            "the report past every window is gone"
        );
        assert_eq!(seen.reached_at, Some(NOW));
        assert_eq!(seen.last_report_at, Some(NOW.plus(5)));
        let a = seen
            .reporters
            .iter()
            .find(|r| r.license == "lic_a")
            .unwrap();
        assert_eq!(
            (a.count, a.categories),
            (4, Categories::parse("ssh").unwrap())
        );
    }

    #[test]
    fn a_forgotten_licenses_reports_stop_counting_and_later_ones_are_dropped() {
        let tally = tally();
        let consensus = Consensus::default();
        for license in ["lic_a", "lic_b", "lic_c"] {
            tally
                .count(license, &[report("8.8.4.4", "ssh", NOW)], consensus, NOW)
                .unwrap();
        }
        tally.forget("lic_c", NOW).unwrap();
        assert_eq!(
            tally
                .count("lic_c", &[report("8.8.4.4", "ssh", NOW)], consensus, NOW)
                .unwrap(),
            vec![]
        );
        assert_eq!(
            tally
                .count("lic_d", &[report("8.8.4.4", "ssh", NOW)], consensus, NOW)
                .unwrap(),
            vec![]
        );
        let ip: Listed = "8.8.4.4".parse().unwrap();
        assert_eq!(tally.of(ip, consensus, NOW, 10).unwrap().counting, 3);
        assert_eq!(
            tally
                .count("lic_e", &[report("8.8.4.4", "ssh", NOW)], consensus, NOW)
                .unwrap(),
            vec![ip]
        );
    }

    #[test]
    fn a_shard_from_before_the_license_index_forgets_by_it_and_keeps_the_others_reports() {
        // The schema as the first two steps left it, with reports of two licenses.
        let sql = NativeSql::new();
        crate::store::sql::migrate(&sql, &MIGRATIONS[..2]).unwrap();
        let tally = Tally::new(sql);
        let consensus = Consensus::default();
        for license in ["lic_a", "lic_b"] {
            let reports = [report("8.8.4.4", "ssh", NOW), report("9.9.9.9", "web", NOW)];
            tally.count(license, &reports, consensus, NOW).unwrap();
        }
        tally.migrate().unwrap();
        let plan = tally.sql.plan(FORGET_REPORTS, &[Value::text("lic_a")]);
        assert!(
            plan.contains("INDEX reports_by_license"),
            "a revoked license's reports are found by reports_by_license, not by a scan: {plan}"
        );
        tally.forget("lic_a", NOW).unwrap();
        for ip in ["8.8.4.4", "9.9.9.9"] {
            let seen = tally.of(ip.parse().unwrap(), consensus, NOW, 10).unwrap();
            let licenses: Vec<_> = seen.reporters.iter().map(|r| r.license.as_str()).collect();
            assert_eq!(licenses, ["lic_b"], "{ip}");
        }
    }

    #[test]
    fn a_consensus_is_sent_as_a_promotion_and_decays_once_reports_stop() {
        let tally = tally();
        let consensus = Consensus {
            holders: 2,
            ..Consensus::default()
        };
        let ip: Listed = "9.9.9.9".parse().unwrap();
        for license in ["a", "b"] {
            tally
                .count(license, &[report("9.9.9.9", "ssh", NOW)], consensus, NOW)
                .unwrap();
        }
        assert_eq!(tally.pending(10).unwrap(), vec![(ip, true)]);
        tally.sent(&[(ip, true)]).unwrap();
        assert!(!tally.has_pending().unwrap());
        assert_eq!(
            tally.next_decay(consensus).unwrap(),
            Some(consensus.decays_at(NOW))
        );
        // A report a day later keeps it a day longer.
        let later = NOW.plus(86_400);
        tally
            .count("c", &[report("9.9.9.9", "ssh", later)], consensus, later)
            .unwrap();
        assert_eq!(
            tally
                .decay(consensus, consensus.decays_at(NOW), 10)
                .unwrap(),
            0
        );
        assert_eq!(
            tally
                .decay(consensus, consensus.decays_at(later), 10)
                .unwrap(),
            1
        );
        assert_eq!(tally.pending(10).unwrap(), vec![(ip, false)]);
        assert_eq!(tally.next_decay(consensus).unwrap(), None);
        // Taken off by the operator: only reports after that moment count again.
        tally.sent(&[(ip, false)]).unwrap();
        let now = consensus.decays_at(later);
        for license in ["a", "b"] {
            tally
                .count(license, &[report("9.9.9.9", "ssh", now)], consensus, now)
                .unwrap();
        }
        tally.dismiss(ip, now).unwrap();
        assert!(!tally.has_pending().unwrap());
        assert_eq!(tally.of(ip, consensus, now, 10).unwrap().counting, 0);
        let after = now.plus(1);
        tally
            .count("a", &[report("9.9.9.9", "ssh", after)], consensus, after)
            .unwrap();
        assert_eq!(
            tally
                .count("b", &[report("9.9.9.9", "ssh", after)], consensus, after)
                .unwrap(),
            vec![ip]
        );
    }

    #[test]
    fn promotion_off_reaches_nothing() {
        let tally = tally();
        let off = Consensus {
            holders: 0,
            ..Consensus::default()
        };
        for license in ["a", "b", "c", "d", "e"] {
            assert_eq!(
                tally
                    .count(license, &[report("1.1.1.1", "", NOW)], off, NOW)
                    .unwrap(),
                vec![]
            );
        }
    }
}
