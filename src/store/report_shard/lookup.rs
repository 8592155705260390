//! What a shard shows the operator of one address: its reporters, most recent
//! first, the licenses and networks that count now, what the consensus needs,
//! and since when it holds.

use serde::{Deserialize, Serialize};

use crate::domain::net::address::Listed;
use crate::domain::network::consensus::Consensus;
use crate::domain::network::report::Categories;
use crate::domain::network::reporter::ReporterNetwork;
use crate::domain::network::standing::Standing;
use crate::domain::time::UnixTime;
use crate::store::report_shard::tally::Tally;
use crate::store::report_shard::votes::VOICES;
use crate::store::sql::{Sql, SqlError, Value};

/// One license's reports of an address, as the operator's lookup shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reporter {
    pub license: String,
    pub first_at: UnixTime,
    pub last_at: UnixTime,
    pub count: u64,
    pub categories: Categories,
    /// The network of its latest report; none for reports kept before networks were.
    #[serde(default)]
    pub network: Option<ReporterNetwork>,
    /// Whether its reports count now.
    pub standing: Standing,
    /// It named a canary: it never counts, whatever its license's standing.
    #[serde(default)]
    pub planted: bool,
}

/// What the shard knows of one address: its reporters, most recent first (at
/// most `limit`), the licenses and networks whose reports count towards the
/// consensus now, what the consensus needs, and since when it holds, if it does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddressTally {
    pub reporters: Vec<Reporter>,
    pub licenses: u64,
    pub networks: u64,
    /// Distinct licenses that reported it within the window, whether their
    /// reports count or not: what a holder is told, which says nothing of any
    /// license's standing nor of a canary.
    pub reported_by: u64,
    /// What the consensus needs: licenses, then networks.
    pub needed: (u32, u32),
    pub reached_at: Option<UnixTime>,
}

impl<S: Sql> Tally<S> {
    /// What the shard knows of `ip`, for the operator's lookup and, without its
    /// reporters, for a holder.
    pub fn of(
        &self,
        ip: Listed,
        consensus: Consensus,
        now: UnixTime,
        limit: u64,
    ) -> Result<AddressTally, SqlError> {
        let rows = self.sql.query(
            "SELECT r.license, r.first_at, r.last_at, r.count, r.categories, r.network,
                    r.licensed_at, s.license IS NOT NULL, r.planted
             FROM reports r LEFT JOIN suspended s ON s.license = r.license
             WHERE r.ip = ?1 ORDER BY r.last_at DESC, r.license LIMIT ?2",
            &[Value::listed(ip), Value::int(limit)],
        )?;
        let reporters = rows
            .iter()
            .map(|row| {
                let counts_from = consensus.counts_from(UnixTime(row.int(6)?));
                Ok(Reporter {
                    license: row.text(0)?,
                    first_at: UnixTime(row.int(1)?),
                    last_at: UnixTime(row.int(2)?),
                    count: row.int(3)?,
                    categories: Categories::from_bits(
                        u16::try_from(row.int(4)?).unwrap_or(u16::MAX),
                    ),
                    network: row.opt_parsed(5)?,
                    standing: Standing::at(row.int(7)? == 1, counts_from, now),
                    planted: row.int(8)? == 1,
                })
            })
            .collect::<Result<Vec<_>, SqlError>>()?;
        let reached = self.sql.query(
            "SELECT reached_at FROM consensus WHERE ip = ?1",
            &[Value::listed(ip)],
        )?;
        let window_start = Value::int(consensus.window_start(now).0);
        let voices = self.sql.query(
            VOICES,
            &[
                Value::listed(ip),
                window_start.clone(),
                Value::int(consensus.probation),
                Value::int(now.0),
            ],
        )?;
        let (licenses, networks) = match voices.first() {
            Some(row) => (row.int(0)?, row.int(1)? + row.int(2)?),
            None => (0, 0),
        };
        let reported_by = self
            .sql
            .query(
                "SELECT count(*) FROM reports WHERE ip = ?1 AND last_at >= ?2",
                &[Value::listed(ip), window_start],
            )?
            .first()
            .map_or(Ok(0), |row| row.int(0))?;
        Ok(AddressTally {
            reporters,
            licenses,
            networks,
            reported_by,
            needed: (consensus.holders, consensus.networks),
            reached_at: reached
                .first()
                .map(|row| row.int(0).map(UnixTime))
                .transpose()?,
        })
    }
}
