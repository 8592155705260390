//! The promotions waiting for the operator's review, in the operator lists' object's database:
//! each address or /64 whose reports made the network's consensus while
//! `PROMOTION_REVIEW` is on, with when it was queued, until the operator approves
//! or rejects it, or its consensus is lost.

use serde::{Deserialize, Serialize};

use super::tables::OperatorListTables;
use crate::domain::net::address::Listed;
use crate::domain::time::UnixTime;
use crate::store::sql::{Sql, SqlError, Value};

/// A promotion waiting for the operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Queued {
    pub ip: Listed,
    pub queued_at: UnixTime,
}

impl<S: Sql> OperatorListTables<S> {
    /// Queues a promotion; one queued already keeps its time. Answers whether it is new.
    pub fn queue(&self, ip: Listed, now: UnixTime) -> Result<bool, SqlError> {
        Ok(self.sql.execute(
            "INSERT OR IGNORE INTO review (ip, queued_at) VALUES (?1, ?2)",
            &[Value::listed(ip), Value::int(now.0)],
        )? > 0)
    }

    /// Takes a promotion off the queue; answers whether it was there.
    pub fn unqueue(&self, ip: Listed) -> Result<bool, SqlError> {
        Ok(self
            .sql
            .execute("DELETE FROM review WHERE ip = ?1", &[Value::listed(ip)])?
            > 0)
    }

    pub fn is_queued(&self, ip: Listed) -> Result<bool, SqlError> {
        Ok(!self
            .sql
            .query("SELECT 1 FROM review WHERE ip = ?1", &[Value::listed(ip)])?
            .is_empty())
    }

    /// At most `limit` queued promotions after `after`, in address order.
    pub fn queued(&self, after: Option<Listed>, limit: u64) -> Result<Vec<Queued>, SqlError> {
        let after = after.map_or(Value::Blob(Vec::new()), Value::listed);
        let rows = self.sql.query(
            "SELECT ip, queued_at FROM review WHERE ip > ?1 ORDER BY ip LIMIT ?2",
            &[after, Value::int(limit)],
        )?;
        let mut queued = Vec::with_capacity(rows.len());
        for row in &rows {
            // A key this code never writes is left out.
            if let Some(ip) = Listed::from_key(row.blob(0)?) {
                queued.push(Queued {
                    ip,
                    queued_at: UnixTime(row.int(1)?),
                });
            }
        }
        Ok(queued)
    }

    /// How many promotions wait.
    pub fn queue_length(&self) -> Result<u64, SqlError> {
        self.sql
            .query("SELECT count(*) FROM review", &[])?
            .first()
            .map_or(Ok(0), |row| row.int(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sql::native::NativeSql;

    const NOW: UnixTime = UnixTime(1_795_262_400);

    #[test]
    fn promotions_wait_in_address_order_until_taken_off() {
        let tables = OperatorListTables::new(NativeSql::new());
        tables.migrate().unwrap();
        let ip = |text: &str| text.parse::<Listed>().unwrap();
        for (n, text) in ["9.9.9.9", "8.8.8.8", "2a00:1450:4001:81b::/64"]
            .iter()
            .enumerate()
        {
            assert!(tables.queue(ip(text), NOW.plus(n as u64)).unwrap());
        }
        assert!(
            !tables.queue(ip("8.8.8.8"), NOW.plus(9)).unwrap(),
            "queued once"
        );
        let page = tables.queued(None, 2).unwrap();
        assert_eq!(
            page,
            [
                Queued {
                    ip: ip("8.8.8.8"),
                    queued_at: NOW.plus(1)
                },
                Queued {
                    ip: ip("9.9.9.9"),
                    queued_at: NOW
                },
            ]
        );
        let rest = tables.queued(Some(page[1].ip), 2).unwrap();
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].ip, ip("2a00:1450:4001:81b::/64"));
        assert_eq!(tables.queue_length().unwrap(), 3);
        assert!(tables.unqueue(ip("9.9.9.9")).unwrap());
        assert!(!tables.unqueue(ip("9.9.9.9")).unwrap());
        assert!(!tables.is_queued(ip("9.9.9.9")).unwrap());
        assert!(tables.is_queued(ip("8.8.8.8")).unwrap());
    }
}
