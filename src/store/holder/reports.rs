//! What a holder's object keeps for the report shards until its alarm tells
//! them: the reports, each with the network it came from; the license the object
//! is of, which it names them by, with when it was issued; and the license's
//! standing in the network, with whether every shard was told its last change.

use crate::domain::access::audit::{Action, Forwarded, Record, Stamp};
use crate::domain::access::license::LicenseId;
use crate::domain::network::report::{Categories, Outgoing, ReportStore};
use crate::domain::network::standing::Kept;
use crate::domain::time::UnixTime;
use crate::store::holder::list::HolderTables;
use crate::store::holder::rows::ip_of;
use crate::store::sql::{Sql, SqlError, Value};

impl<S: Sql> ReportStore for HolderTables<S> {
    fn keep_report(&mut self, report: &Outgoing) -> Result<(), SqlError> {
        let network = report.network.map(|network| network.to_string());
        self.sql().execute(
            "INSERT INTO reports_out (ip, categories, at, network, canary)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            &[
                Value::Blob(report.subject.key().as_bytes().to_vec()),
                Value::int(u64::from(report.categories.bits())),
                Value::int(report.at.0),
                Value::opt_text(network.as_deref()),
                Value::int(u64::from(report.canary)),
            ],
        )?;
        Ok(())
    }
}

/// The license's standing in the network, the number of its last change, and
/// the number of the last change every shard was told.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StandingKept {
    pub standing: Kept,
    pub version: u64,
    pub told: u64,
}

/// Who changes a standing's audit row names for a canary's report.
const BY_A_CANARY: &str = "a canary's report";

impl<S: Sql> HolderTables<S> {
    /// At most `limit` of the reports kept, oldest first, each with its row's
    /// number: what the alarm sends next.
    pub fn kept_reports(&self, limit: usize) -> Result<Vec<(u64, Outgoing)>, SqlError> {
        let rows = self.sql().query(
            "SELECT id, ip, categories, at, network, canary FROM reports_out ORDER BY id LIMIT ?1",
            &[Value::int(limit as u64)],
        )?;
        let mut kept = Vec::with_capacity(rows.len());
        for row in &rows {
            let id = row.int(0)?;
            // An address no longer public (the rules changed since) is not sent.
            let Some(subject) = ip_of(row.blob(1)?) else {
                continue;
            };
            let bits = u16::try_from(row.int(2)?).unwrap_or(u16::MAX);
            kept.push((
                id,
                Outgoing {
                    subject,
                    categories: Categories::from_bits(bits),
                    at: UnixTime(row.int(3)?),
                    network: row.opt_parsed(4)?,
                    canary: row.int(5)? == 1,
                },
            ));
        }
        Ok(kept)
    }

    /// Forgets the reports kept up to row `last`, once they are sent.
    pub fn forget_reports(&self, last: u64) -> Result<(), SqlError> {
        self.sql()
            .execute(
                "DELETE FROM reports_out WHERE id <= ?1",
                &[Value::int(last)],
            )
            .map(drop)
    }

    /// Whether reports wait to be sent.
    pub fn has_reports(&self) -> Result<bool, SqlError> {
        Ok(!self
            .sql()
            .query("SELECT 1 FROM reports_out LIMIT 1", &[])?
            .is_empty())
    }

    /// Records which license this object is of (the first time counts) and when
    /// it was issued (once a call says; 0 says nothing).
    pub fn know_license(&self, license: &LicenseId, licensed_at: UnixTime) -> Result<(), SqlError> {
        self.sql()
            .execute(
                "INSERT INTO identity (id, license, licensed_at) VALUES (0, ?1, ?2)
                 ON CONFLICT (id) DO UPDATE SET licensed_at = excluded.licensed_at
                    WHERE licensed_at = 0 AND excluded.licensed_at > 0",
                &[Value::text(license.as_str()), Value::int(licensed_at.0)],
            )
            .map(drop)
    }

    /// The license this object is of, once a call named it, and when it was issued.
    pub fn license(&self) -> Result<Option<(LicenseId, UnixTime)>, SqlError> {
        let rows = self.sql().query(
            "SELECT license, licensed_at FROM identity WHERE id = 0",
            &[],
        )?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let licensed_at = UnixTime(row.int(1)?);
        Ok(LicenseId::parse(&row.text(0)?).map(|license| (license, licensed_at)))
    }

    /// The license's standing in the network: counting, until something said otherwise.
    pub fn network_standing(&self) -> Result<StandingKept, SqlError> {
        let rows = self.sql().query(
            "SELECT suspended, since, canary, version, told FROM network_standing WHERE id = 0",
            &[],
        )?;
        let Some(row) = rows.first() else {
            return Ok(StandingKept::default());
        };
        Ok(StandingKept {
            standing: Kept {
                suspended: row.int(0)? == 1,
                since: row.opt_int(1)?.map(UnixTime),
                canary: row.opt_parsed(2)?,
            },
            version: row.int(3)?,
            told: row.int(4)?,
        })
    }

    /// Records a new standing, set by `by` (none for a canary's report), to be
    /// told to every shard, with its audit row to be sent the directory; answers
    /// whether it changed.
    pub fn change_network_standing(
        &self,
        standing: Kept,
        by: Option<&Stamp>,
    ) -> Result<bool, SqlError> {
        let kept = self.network_standing()?;
        if kept.standing == standing {
            return Ok(false);
        }
        let canary = standing.canary.map(|ip| ip.to_string());
        self.sql().execute(
            "INSERT INTO network_standing (id, suspended, since, canary, version, told)
             VALUES (0, ?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (id) DO UPDATE SET suspended = excluded.suspended,
                since = excluded.since, canary = excluded.canary, version = excluded.version",
            &[
                Value::int(u64::from(standing.suspended)),
                Value::opt_int(standing.since.map(|at| at.0)),
                Value::opt_text(canary.as_deref()),
                Value::int(kept.version + 1),
                Value::int(kept.told),
            ],
        )?;
        let by = by.cloned().unwrap_or_else(|| Stamp {
            actor: Some(BY_A_CANARY.to_owned()),
            ..Stamp::default()
        });
        self.sql().execute(
            "INSERT INTO network_audit (at, detail, actor, actor_key, client)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            &[
                Value::int(standing.since.map_or(0, |at| at.0.saturating_mul(1000))),
                Value::text(standing.described()),
                Value::opt_text(by.actor.as_deref()),
                Value::opt_text(by.key.as_deref()),
                Value::opt_text(by.client.as_deref()),
            ],
        )?;
        Ok(true)
    }

    /// The audit rows of the standing's changes the directory does not have yet,
    /// oldest first, at most `limit`, as `license`'s object sends them.
    pub fn network_audit(
        &self,
        license: &LicenseId,
        limit: usize,
    ) -> Result<Vec<Forwarded>, SqlError> {
        let rows = self.sql().query(
            "SELECT seq, at, detail, actor, actor_key, client FROM network_audit
             ORDER BY seq LIMIT ?1",
            &[Value::int(limit as u64)],
        )?;
        rows.iter()
            .map(|row| {
                Ok(Forwarded {
                    from: format!("holder {}", license.as_str()),
                    seq: row.int(0)?,
                    at: row.int(1)?,
                    record: Record {
                        action: Action::LicenseNetwork,
                        target: license.as_str().to_owned(),
                        detail: row.text(2)?,
                        by: Stamp {
                            actor: row.opt_text(3)?,
                            key: row.opt_text(4)?,
                            client: row.opt_text(5)?,
                        },
                    },
                })
            })
            .collect()
    }

    /// The directory has the audit rows up to `seq`.
    pub fn network_audit_sent(&self, seq: u64) -> Result<(), SqlError> {
        self.sql()
            .execute(
                "DELETE FROM network_audit WHERE seq <= ?1",
                &[Value::int(seq)],
            )
            .map(drop)
    }

    /// Every shard was told the standing's change numbered `version`.
    pub fn standing_told(&self, version: u64) -> Result<(), SqlError> {
        self.sql()
            .execute(
                "UPDATE network_standing SET told = max(told, ?1) WHERE id = 0",
                &[Value::int(version)],
            )
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::holder::list::{Limits, ListStore};
    use crate::domain::net::address::Listed;
    use crate::domain::network::report::{perform_report, ReportCall, ReportOutcome};
    use crate::domain::network::reporter::ReporterNetwork;
    use crate::store::holder::rule_tests::{sql_store, NOON};
    use crate::store::holder::schema::MIGRATIONS;
    use crate::store::sql::native::NativeSql;

    #[test]
    fn a_revocation_drops_the_reports_not_yet_sent() {
        let mut store = sql_store();
        let call = ReportCall::of("8.8.8.8", "ssh");
        let from = ReporterNetwork::of_client(Some("192.0.2.7"));
        perform_report(&mut store, &call, from, (NOON, Limits::default())).unwrap();
        assert!(store.has_reports().unwrap());
        store.revoke(NOON).unwrap();
        assert!(
            store.kept_reports(10).unwrap().is_empty() && !store.has_reports().unwrap(),
            "a revoked license's reports, kept and not yet sent, are still kept"
        );
    }

    #[test]
    fn reports_are_kept_in_order_with_their_network_until_sent_and_the_license_is_known_once() {
        let mut store = sql_store();
        let from = ReporterNetwork::of_client(Some("192.0.2.7"));
        for ip in ["8.8.8.8", "8.8.4.4", "1.1.1.1"] {
            let call = ReportCall::of(ip, "ssh,scan");
            let answer =
                perform_report(&mut store, &call, from, (NOON, Limits::default())).unwrap();
            assert_eq!(answer.outcome, ReportOutcome::Reported);
        }
        let first = store.kept_reports(2).unwrap();
        let subjects: Vec<String> = first.iter().map(|(_, r)| r.subject.to_string()).collect();
        assert_eq!(subjects, ["8.8.8.8", "8.8.4.4"]);
        assert_eq!(
            first[0].1.categories,
            Categories::parse("scan, ssh").unwrap()
        );
        assert_eq!(
            first[0].1.network,
            Some(from),
            "a kept report holds the network it came from"
        );
        store.forget_reports(first[1].0).unwrap();
        let rest = store.kept_reports(10).unwrap();
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].1.subject, "1.1.1.1".parse::<Listed>().unwrap());
        assert!(store.has_reports().unwrap());
        store.forget_reports(rest[0].0).unwrap();
        assert!(!store.has_reports().unwrap());
        assert_eq!(store.usage().unwrap().reported, 3);
        let license = LicenseId::parse("lic_0123456789abcdef01234567").unwrap();
        assert_eq!(store.license().unwrap(), None);
        store.know_license(&license, UnixTime(0)).unwrap();
        assert_eq!(
            store.license().unwrap(),
            Some((license.clone(), UnixTime(0)))
        );
        store
            .know_license(
                &LicenseId::parse("lic_aaaaaaaaaaaaaaaaaaaaaaaa").unwrap(),
                NOON,
            )
            .unwrap();
        assert_eq!(
            store.license().unwrap(),
            Some((license.clone(), NOON)),
            "the first license stays; its issue is learnt once a call says it"
        );
        store.know_license(&license, NOON.plus(5)).unwrap();
        assert_eq!(store.license().unwrap(), Some((license, NOON)));
    }

    #[test]
    fn a_standing_change_is_numbered_until_every_shard_was_told() {
        let store = sql_store();
        assert_eq!(store.network_standing().unwrap(), StandingKept::default());
        let canary = "45.67.89.9".parse().unwrap();
        let caught = Kept::default().caught(canary, NOON);
        assert!(store.change_network_standing(caught, None).unwrap());
        assert!(
            !store.change_network_standing(caught, None).unwrap(),
            "the same standing"
        );
        let kept = store.network_standing().unwrap();
        assert_eq!((kept.standing, kept.version, kept.told), (caught, 1, 0));
        let back = caught.set(false, NOON.plus(60));
        let operator = Stamp {
            actor: Some("deputy".to_owned()),
            key: Some("key_1".to_owned()),
            client: Some("192.0.2.1".to_owned()),
        };
        assert!(store
            .change_network_standing(back, Some(&operator))
            .unwrap());
        store.standing_told(1).unwrap();
        let kept = store.network_standing().unwrap();
        assert_eq!((kept.standing, kept.version, kept.told), (back, 2, 1));
        // Each change's audit row, in order, until the directory has it.
        let license = LicenseId::parse("lic_0123456789abcdef01234567").unwrap();
        let rows = store.network_audit(&license, 10).unwrap();
        let said: Vec<(&str, Option<&str>)> = rows
            .iter()
            .map(|row| (row.record.detail.as_str(), row.record.by.actor.as_deref()))
            .collect();
        assert_eq!(
            said,
            [
                (
                    "network: suspended, reported the canary 45.67.89.9",
                    Some(BY_A_CANARY)
                ),
                ("network: counting", Some("deputy")),
            ]
        );
        assert_eq!(rows[1].at, NOON.plus(60).0 * 1000);
        store.network_audit_sent(rows[0].seq).unwrap();
        assert_eq!(store.network_audit(&license, 10).unwrap().len(), 1);
        store.standing_told(2).unwrap();
        assert_eq!(store.network_standing().unwrap().told, 2);
    }

    #[test]
    fn reports_kept_before_networks_are_sent_as_networks_of_their_own() {
        // The schema before networks, with a report kept and the license known.
        let sql = NativeSql::new();
        crate::store::sql::migrate(&sql, &MIGRATIONS[..13]).unwrap();
        sql.execute(
            "INSERT INTO reports_out (ip, categories, at) VALUES (?1, 1, ?2)",
            &[
                Value::Blob(
                    "8.8.8.8"
                        .parse::<Listed>()
                        .unwrap()
                        .key()
                        .as_bytes()
                        .to_vec(),
                ),
                Value::int(NOON.0),
            ],
        )
        .unwrap();
        sql.execute(
            "INSERT INTO identity (id, license) VALUES (0, 'lic_0123456789abcdef01234567')",
            &[],
        )
        .unwrap();
        crate::store::holder::schema::migrate(&sql).unwrap();
        let store = HolderTables::new(&sql);
        let kept = store.kept_reports(10).unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].1.network, None);
        let (_, licensed_at) = store.license().unwrap().unwrap();
        assert_eq!(
            licensed_at,
            UnixTime(0),
            "past any probation until a call says"
        );
        assert_eq!(store.network_standing().unwrap().standing, Kept::default());
    }
}
