//! How a shard counts an address's votes: the rule of `Consensus` as SQL, read
//! by index and no further than the answer needs (at most what the consensus
//! needs of licenses, one seek a network), and the votes newest first a page at
//! a time, for what the rule must weigh whole (how long a promotion is kept,
//! when a license on probation comes of age).

use crate::domain::net::address::Listed;
use crate::domain::network::consensus::{Consensus, Voices, Vote};
use crate::domain::time::UnixTime;
use crate::store::report_shard::tally::Tally;
use crate::store::sql::{Sql, SqlError, Value};

/// A vote that counts towards reaching the consensus at `?4`, as SQL: within
/// the window (from `?2`), not planted, its license past probation (`?3`
/// seconds after its issue) and not suspended. `Consensus::admits` with the
/// window, for the reads that count by index; a proptest holds the two to the
/// same answers.
macro_rules! admitted {
    () => {
        "r.last_at >= ?2 AND r.planted = 0 AND r.licensed_at + ?3 <= ?4
         AND NOT EXISTS (SELECT 1 FROM suspended s WHERE s.license = r.license)"
    };
}

/// The licenses and networks whose votes of `?1` count, in one pass: what the
/// operator's lookup shows, with every vote read once.
pub(super) const VOICES: &str = concat!(
    "SELECT count(*), count(DISTINCT r.network), coalesce(sum(r.network IS NULL), 0)
     FROM reports r WHERE r.ip = ?1 AND ",
    admitted!()
);

/// The licenses whose votes of `?1` count, at most `?5` of them: a range of the
/// primary key, read until enough are found.
pub(super) const LICENSES_COUNTING: &str = concat!(
    "SELECT count(*) FROM (SELECT 1 FROM reports r WHERE r.ip = ?1 AND ",
    admitted!(),
    " LIMIT ?5)"
);

/// The votes of `?1` that count from before networks were kept, each a network
/// of its own, at most `?5` of them: the index's first range, never the others'.
pub(super) const NETWORKS_OF_THEIR_OWN: &str = concat!(
    "SELECT count(*) FROM (SELECT 1 FROM reports r INDEXED BY reports_by_network
     WHERE r.ip = ?1 AND r.network IS NULL AND ",
    admitted!(),
    " LIMIT ?5)"
);

/// The first network after `?5` with a vote of `?1` that counts: one seek of
/// `reports_by_network` a network, so that a thousand licenses of one network
/// cost what one does.
pub(super) const NEXT_NETWORK: &str = concat!(
    "SELECT r.network FROM reports r INDEXED BY reports_by_network
     WHERE r.ip = ?1 AND r.network > ?5 AND ",
    admitted!(),
    " ORDER BY r.network LIMIT 1"
);

/// An address's votes, newest first, a page after the vote `(?2, ?3)`: what a
/// promotion's recheck reads, never a report. No index orders them (it would be
/// written at every report): a page reads the address's rows once.
pub(super) const VOTES_PAGE: &str =
    "SELECT r.network, r.last_at, r.licensed_at, s.license IS NOT NULL, r.planted, r.license
     FROM reports r LEFT JOIN suspended s ON s.license = r.license
     WHERE r.ip = ?1 AND (r.last_at, r.license) < (?2, ?3)
     ORDER BY r.last_at DESC, r.license DESC LIMIT ?4";

/// Votes one page of `VOTES_PAGE` reads: each page reads every row of the
/// address, so a page is large; most answers need the first few votes.
pub(super) const VOTES_PER_PAGE: u64 = 1_000;

/// Sorts after every text, as a page's cursor from the newest vote on.
const AFTER_EVERY_LICENSE: &str = "\u{10FFFF}";

impl<S: Sql> Tally<S> {
    /// An address's votes, newest first, read a page at a time as they are asked for.
    pub(super) fn votes(&self, ip: Listed) -> impl Iterator<Item = Result<Vote, SqlError>> + '_ {
        let mut page: std::vec::IntoIter<Vote> = Vec::new().into_iter();
        let mut after = Some((u64::MAX >> 11, AFTER_EVERY_LICENSE.to_owned()));
        std::iter::from_fn(move || loop {
            if let Some(vote) = page.next() {
                return Some(Ok(vote));
            }
            let (last_at, license) = after.take()?;
            let rows = match self.sql.query(
                VOTES_PAGE,
                &[
                    Value::listed(ip),
                    Value::int(last_at),
                    Value::text(license),
                    Value::int(VOTES_PER_PAGE),
                ],
            ) {
                Ok(rows) => rows,
                Err(error) => return Some(Err(error)),
            };
            let read = rows
                .iter()
                .map(|row| {
                    let vote = Vote {
                        network: row.opt_parsed(0)?,
                        last_at: UnixTime(row.int(1)?),
                        licensed_at: UnixTime(row.int(2)?),
                        suspended: row.int(3)? == 1,
                        planted: row.int(4)? == 1,
                    };
                    Ok((vote, row.text(5)?))
                })
                .collect::<Result<Vec<_>, SqlError>>();
            let read = match read {
                Ok(read) => read,
                Err(error) => return Some(Err(error)),
            };
            if read.len() as u64 == VOTES_PER_PAGE {
                after = read
                    .last()
                    .map(|(vote, license)| (vote.last_at.0, license.clone()));
            }
            page = read
                .into_iter()
                .map(|(vote, _)| vote)
                .collect::<Vec<_>>()
                .into_iter();
        })
    }
    /// Weighs an address with no consensus: when its votes make one now, it is
    /// recorded, the operator lists' object is to be told, and it is weighed again when its
    /// reports would stop making it.
    pub(super) fn reach(
        &self,
        ip: Listed,
        consensus: Consensus,
        now: UnixTime,
    ) -> Result<bool, SqlError> {
        if !self.reaches(ip, consensus, now)? {
            return Ok(false);
        }
        self.sql.execute(
            "INSERT INTO consensus (ip, reached_at, last_report_at) VALUES (?1, ?2, ?2)",
            &[Value::listed(ip), Value::int(now.0)],
        )?;
        self.sql.execute(
            "INSERT OR REPLACE INTO pending (ip, promote) VALUES (?1, 1)",
            &[Value::listed(ip)],
        )?;
        if let Some(until) = consensus.kept_until(self.votes(ip), now)? {
            self.recheck_at(ip, until)?;
        }
        Ok(true)
    }
    /// Whether the votes of `ip` make the consensus at `now`, as
    /// `Consensus::reached` says, read by index and no further than the answer
    /// needs: at most `holders` votes for the licenses, then one seek a network
    /// for at most `networks` networks, whatever the address's other reports.
    pub(super) fn reaches(
        &self,
        ip: Listed,
        consensus: Consensus,
        now: UnixTime,
    ) -> Result<bool, SqlError> {
        let (licenses_needed, networks_needed) = consensus.needs();
        if licenses_needed == 0 {
            return Ok(false);
        }
        let args = |last: Value| {
            [
                Value::listed(ip),
                Value::int(consensus.window_start(now).0),
                Value::int(consensus.probation),
                Value::int(now.0),
                last,
            ]
        };
        let count = |statement: &str, most: u64| -> Result<u64, SqlError> {
            self.sql
                .query(statement, &args(Value::int(most)))?
                .first()
                .map_or(Ok(0), |row| row.int(0))
        };
        let licenses = count(LICENSES_COUNTING, licenses_needed)?;
        let mut networks = 0;
        if licenses >= licenses_needed {
            networks = count(NETWORKS_OF_THEIR_OWN, networks_needed)?;
            let mut after = String::new();
            while networks < networks_needed {
                let rows = self.sql.query(NEXT_NETWORK, &args(Value::text(after)))?;
                let Some(row) = rows.first() else { break };
                after = row.text(0)?;
                networks += 1;
            }
        }
        Ok(consensus.is_met(&Voices::counted(licenses, networks)))
    }
    /// Weighs `ip` again when the first of its votes on probation comes of age
    /// (within the window), if one is to: a recheck keeps one time an address,
    /// so the next is set each time one passes.
    pub(super) fn await_coming_of_age(
        &self,
        ip: Listed,
        consensus: Consensus,
        now: UnixTime,
    ) -> Result<(), SqlError> {
        if let Some(at) = consensus.next_coming_of_age(self.votes(ip), now)? {
            self.recheck_at(ip, at)?;
        }
        Ok(())
    }
}
