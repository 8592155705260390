//! One report shard's database: a row per address and reporting license (its
//! first and last report, how many, the categories, the network of its latest
//! report, when its license was issued), the addresses whose reports make the
//! consensus, the licenses revoked (whose reports are gone) and suspended (whose
//! reports are kept and count for nothing), and when each address is to be
//! weighed again.
//!
//! An address is weighed when a report adds a voice to it (a new license, another
//! network, a report back within the window), and again at its recheck: when a
//! promotion's reports would stop making it, when a license on probation comes
//! of age, when a license is suspended, reinstated or revoked. A report that adds
//! no voice (the same license again, from the same network) reads one row and
//! writes one, whatever the address's reporters.

use std::collections::BTreeSet;

use crate::domain::net::address::Listed;
use crate::domain::network::consensus::Consensus;
use crate::domain::network::report::Outgoing;
use crate::domain::time::UnixTime;
use crate::store::sql::{Sql, SqlError, Value};

/// Step `n` brings the schema from version `n` to `n + 1`; a change is a new step.
const MIGRATIONS: [&str; 4] = [
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
    // What the operator lists' object is still to be told: an address to promote (1) or to
    // let go of (0), sent in batches by the alarm; and the consensus by its last
    // report, so that the alarm finds what decays in order.
    "CREATE TABLE pending (ip BLOB PRIMARY KEY, promote INTEGER NOT NULL) WITHOUT ROWID;
    CREATE INDEX consensus_by_report ON consensus (last_report_at);",
    // A revoked license's reports found by its name, where the primary key
    // (address first) made the forgetting read every report of the shard.
    "CREATE INDEX reports_by_license ON reports (license);",
    // Independent reporters: each license's vote carries the network of its latest
    // report (none for those kept before: a network of its own each), when its
    // license was issued (0 before: past any probation) and whether it named a
    // canary (planted: it never counts); an address's networks by
    // index, one entry a vote that changes only with its network, so that a report
    // writes no more rows than before. Suspended licenses. A promotion lasts while
    // its reports make it, so each address has the moment it is weighed again,
    // and every promotion standing at the upgrade is weighed at once; its last
    // report no longer says when it goes.
    "ALTER TABLE reports ADD COLUMN network TEXT;
    ALTER TABLE reports ADD COLUMN licensed_at INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE reports ADD COLUMN planted INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX reports_by_network ON reports (ip, network);
    CREATE TABLE suspended (license TEXT PRIMARY KEY, at INTEGER NOT NULL) WITHOUT ROWID;
    CREATE TABLE recheck (ip BLOB PRIMARY KEY, at INTEGER NOT NULL) WITHOUT ROWID;
    CREATE INDEX recheck_by_time ON recheck (at);
    INSERT INTO recheck (ip, at) SELECT ip, 0 FROM consensus;
    DROP INDEX consensus_by_report;",
];

/// A revoked license's reports, dropped from the shard.
const FORGET_REPORTS: &str = "DELETE FROM reports WHERE license = ?1";

/// Rows of reports past every window one tally deletes at most: the table stays
/// as large as the reports that still count, a batch's worth of work at a time.
const AGED_OUT_PER_TALLY: u64 = 1000;

pub struct Tally<S: Sql> {
    pub(super) sql: S,
}

impl<S: Sql> Tally<S> {
    pub fn new(sql: S) -> Self {
        Self { sql }
    }

    pub fn migrate(&self) -> Result<(), SqlError> {
        crate::store::sql::migrate(&self.sql, &MIGRATIONS)
    }

    /// Counts a batch of one license's reports (its license issued at
    /// `licensed_at`); answers the addresses whose consensus this batch completed.
    /// A revoked license's reports are dropped; a suspended one's are kept.
    pub fn count(
        &self,
        (license, licensed_at): (&str, UnixTime),
        reports: &[Outgoing],
        consensus: Consensus,
        now: UnixTime,
    ) -> Result<Vec<Listed>, SqlError> {
        if self.is_in("forgotten", license)? {
            return Ok(Vec::new());
        }
        let window_start = consensus.window_start(now);
        let mut voiced = BTreeSet::new();
        for report in reports {
            let prior = self.sql.query(
                "SELECT last_at, network FROM reports WHERE ip = ?1 AND license = ?2",
                &[Value::listed(report.subject), Value::text(license)],
            )?;
            let network = report.network.map(|network| network.to_string());
            self.sql.execute(
                "INSERT INTO reports
                    (ip, license, first_at, last_at, count, categories, network, licensed_at,
                     planted)
                 VALUES (?1, ?2, ?3, ?3, 1, ?4, ?5, ?6, ?7)
                 ON CONFLICT (ip, license) DO UPDATE SET
                    first_at = min(first_at, excluded.first_at),
                    last_at = max(last_at, excluded.last_at),
                    count = count + 1,
                    categories = categories | excluded.categories,
                    licensed_at = excluded.licensed_at,
                    planted = max(planted, excluded.planted)",
                &[
                    Value::listed(report.subject),
                    Value::text(license),
                    Value::int(report.at.0),
                    Value::int(u64::from(report.categories.bits())),
                    Value::opt_text(network.as_deref()),
                    Value::int(licensed_at.0),
                    Value::int(u64::from(report.canary)),
                ],
            )?;
            // A voice more: a license new to the address, another network (a
            // license counts with the network of its latest report), or a report
            // back within the window.
            let adds_a_voice = match prior.first() {
                None => true,
                Some(row) => {
                    let last_at = UnixTime(row.int(0)?);
                    let moved = report.at >= last_at && row.opt_parsed(1)? != report.network;
                    if moved {
                        self.sql.execute(
                            "UPDATE reports SET network = ?3 WHERE ip = ?1 AND license = ?2",
                            &[
                                Value::listed(report.subject),
                                Value::text(license),
                                Value::opt_text(network.as_deref()),
                            ],
                        )?;
                    }
                    moved || (last_at < window_start && report.at >= window_start)
                }
            };
            if adds_a_voice {
                voiced.insert(report.subject);
            }
        }
        let mut reached = Vec::new();
        if !voiced.is_empty() && !self.is_in("suspended", license)? {
            let counts_from = consensus.counts_from(licensed_at);
            for ip in voiced {
                if counts_from > now {
                    // Its voice counts once the license is old enough: weighed then.
                    self.recheck_at(ip, counts_from)?;
                } else if !self.has_consensus(ip)? && self.reach(ip, consensus, now)? {
                    reached.push(ip);
                }
            }
        }
        let horizon = now.minus(consensus.keeps_for());
        self.sql.execute(
            "DELETE FROM reports WHERE (ip, license) IN
                (SELECT ip, license FROM reports WHERE last_at < ?1 LIMIT ?2)",
            &[Value::int(horizon.0), Value::int(AGED_OUT_PER_TALLY)],
        )?;
        Ok(reached)
    }

    fn is_in(&self, table: &str, license: &str) -> Result<bool, SqlError> {
        Ok(!self
            .sql
            .query(
                &format!("SELECT 1 FROM {table} WHERE license = ?1"),
                &[Value::text(license)],
            )?
            .is_empty())
    }

    fn has_consensus(&self, ip: Listed) -> Result<bool, SqlError> {
        Ok(!self
            .sql
            .query(
                "SELECT 1 FROM consensus WHERE ip = ?1",
                &[Value::listed(ip)],
            )?
            .is_empty())
    }

    /// Weighs `ip` again no later than `at`.
    pub(super) fn recheck_at(&self, ip: Listed, at: UnixTime) -> Result<(), SqlError> {
        self.sql.execute(
            "INSERT INTO recheck (ip, at) VALUES (?1, ?2)
             ON CONFLICT (ip) DO UPDATE SET at = min(at, excluded.at)",
            &[Value::listed(ip), Value::int(at.0)],
        )?;
        Ok(())
    }

    /// Weighs again the addresses `license` reported (those with a consensus
    /// only, when `standing_ones` says so) at once.
    fn recheck_reported_by(
        &self,
        license: &str,
        standing_ones: bool,
        now: UnixTime,
    ) -> Result<(), SqlError> {
        let only = if standing_ones {
            "AND EXISTS (SELECT 1 FROM consensus c WHERE c.ip = r.ip)"
        } else {
            ""
        };
        self.sql.execute(
            &format!(
                "INSERT INTO recheck (ip, at) SELECT r.ip, ?2 FROM reports r
                 WHERE r.license = ?1 {only}
                 ON CONFLICT (ip) DO UPDATE SET at = min(at, excluded.at)"
            ),
            &[Value::text(license), Value::int(now.0)],
        )?;
        Ok(())
    }

    /// Weighs at most `limit` of the addresses due by `now`: a promotion whose
    /// reports no longer make it goes to what the operator lists' object is to let go of, one
    /// they still make is weighed again when they would stop, and an address
    /// without one whose votes now make it (a license come of age, or
    /// reinstated) is promoted. Answers how many were weighed.
    pub fn recheck(
        &self,
        consensus: Consensus,
        now: UnixTime,
        limit: u64,
    ) -> Result<usize, SqlError> {
        let rows = self.sql.query(
            "SELECT ip FROM recheck WHERE at <= ?1 ORDER BY at LIMIT ?2",
            &[Value::int(now.0), Value::int(limit)],
        )?;
        for row in &rows {
            let bytes = row.blob(0)?.to_vec();
            self.sql.execute(
                "DELETE FROM recheck WHERE ip = ?1",
                &[Value::Blob(bytes.clone())],
            )?;
            // A key this code never writes is dropped.
            let Some(ip) = Listed::from_key(&bytes) else {
                continue;
            };
            if !self.has_consensus(ip)? {
                if !self.reach(ip, consensus, now)? {
                    self.await_coming_of_age(ip, consensus, now)?;
                }
                continue;
            }
            match consensus.kept_until(self.votes(ip), now)? {
                Some(until) => self.recheck_at(ip, until)?,
                None => {
                    self.sql
                        .execute("DELETE FROM consensus WHERE ip = ?1", &[Value::listed(ip)])?;
                    self.sql.execute(
                        "INSERT OR REPLACE INTO pending (ip, promote) VALUES (?1, 0)",
                        &[Value::listed(ip)],
                    )?;
                    self.await_coming_of_age(ip, consensus, now)?;
                }
            }
        }
        Ok(rows.len())
    }

    /// At most `limit` changes the operator lists' object is still to be told: each address, and
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

    /// Forgets the changes the operator lists' object took.
    pub fn sent(&self, changes: &[(Listed, bool)]) -> Result<(), SqlError> {
        for &(ip, promote) in changes {
            self.sql.execute(
                "DELETE FROM pending WHERE ip = ?1 AND promote = ?2",
                &[Value::listed(ip), Value::int(u64::from(promote))],
            )?;
        }
        Ok(())
    }

    /// When the alarm is next due: at once while the operator lists' object is to be told
    /// something, else at the earliest recheck, if any.
    pub fn next_due(&self, now: UnixTime) -> Result<Option<UnixTime>, SqlError> {
        if !self
            .sql
            .query("SELECT 1 FROM pending LIMIT 1", &[])?
            .is_empty()
        {
            return Ok(Some(now));
        }
        let rows = self.sql.query("SELECT min(at) FROM recheck", &[])?;
        Ok(rows
            .first()
            .map(|row| row.opt_int(0))
            .transpose()?
            .flatten()
            .map(UnixTime))
    }

    /// The operator took `ip`'s promotion off, or would not have it: its
    /// consensus and the reports made until now are forgotten, so that only new
    /// reports promote it again.
    pub fn dismiss(&self, ip: Listed, now: UnixTime) -> Result<(), SqlError> {
        for table in ["consensus", "pending", "recheck"] {
            self.sql.execute(
                &format!("DELETE FROM {table} WHERE ip = ?1"),
                &[Value::listed(ip)],
            )?;
        }
        self.sql.execute(
            "DELETE FROM reports WHERE ip = ?1 AND last_at <= ?2",
            &[Value::listed(ip), Value::int(now.0)],
        )?;
        Ok(())
    }

    /// A revoked license: its reports are gone, now and later, and what they
    /// helped promote is weighed again at once.
    pub fn forget(&self, license: &str, now: UnixTime) -> Result<(), SqlError> {
        self.sql.execute(
            "INSERT OR IGNORE INTO forgotten (license, at) VALUES (?1, ?2)",
            &[Value::text(license), Value::int(now.0)],
        )?;
        self.recheck_reported_by(license, true, now)?;
        self.sql.execute(FORGET_REPORTS, &[Value::text(license)])?;
        self.sql.execute(
            "DELETE FROM suspended WHERE license = ?1",
            &[Value::text(license)],
        )?;
        Ok(())
    }

    /// A license suspended from the network, or reinstated: its reports are kept
    /// either way, and what they count towards is weighed again at once (what
    /// they helped promote, for a suspension; all they reported, for a
    /// reinstatement). Answers whether its standing here changed.
    pub fn set_standing(
        &self,
        license: &str,
        suspended: bool,
        now: UnixTime,
    ) -> Result<bool, SqlError> {
        if self.is_in("forgotten", license)? {
            return Ok(false);
        }
        let changed = if suspended {
            self.sql.execute(
                "INSERT OR IGNORE INTO suspended (license, at) VALUES (?1, ?2)",
                &[Value::text(license), Value::int(now.0)],
            )?
        } else {
            self.sql.execute(
                "DELETE FROM suspended WHERE license = ?1",
                &[Value::text(license)],
            )?
        } > 0;
        if changed {
            self.recheck_reported_by(license, suspended, now)?;
        }
        Ok(changed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::network::report::Categories;
    use crate::domain::network::reporter::ReporterNetwork;
    use crate::domain::network::standing::Standing;
    use crate::store::report_shard::votes::LICENSES_COUNTING;
    use crate::store::report_shard::votes::NETWORKS_OF_THEIR_OWN;
    use crate::store::report_shard::votes::NEXT_NETWORK;
    use crate::store::sql::native::NativeSql;
    use crate::store::sql::Row;

    const NOW: UnixTime = UnixTime(1_795_262_400);
    /// A license issued long before: past any probation.
    const ISSUED: UnixTime = UnixTime(1_700_000_000);

    fn tally() -> Tally<NativeSql> {
        let tally = Tally::new(NativeSql::new());
        tally.migrate().unwrap();
        tally
    }

    /// A report of `ip` from a client of the network `n` (its /24, 10.0.n.0).
    fn report(ip: &str, categories: &str, at: UnixTime, n: u8) -> Outgoing {
        Outgoing {
            subject: ip.parse().unwrap(),
            categories: Categories::parse(categories).unwrap(),
            at,
            network: Some(ReporterNetwork::of_client(Some(&format!("10.0.{n}.1")))),
            canary: false,
        }
    }

    fn count(tally: &Tally<NativeSql>, license: &str, reports: &[Outgoing]) -> Vec<Listed> {
        tally
            .count((license, ISSUED), reports, Consensus::default(), NOW)
            .unwrap()
    }

    #[test]
    fn distinct_licenses_from_distinct_networks_reach_the_consensus_once() {
        let tally = tally();
        let consensus = Consensus::default();
        let ip: Listed = "8.8.8.8".parse().unwrap();
        // One license four times is one reporter.
        let many = vec![report("8.8.8.8", "ssh", NOW, 1); 4];
        assert_eq!(count(&tally, "lic_a", &many), vec![]);
        assert_eq!(
            count(&tally, "lic_b", &[report("8.8.8.8", "web", NOW, 2)]),
            vec![]
        );
        // A report older than the window does not count.
        let old = NOW.minus(consensus.window + 1);
        assert_eq!(
            count(&tally, "lic_c", &[report("8.8.8.8", "scan", old, 3)]),
            vec![]
        );
        // A fourth license from a network already heard: four licenses, three networks.
        assert_eq!(
            count(&tally, "lic_d", &[report("8.8.8.8", "scan", NOW, 2)]),
            vec![]
        );
        assert_eq!(
            count(&tally, "lic_e", &[report("8.8.8.8", "spam", NOW, 3)]),
            vec![]
        );
        let seen = tally.of(ip, consensus, NOW, 10).unwrap();
        assert_eq!(
            (seen.licenses, seen.networks),
            (4, 3),
            "a license counts once however many reports it sent"
        );
        // A license that moves to a network of its own counts with it.
        assert_eq!(
            count(&tally, "lic_d", &[report("8.8.8.8", "scan", NOW, 4)]),
            vec![ip],
            "a license counts with the network of its latest report"
        );
        assert_eq!(
            count(&tally, "lic_f", &[report("8.8.8.8", "ssh", NOW, 5)]),
            vec![],
            "reached once"
        );
        let seen = tally.of(ip, consensus, NOW, 10).unwrap();
        assert_eq!((seen.licenses, seen.networks), (5, 5));
        assert_eq!(seen.needed, (4, 4));
        assert_eq!(
            seen.reporters.len(),
            5,
            "the report past every window is gone"
        );
        assert_eq!(seen.reached_at, Some(NOW));
        let a = seen
            .reporters
            .iter()
            .find(|r| r.license == "lic_a")
            .unwrap();
        assert_eq!(
            (
                a.count,
                a.categories,
                a.network.unwrap().to_string(),
                a.standing
            ),
            (
                4,
                Categories::parse("ssh").unwrap(),
                "10.0.1.0/24".to_owned(),
                Standing::Counting
            )
        );
        // An older report never moves a license back to the network it came from.
        count(
            &tally,
            "lic_d",
            &[report("8.8.8.8", "scan", NOW.minus(5), 2)],
        );
        let d = tally.of(ip, consensus, NOW, 10).unwrap();
        let d = d.reporters.iter().find(|r| r.license == "lic_d").unwrap();
        assert_eq!(d.network.unwrap().to_string(), "10.0.4.0/24");
    }

    #[test]
    fn four_licenses_from_one_network_never_reach_it() {
        let tally = tally();
        for license in ["a", "b", "c", "d", "e", "f"] {
            assert_eq!(
                count(&tally, license, &[report("9.9.9.9", "ssh", NOW, 7)]),
                vec![],
                "licenses of one network count as one network: never a consensus"
            );
        }
        let seen = tally
            .of("9.9.9.9".parse().unwrap(), Consensus::default(), NOW, 10)
            .unwrap();
        assert_eq!(
            (seen.licenses, seen.networks, seen.reached_at),
            (6, 1, None),
            "licenses of one network count as one network in the lookup"
        );
    }

    #[test]
    fn a_report_that_adds_no_voice_reads_one_row_and_weighs_nothing() {
        let tally = tally();
        for (n, license) in ["a", "b", "c"].iter().enumerate() {
            count(&tally, license, &[report("9.9.9.9", "ssh", NOW, n as u8)]);
        }
        let weighed = std::cell::Cell::new(0);
        let counting = Tally::new(Counting {
            sql: &tally.sql,
            weighed: &weighed,
        });
        let consensus = Consensus::default();
        let again = [report("9.9.9.9", "ssh", NOW, 0)];
        counting
            .count(("a", ISSUED), &again, consensus, NOW)
            .unwrap();
        assert_eq!(weighed.get(), 0, "the same license from the same network");
        let moved = [report("9.9.9.9", "ssh", NOW, 9)];
        counting
            .count(("a", ISSUED), &moved, consensus, NOW)
            .unwrap();
        assert_eq!(weighed.get(), 1, "another network is another voice");
    }

    #[test]
    fn a_new_voice_is_weighed_by_index_however_many_votes_one_network_has() {
        let tally = tally();
        let consensus = Consensus::default();
        // A thousand licenses from one /24: a new voice reads four of their votes
        // for the licenses, and one seek a network for the networks.
        for n in 0..1_000 {
            let license = format!("lic_{n}");
            tally
                .count(
                    (&license, ISSUED),
                    &[report("9.9.9.9", "ssh", NOW, 7)],
                    consensus,
                    NOW,
                )
                .unwrap();
        }
        let args = [
            Value::listed("9.9.9.9".parse().unwrap()),
            Value::int(0),
            Value::int(0),
            Value::int(NOW.0),
            Value::text(""),
        ];
        for networks in [NEXT_NETWORK, NETWORKS_OF_THEIR_OWN] {
            let plan = tally.sql.plan(networks, &args);
            assert!(
                plan.contains("INDEX reports_by_network (ip=? AND network"),
                "the networks are counted by reports_by_network, one range a network: {plan}"
            );
        }
        let plan = tally.sql.plan(LICENSES_COUNTING, &args);
        assert!(plan.contains("PRIMARY KEY"), "{plan}");
        let seeks = std::cell::Cell::new(0);
        let counting = Tally::new(Counting {
            sql: &tally.sql,
            weighed: &seeks,
        });
        let new = [report("9.9.9.9", "ssh", NOW, 8)];
        assert_eq!(
            counting
                .count(("lic_new", ISSUED), &new, consensus, NOW)
                .unwrap(),
            vec![]
        );
        assert_eq!(seeks.get(), 1, "weighed once");
        let seen = tally
            .of("9.9.9.9".parse().unwrap(), consensus, NOW, 10)
            .unwrap();
        assert_eq!((seen.licenses, seen.networks), (1_001, 2));
    }

    /// A database that counts the times an address's votes are weighed.
    struct Counting<'a> {
        sql: &'a NativeSql,
        weighed: &'a std::cell::Cell<u32>,
    }

    impl Sql for Counting<'_> {
        fn query(&self, statement: &str, args: &[Value]) -> Result<Vec<Row>, SqlError> {
            if statement == LICENSES_COUNTING {
                self.weighed.set(self.weighed.get() + 1);
            }
            self.sql.query(statement, args)
        }

        fn execute(&self, statement: &str, args: &[Value]) -> Result<usize, SqlError> {
            self.sql.execute(statement, args)
        }

        fn script(&self, statements: &str) -> Result<(), SqlError> {
            self.sql.script(statements)
        }
    }

    /// Licenses `a` to `d` report `ip` at `at`, each from a network of its own;
    /// answers what the last report's count reached.
    fn four_report(
        tally: &Tally<NativeSql>,
        ip: &str,
        consensus: Consensus,
        at: UnixTime,
    ) -> Vec<Listed> {
        let mut reached = Vec::new();
        for (n, license) in ["a", "b", "c", "d"].iter().enumerate() {
            let reports = [report(ip, "ssh", at, n as u8)];
            reached = tally
                .count((license, ISSUED), &reports, consensus, at)
                .unwrap();
        }
        reached
    }

    /// Four licenses from four networks promote 8.8.4.4 at `NOW`.
    fn promoted(tally: &Tally<NativeSql>, consensus: Consensus) -> Listed {
        let ip: Listed = "8.8.4.4".parse().unwrap();
        assert_eq!(four_report(tally, "8.8.4.4", consensus, NOW), vec![ip]);
        assert_eq!(tally.pending(10).unwrap(), vec![(ip, true)]);
        tally.sent(&[(ip, true)]).unwrap();
        ip
    }

    #[test]
    fn a_promotion_lasts_while_its_reports_make_it_and_one_license_never_keeps_it() {
        let tally = tally();
        let consensus = Consensus::default();
        let ip = promoted(&tally, consensus);
        let keep = consensus.keeps_for();
        assert_eq!(tally.next_due(NOW).unwrap(), Some(NOW.plus(keep)));
        // One license reports every day: the others' reports still age out.
        for day in 1..=7 {
            let at = NOW.plus(day * 86_400);
            tally
                .count(
                    ("a", ISSUED),
                    &[report("8.8.4.4", "ssh", at, 0)],
                    consensus,
                    at,
                )
                .unwrap();
        }
        assert_eq!(tally.recheck(consensus, NOW.plus(keep - 1), 10).unwrap(), 0);
        assert_eq!(tally.recheck(consensus, NOW.plus(keep), 10).unwrap(), 1);
        assert_eq!(
            tally.pending(10).unwrap(),
            vec![(ip, false)],
            "one license alone does not keep it"
        );
        assert_eq!(
            tally.next_due(NOW).unwrap(),
            Some(NOW),
            "the operator lists' object is to be told"
        );
        tally.sent(&[(ip, false)]).unwrap();
        assert_eq!(tally.next_due(NOW).unwrap(), None);
    }

    #[test]
    fn reports_that_still_make_it_move_its_recheck_later() {
        let tally = tally();
        let consensus = Consensus::default();
        let ip = promoted(&tally, consensus);
        let later = NOW.plus(86_400);
        four_report(&tally, "8.8.4.4", consensus, later);
        let keep = consensus.keeps_for();
        assert_eq!(
            tally.recheck(consensus, NOW.plus(keep), 10).unwrap(),
            1,
            "a promotion is weighed again once its keep is over"
        );
        assert_eq!(tally.pending(10).unwrap(), vec![], "still made");
        assert_eq!(
            tally.next_due(NOW).unwrap(),
            Some(later.plus(keep)),
            "reports that still make it move the recheck to a keep after them"
        );
        tally.recheck(consensus, later.plus(keep), 10).unwrap();
        assert_eq!(
            tally.pending(10).unwrap(),
            vec![(ip, false)],
            "a promotion decays a keep after the reports that make it"
        );
    }

    #[test]
    fn revoking_or_suspending_a_promoting_license_takes_the_promotion_down_and_reinstating_brings_it_back(
    ) {
        let tally = tally();
        let consensus = Consensus::default();
        let ip = promoted(&tally, consensus);
        assert!(tally.set_standing("b", true, NOW).unwrap());
        assert!(
            !tally.set_standing("b", true, NOW).unwrap(),
            "suspended once"
        );
        assert_eq!(tally.next_due(NOW).unwrap(), Some(NOW), "weighed at once");
        tally.recheck(consensus, NOW, 10).unwrap();
        assert_eq!(
            tally.pending(10).unwrap(),
            vec![(ip, false)],
            "a suspended license's reports count for nothing: its promotion is let go"
        );
        tally.sent(&[(ip, false)]).unwrap();
        let seen = tally.of(ip, consensus, NOW, 10).unwrap();
        let b = seen.reporters.iter().find(|r| r.license == "b").unwrap();
        assert_eq!(
            (b.standing, seen.licenses, seen.reached_at),
            (Standing::Suspended, 3, None)
        );
        // A suspended license's new reports are kept, and count for nothing.
        let reached = tally
            .count(
                ("b", ISSUED),
                &[report("8.8.4.4", "web", NOW, 1)],
                consensus,
                NOW,
            )
            .unwrap();
        assert_eq!(reached, vec![]);
        // Reinstated: its reports count again, and promote.
        assert!(tally.set_standing("b", false, NOW.plus(1)).unwrap());
        tally.recheck(consensus, NOW.plus(1), 10).unwrap();
        assert_eq!(tally.pending(10).unwrap(), vec![(ip, true)]);
        tally.sent(&[(ip, true)]).unwrap();
        // Revoked: its reports are gone, and the promotion with them.
        tally.forget("c", NOW.plus(2)).unwrap();
        tally.recheck(consensus, NOW.plus(2), 10).unwrap();
        assert_eq!(
            tally.pending(10).unwrap(),
            vec![(ip, false)],
            "a revoked license's promotion is weighed again at once and let go"
        );
        let seen = tally.of(ip, consensus, NOW.plus(2), 10).unwrap();
        assert!(
            seen.reporters.iter().all(|r| r.license != "c"),
            "a revoked license's reports are gone from the tally"
        );
        assert_eq!(
            tally
                .count(
                    ("c", ISSUED),
                    &[report("8.8.4.4", "ssh", NOW.plus(3), 2)],
                    consensus,
                    NOW.plus(3)
                )
                .unwrap(),
            vec![],
            "a revoked license's later reports are dropped"
        );
        assert!(!tally.set_standing("c", true, NOW.plus(3)).unwrap());
    }

    #[test]
    fn a_license_on_probation_counts_once_it_is_old_enough() {
        let tally = tally();
        let consensus = Consensus {
            probation: 3_600,
            ..Consensus::default()
        };
        let ip: Listed = "8.8.4.4".parse().unwrap();
        for (n, license) in ["a", "b", "c"].iter().enumerate() {
            tally
                .count(
                    (license, ISSUED),
                    &[report("8.8.4.4", "ssh", NOW, n as u8)],
                    consensus,
                    NOW,
                )
                .unwrap();
        }
        let young = NOW.minus(600);
        let reached = tally
            .count(
                ("d", young),
                &[report("8.8.4.4", "ssh", NOW, 3)],
                consensus,
                NOW,
            )
            .unwrap();
        assert_eq!(reached, vec![], "on probation");
        let seen = tally.of(ip, consensus, NOW, 10).unwrap();
        let d = seen.reporters.iter().find(|r| r.license == "d").unwrap();
        assert_eq!(
            (d.standing, seen.licenses),
            (Standing::Probation, 3),
            "a license on probation counts for nothing yet"
        );
        let of_age = young.plus(3_600);
        assert_eq!(tally.next_due(NOW).unwrap(), Some(of_age));
        tally.recheck(consensus, of_age, 10).unwrap();
        assert_eq!(tally.pending(10).unwrap(), vec![(ip, true)]);
    }

    #[test]
    fn licenses_coming_of_age_one_after_another_are_weighed_each_time() {
        let tally = tally();
        let consensus = Consensus {
            probation: 3_600,
            ..Consensus::default()
        };
        let ip: Listed = "8.8.4.4".parse().unwrap();
        for (n, license) in ["a", "b"].iter().enumerate() {
            tally
                .count(
                    (license, ISSUED),
                    &[report("8.8.4.4", "ssh", NOW, n as u8)],
                    consensus,
                    NOW,
                )
                .unwrap();
        }
        // Two young licenses, of age in 600 and in 1 200 seconds: both are needed.
        let (first, second) = (NOW.minus(3_000), NOW.minus(2_400));
        tally
            .count(
                ("c", first),
                &[report("8.8.4.4", "ssh", NOW, 2)],
                consensus,
                NOW,
            )
            .unwrap();
        tally
            .count(
                ("d", second),
                &[report("8.8.4.4", "ssh", NOW, 3)],
                consensus,
                NOW,
            )
            .unwrap();
        assert_eq!(tally.next_due(NOW).unwrap(), Some(first.plus(3_600)));
        tally.recheck(consensus, first.plus(3_600), 10).unwrap();
        assert_eq!(tally.pending(10).unwrap(), vec![], "three count: not yet");
        assert_eq!(
            tally.next_due(NOW).unwrap(),
            Some(second.plus(3_600)),
            "weighed again when the next comes of age"
        );
        tally.recheck(consensus, second.plus(3_600), 10).unwrap();
        assert_eq!(tally.pending(10).unwrap(), vec![(ip, true)]);
    }

    #[test]
    fn a_planted_vote_never_counts_and_a_holder_is_told_of_it_as_of_any() {
        let tally = tally();
        let consensus = Consensus::default();
        let ip: Listed = "8.8.4.4".parse().unwrap();
        for (n, license) in ["a", "b", "c"].iter().enumerate() {
            tally
                .count(
                    (license, ISSUED),
                    &[report("8.8.4.4", "ssh", NOW, n as u8)],
                    consensus,
                    NOW,
                )
                .unwrap();
        }
        let planted = Outgoing {
            canary: true,
            ..report("8.8.4.4", "ssh", NOW, 3)
        };
        assert_eq!(
            tally
                .count(("d", ISSUED), &[planted], consensus, NOW)
                .unwrap(),
            vec![],
            "a fourth license's planted vote"
        );
        let seen = tally.of(ip, consensus, NOW, 10).unwrap();
        assert_eq!((seen.licenses, seen.reported_by), (3, 4));
        let d = seen.reporters.iter().find(|r| r.license == "d").unwrap();
        assert!(d.planted && !seen.reporters.iter().any(|r| r.license == "a" && r.planted));
        // Its later reports of the address stay planted.
        let again = [report("8.8.4.4", "ssh", NOW.plus(1), 3)];
        tally
            .count(("d", ISSUED), &again, consensus, NOW.plus(1))
            .unwrap();
        assert_eq!(
            tally.of(ip, consensus, NOW.plus(1), 10).unwrap().licenses,
            3,
            "a planted vote stays planted whatever the license reports later"
        );
        // Suspended licenses are reported_by too: a holder learns no standing.
        tally.set_standing("a", true, NOW.plus(1)).unwrap();
        let seen = tally.of(ip, consensus, NOW.plus(1), 10).unwrap();
        assert_eq!((seen.licenses, seen.reported_by), (2, 4));
    }

    #[test]
    fn a_dismissed_promotion_needs_new_reports() {
        let tally = tally();
        let consensus = Consensus::default();
        let ip = promoted(&tally, consensus);
        tally.dismiss(ip, NOW).unwrap();
        assert_eq!(tally.next_due(NOW).unwrap(), None);
        assert_eq!(tally.of(ip, consensus, NOW, 10).unwrap().licenses, 0);
        assert_eq!(
            four_report(&tally, "8.8.4.4", consensus, NOW.plus(1)),
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
        for (n, license) in ["a", "b", "c", "d", "e"].iter().enumerate() {
            assert_eq!(
                tally
                    .count(
                        (license, ISSUED),
                        &[report("1.1.1.1", "", NOW, n as u8)],
                        off,
                        NOW
                    )
                    .unwrap(),
                vec![]
            );
        }
    }

    /// A report row as the schema before networks kept it.
    fn old_report(sql: &NativeSql, ip: &str, license: &str, at: UnixTime) {
        sql.execute(
            "INSERT INTO reports (ip, license, first_at, last_at, count, categories)
             VALUES (?1, ?2, ?3, ?3, 1, 1)",
            &[
                Value::listed(ip.parse().unwrap()),
                Value::text(license),
                Value::int(at.0),
            ],
        )
        .unwrap();
    }

    #[test]
    fn a_shard_from_before_the_license_index_forgets_by_it_and_keeps_the_others_reports() {
        // The schema as the first two steps left it, with reports of two licenses.
        let sql = NativeSql::new();
        crate::store::sql::migrate(&sql, &MIGRATIONS[..2]).unwrap();
        for license in ["lic_a", "lic_b"] {
            for ip in ["8.8.4.4", "9.9.9.9"] {
                old_report(&sql, ip, license, NOW);
            }
        }
        let tally = Tally::new(sql);
        tally.migrate().unwrap();
        let plan = tally.sql.plan(FORGET_REPORTS, &[Value::text("lic_a")]);
        assert!(
            plan.contains("INDEX reports_by_license"),
            "a revoked license's reports are found by reports_by_license, not by a scan: {plan}"
        );
        tally.forget("lic_a", NOW).unwrap();
        for ip in ["8.8.4.4", "9.9.9.9"] {
            let seen = tally
                .of(ip.parse().unwrap(), Consensus::default(), NOW, 10)
                .unwrap();
            let licenses: Vec<_> = seen.reporters.iter().map(|r| r.license.as_str()).collect();
            assert_eq!(licenses, ["lic_b"], "{ip}");
        }
    }

    #[test]
    fn a_shard_from_before_networks_keeps_its_promotions_while_their_reports_make_them() {
        // The schema as the third step left it: four licenses' reports of one address
        // (no networks) and its consensus, and three licenses' of another.
        let sql = NativeSql::new();
        crate::store::sql::migrate(&sql, &MIGRATIONS[..3]).unwrap();
        let old = |ip: &str, license: &str, at: UnixTime| old_report(&sql, ip, license, at);
        for license in ["a", "b", "c", "d"] {
            old("8.8.4.4", license, NOW.minus(86_400));
        }
        for license in ["a", "b", "c"] {
            old("9.9.9.9", license, NOW);
        }
        sql.execute(
            "INSERT INTO consensus (ip, reached_at, last_report_at) VALUES (?1, ?2, ?2)",
            &[
                Value::listed("8.8.4.4".parse().unwrap()),
                Value::int(NOW.minus(86_400).0),
            ],
        )
        .unwrap();
        let tally = Tally::new(sql);
        tally.migrate().unwrap();
        let consensus = Consensus::default();
        // Weighed at once: the four old reports, each a network of its own, still make it.
        assert_eq!(
            tally.next_due(NOW).unwrap(),
            Some(UnixTime(0)),
            "a shard upgraded from before networks weighs its standing promotions at once"
        );
        tally.recheck(consensus, NOW, 10).unwrap();
        assert_eq!(
            tally.pending(10).unwrap(),
            vec![],
            "nothing let go at the upgrade"
        );
        let keep = consensus.keeps_for();
        assert_eq!(
            tally.next_due(NOW).unwrap(),
            Some(NOW.minus(86_400).plus(keep))
        );
        let seen = tally
            .of("8.8.4.4".parse().unwrap(), consensus, NOW, 10)
            .unwrap();
        assert_eq!((seen.licenses, seen.networks), (4, 4));
        assert!(seen.reporters.iter().all(|r| r.network.is_none()));
        // A new license's report from a network of its own joins three old ones.
        let ip: Listed = "9.9.9.9".parse().unwrap();
        let reached = tally
            .count(
                ("e", ISSUED),
                &[report("9.9.9.9", "ssh", NOW, 1)],
                consensus,
                NOW,
            )
            .unwrap();
        assert_eq!(reached, vec![ip]);
        // And from the upgrade on, a promotion lasts only while its reports make it.
        tally
            .recheck(consensus, NOW.minus(86_400).plus(keep), 10)
            .unwrap();
        assert!(tally
            .pending(10)
            .unwrap()
            .contains(&("8.8.4.4".parse().unwrap(), false)));
    }

    mod agreement {
        use crate::domain::network::reporter::ReporterNetwork;
        use proptest::prelude::*;

        use super::*;

        /// A vote to store: its network (none, or one of three), its age, its
        /// license's age, whether it is suspended and whether planted.
        fn votes() -> impl Strategy<Value = Vec<(Option<u8>, u64, u64, bool, bool)>> {
            let vote = (
                proptest::option::of(0u8..3),
                0u64..200,
                0u64..200,
                proptest::bool::weighted(0.2),
                proptest::bool::weighted(0.1),
            );
            proptest::collection::vec(vote, 0..10)
        }

        proptest! {
            #[test]
            fn the_count_by_index_answers_as_the_rule_over_every_vote(
                votes in votes(),
                holders in 0u32..5,
                networks in 1u32..5,
            ) {
                let consensus = Consensus {
                    holders,
                    networks: networks.min(holders.max(1)),
                    window: 100,
                    delist_after: 100,
                    probation: 50,
                    ..Consensus::default()
                };
                let tally = tally();
                let ip: Listed = "9.9.9.9".parse().unwrap();
                for (n, &(network, age, licensed, suspended, planted)) in votes.iter().enumerate() {
                    let license = format!("lic_{n}");
                    let outgoing = Outgoing {
                        network: network.map(|n| {
                            ReporterNetwork::of_client(Some(&format!("10.0.{n}.1")))
                        }),
                        ..report("9.9.9.9", "ssh", NOW.minus(age), 0)
                    };
                    tally.sql.execute(
                        "INSERT INTO reports (ip, license, first_at, last_at, count, categories,
                            network, licensed_at, planted)
                         VALUES (?1, ?2, ?3, ?3, 1, 0, ?4, ?5, ?6)",
                        &[
                            Value::listed(ip),
                            Value::text(&license),
                            Value::int(outgoing.at.0),
                            Value::opt_text(outgoing.network.map(|n| n.to_string()).as_deref()),
                            Value::int(NOW.minus(licensed).0),
                            Value::int(u64::from(planted)),
                        ],
                    ).unwrap();
                    if suspended {
                        tally.set_standing(&license, true, NOW).unwrap();
                    }
                }
                let by_index = tally.reaches(ip, consensus, NOW).unwrap();
                let by_rule = consensus.reached(tally.votes(ip), NOW).unwrap();
                prop_assert_eq!(by_index, by_rule, "counted by index, the consensus strays from the rule weighing every vote");
                // And the lookup's counts, in one pass, as the rule counts them.
                let seen = tally.of(ip, consensus, NOW, 0).unwrap();
                let voices = consensus.voices(tally.votes(ip), NOW).unwrap();
                prop_assert_eq!((seen.licenses, seen.networks), (voices.licenses(), voices.networks()), "counted in one pass, the lookup strays from the rule weighing every vote");
            }
        }
    }
}
