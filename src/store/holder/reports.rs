//! The reports a holder's object keeps until its alarm sends them to the shards
//! that count them, and the license the object is of, which it names them by.

use crate::domain::access::license::LicenseId;
use crate::domain::network::report::{Categories, Outgoing, ReportStore};
use crate::domain::time::UnixTime;
use crate::store::holder::list::{ip_of, SqlListStore};
use crate::store::sql::{Sql, SqlError, Value};

impl<S: Sql> ReportStore for SqlListStore<S> {
    fn keep_report(&mut self, report: &Outgoing) -> Result<(), SqlError> {
        self.sql().execute(
            "INSERT INTO reports_out (ip, categories, at) VALUES (?1, ?2, ?3)",
            &[
                Value::Blob(report.subject.key().as_bytes().to_vec()),
                Value::int(u64::from(report.categories.bits())),
                Value::int(report.at.0),
            ],
        )?;
        Ok(())
    }
}

impl<S: Sql> SqlListStore<S> {
    /// At most `limit` of the reports kept, oldest first, each with its row's
    /// number: what the alarm sends next.
    pub fn kept_reports(&self, limit: usize) -> Result<Vec<(u64, Outgoing)>, SqlError> {
        let rows = self.sql().query(
            "SELECT id, ip, categories, at FROM reports_out ORDER BY id LIMIT ?1",
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
                },
            ));
        }
        Ok(kept)
    }

    /// Forgets the reports kept up to row `last`, once they are sent, or all of
    /// them when the license is revoked.
    pub fn forget_reports(&self, last: Option<u64>) -> Result<(), SqlError> {
        match last {
            Some(last) => self.sql().execute(
                "DELETE FROM reports_out WHERE id <= ?1",
                &[Value::int(last)],
            ),
            None => self.sql().execute("DELETE FROM reports_out", &[]),
        }
        .map(drop)
    }

    /// Whether reports wait to be sent.
    pub fn has_reports(&self) -> Result<bool, SqlError> {
        Ok(!self
            .sql()
            .query("SELECT 1 FROM reports_out LIMIT 1", &[])?
            .is_empty())
    }

    /// Records which license this object is of; the first time counts.
    pub fn know_license(&self, license: &LicenseId) -> Result<(), SqlError> {
        self.sql()
            .execute(
                "INSERT OR IGNORE INTO identity (id, license) VALUES (0, ?1)",
                &[Value::text(license.as_str())],
            )
            .map(drop)
    }

    /// The license this object is of, once a call named it.
    pub fn license(&self) -> Result<Option<LicenseId>, SqlError> {
        let rows = self
            .sql()
            .query("SELECT license FROM identity WHERE id = 0", &[])?;
        Ok(rows
            .first()
            .map(|row| row.text(0))
            .transpose()?
            .and_then(|text| LicenseId::parse(&text)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::net::address::{Ipv6Prefix, Listed};
    use crate::domain::network::report::{perform_report, ReportCall, ReportOutcome};
    use crate::domain::personal::holder::{Limits, ListStore};
    use crate::store::holder::rule_tests::{sql_store, NOON};

    #[test]
    fn reports_are_kept_in_order_until_sent_and_the_license_is_known_once() {
        let mut store = sql_store();
        for ip in ["8.8.8.8", "8.8.4.4", "1.1.1.1"] {
            let call = ReportCall {
                ip: ip.parse().unwrap(),
                prefix: Ipv6Prefix::Whole,
                categories: Categories::parse("ssh,scan").unwrap(),
                comment: None,
            };
            let answer = perform_report(&mut store, &call, NOON, Limits::default()).unwrap();
            assert_eq!(answer.outcome, ReportOutcome::Reported);
        }
        let first = store.kept_reports(2).unwrap();
        let subjects: Vec<String> = first.iter().map(|(_, r)| r.subject.to_string()).collect();
        assert_eq!(subjects, ["8.8.8.8", "8.8.4.4"]);
        assert_eq!(
            first[0].1.categories,
            Categories::parse("scan, ssh").unwrap()
        );
        store.forget_reports(Some(first[1].0)).unwrap();
        let rest = store.kept_reports(10).unwrap();
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].1.subject, "1.1.1.1".parse::<Listed>().unwrap());
        assert!(store.has_reports().unwrap());
        store.forget_reports(None).unwrap();
        assert!(!store.has_reports().unwrap());
        assert_eq!(store.usage().unwrap().reported, 3);
        let license = LicenseId::parse("lic_0123456789abcdef01234567").unwrap();
        assert_eq!(store.license().unwrap(), None);
        store.know_license(&license).unwrap();
        store
            .know_license(&LicenseId::parse("lic_aaaaaaaaaaaaaaaaaaaaaaaa").unwrap())
            .unwrap();
        assert_eq!(store.license().unwrap(), Some(license));
    }
}
