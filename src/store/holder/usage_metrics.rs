//! What a holder's CrowdSec components report of themselves (usage metrics) in
//! its object's database: a bouncer's last report on its feed token's row and
//! what it dropped a day in `usage_days` (the last `USAGE_DAYS`, a row a token
//! and day, gone with the token), an engine's last report on its machine's row.

use std::collections::BTreeMap;

use crate::domain::time::UnixTime;
use crate::domain::usage_metrics::{
    first_day, usage_days, BouncerReport, BouncerUsage, Dropped, EngineReport, EngineUsage,
};
use crate::store::holder::list::HolderTables;
use crate::store::sql::{Row, Sql, SqlError, Value, MAX_EXACT_INTEGER};

/// The columns of a feed token's last report, in `bouncer_usage`'s order.
pub(super) const BOUNCER_COLUMNS: &str = "usage_type, usage_name, usage_version, usage_os, \
     usage_started_at, usage_at, usage_window, usage_packets, usage_bytes";
/// The columns of a machine's last report, in `engine_usage`'s order.
pub(super) const ENGINE_COLUMNS: &str =
    "usage_version, usage_os, usage_started_at, usage_at, usage_datasources";

fn at(row: &Row, column: usize) -> Result<Option<String>, SqlError> {
    Ok(row.opt_int(column)?.map(|at| UnixTime(at).to_rfc3339()))
}

/// A feed token's last report from `BOUNCER_COLUMNS` at `first`, with its
/// days; `None` before its first report.
pub(super) fn bouncer_usage(
    row: &Row,
    first: usize,
    days: &[(u64, Dropped)],
    today: u64,
) -> Result<Option<BouncerUsage>, SqlError> {
    let Some(reported_at) = at(row, first + 5)? else {
        return Ok(None);
    };
    Ok(Some(BouncerUsage {
        kind: row.opt_text(first)?,
        name: row.opt_text(first + 1)?,
        version: row.opt_text(first + 2)?,
        os: row.opt_text(first + 3)?,
        started_at: at(row, first + 4)?,
        reported_at,
        window_seconds: row.opt_int(first + 6)?,
        dropped: Dropped {
            packets: row.opt_int(first + 7)?.unwrap_or(0),
            bytes: row.opt_int(first + 8)?.unwrap_or(0),
        },
        days: usage_days(days, today),
    }))
}

/// A machine's last report from `ENGINE_COLUMNS` at `first`; `None` before its
/// first report.
pub(super) fn engine_usage(row: &Row, first: usize) -> Result<Option<EngineUsage>, SqlError> {
    let Some(reported_at) = at(row, first + 3)? else {
        return Ok(None);
    };
    Ok(Some(EngineUsage {
        version: row.opt_text(first)?,
        os: row.opt_text(first + 1)?,
        started_at: at(row, first + 2)?,
        reported_at,
        datasources: row.opt_int(first + 4)?.unwrap_or(0),
    }))
}

impl<S: Sql> HolderTables<S> {
    /// Records a bouncer's report on feed token `id`: its last report, and what
    /// it dropped added to today's; `false` when there is no such token (it was
    /// revoked). The token's days past the window go in the same visit, a range
    /// of the days' key, so that a token keeps at most `USAGE_DAYS` rows.
    pub fn record_bouncer_usage(
        &self,
        id: &str,
        report: &BouncerReport,
        now: UnixTime,
    ) -> Result<bool, SqlError> {
        let written = self.sql().execute(
            "UPDATE feed_tokens SET usage_type = ?2, usage_name = ?3, usage_version = ?4,
                 usage_os = ?5, usage_started_at = ?6, usage_at = ?7, usage_window = ?8,
                 usage_packets = ?9, usage_bytes = ?10
             WHERE id = ?1",
            &[
                Value::text(id),
                Value::opt_text(report.kind.as_deref()),
                Value::opt_text(report.name.as_deref()),
                Value::opt_text(report.version.as_deref()),
                Value::opt_text(report.os.as_deref()),
                Value::opt_int(report.started_at.map(|at| at.0)),
                Value::int(now.0),
                Value::opt_int(report.window_seconds),
                Value::int(report.dropped.packets),
                Value::int(report.dropped.bytes),
            ],
        )?;
        if written == 0 {
            return Ok(false);
        }
        let today = now.utc_day();
        self.sql().execute(
            "INSERT INTO usage_days (token, day, packets, bytes) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (token, day) DO UPDATE SET packets = min(packets + excluded.packets, ?5),
                bytes = min(bytes + excluded.bytes, ?5)",
            &[
                Value::text(id),
                Value::int(today),
                Value::int(report.dropped.packets),
                Value::int(report.dropped.bytes),
                Value::int(MAX_EXACT_INTEGER as u64),
            ],
        )?;
        self.sql().execute(
            "DELETE FROM usage_days WHERE token = ?1 AND day < ?2",
            &[Value::text(id), Value::int(first_day(today))],
        )?;
        Ok(true)
    }

    /// Records an engine's report on machine `id`; `false` when there is no
    /// such machine (it was revoked).
    pub fn record_engine_usage(
        &self,
        id: &str,
        report: &EngineReport,
        now: UnixTime,
    ) -> Result<bool, SqlError> {
        let written = self.sql().execute(
            "UPDATE machines SET usage_version = ?2, usage_os = ?3, usage_started_at = ?4,
                 usage_at = ?5, usage_datasources = ?6
             WHERE id = ?1",
            &[
                Value::text(id),
                Value::opt_text(report.version.as_deref()),
                Value::opt_text(report.os.as_deref()),
                Value::opt_int(report.started_at.map(|at| at.0)),
                Value::int(now.0),
                Value::int(report.datasources),
            ],
        )?;
        Ok(written > 0)
    }

    /// What each feed token's bouncer dropped a day within the window up to
    /// `today`, by token.
    pub(super) fn usage_days_by_token(
        &self,
        today: u64,
    ) -> Result<BTreeMap<String, Vec<(u64, Dropped)>>, SqlError> {
        let rows = self.sql().query(
            "SELECT token, day, packets, bytes FROM usage_days WHERE day >= ?1",
            &[Value::int(first_day(today))],
        )?;
        let mut days: BTreeMap<String, Vec<(u64, Dropped)>> = BTreeMap::new();
        for row in &rows {
            let dropped = Dropped {
                packets: row.int(2)?,
                bytes: row.int(3)?,
            };
            days.entry(row.text(0)?)
                .or_default()
                .push((row.int(1)?, dropped));
        }
        Ok(days)
    }

    /// Drops the days every token's window has passed: the daily sweep's part,
    /// for the tokens whose bouncers stopped reporting.
    pub(super) fn tidy_usage(&self, now: UnixTime) -> Result<(), SqlError> {
        self.sql().execute(
            "DELETE FROM usage_days WHERE day < ?1",
            &[Value::int(first_day(now.utc_day()))],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::feed::decision::DecisionType;
    use crate::domain::feed::feed_token::{NewFeedTokenRecord, Scope};
    use crate::domain::machines::credentials::{MachineSettings, NewMachine, NewMachineRecord};
    use crate::domain::time::SECONDS_PER_DAY;
    use crate::domain::usage_metrics::USAGE_DAYS;
    use crate::store::holder::rule_tests::{sql_store, NOON};
    use crate::store::holder::schema::{migrate, MIGRATIONS};
    use crate::store::sql::native::NativeSql;

    const TOKEN: &str = "ft_0000000000000001";

    fn token(store: &HolderTables<NativeSql>, id: &str) {
        let record = NewFeedTokenRecord {
            id: id.to_owned(),
            digest: format!("d-{id}"),
            scope: Scope::All,
            decision: DecisionType::Ban,
            aggregate: false,
            max_items: None,
        };
        assert!(store.create_feed_token(&record, NOON).unwrap());
    }

    fn report(packets: u64, bytes: u64) -> BouncerReport {
        BouncerReport {
            kind: Some("crowdsec-firewall-bouncer".to_owned()),
            name: None,
            version: Some("v0.0.30".to_owned()),
            os: Some("debian 12".to_owned()),
            started_at: Some(NOON.minus(3600)),
            window_seconds: Some(900),
            dropped: Dropped { packets, bytes },
        }
    }

    fn rows(store: &HolderTables<NativeSql>) -> u64 {
        store
            .sql()
            .query("SELECT count(*) FROM usage_days", &[])
            .unwrap()[0]
            .int(0)
            .unwrap()
    }

    #[test]
    fn a_bouncers_last_report_and_its_days_drops_are_on_its_feed_token() {
        let store = sql_store();
        token(&store, TOKEN);
        token(&store, "ft_0000000000000002");
        let listed = store.feed_tokens(NOON).unwrap();
        assert_eq!(listed[0].usage, None, "no report yet");
        assert!(store
            .record_bouncer_usage(TOKEN, &report(80, 5_120), NOON)
            .unwrap());
        assert!(store
            .record_bouncer_usage(TOKEN, &report(16, 1_024), NOON.plus(900))
            .unwrap());
        let tomorrow = NOON.plus(SECONDS_PER_DAY);
        assert!(store
            .record_bouncer_usage(TOKEN, &report(4, 240), tomorrow)
            .unwrap());
        let listed = store.feed_tokens(tomorrow).unwrap();
        let usage = listed[0].usage.clone().unwrap();
        assert_eq!(
            (usage.kind.as_deref(), usage.version.as_deref()),
            (Some("crowdsec-firewall-bouncer"), Some("v0.0.30"))
        );
        assert_eq!(usage.started_at, Some(NOON.minus(3600).to_rfc3339()));
        assert_eq!(usage.reported_at, tomorrow.to_rfc3339());
        assert_eq!(
            usage.dropped,
            Dropped {
                packets: 4,
                bytes: 240
            },
            "the last report's, as reported"
        );
        assert_eq!(usage.days.len(), USAGE_DAYS as usize);
        let today = &usage.days[USAGE_DAYS as usize - 1];
        assert_eq!((today.packets, today.bytes), (4, 240));
        let yesterday = &usage.days[USAGE_DAYS as usize - 2];
        assert_eq!(
            (yesterday.packets, yesterday.bytes),
            (96, 6_144),
            "a day's reports are added up"
        );
        assert_eq!(
            listed[1].usage, None,
            "another token's bouncer reported nothing"
        );
    }

    #[test]
    fn a_tokens_days_are_bounded_and_go_with_it() {
        let store = sql_store();
        token(&store, TOKEN);
        for day in 0..45 {
            let at = NOON.plus(day * SECONDS_PER_DAY);
            assert!(store
                .record_bouncer_usage(TOKEN, &report(1, 1), at)
                .unwrap());
        }
        assert_eq!(
            rows(&store),
            USAGE_DAYS,
            "a row a day, the window's days only"
        );
        let last = NOON.plus(44 * SECONDS_PER_DAY);
        let usage = store.feed_tokens(last).unwrap()[0].usage.clone().unwrap();
        assert!(usage.days.iter().all(|day| day.packets == 1));
        // A token whose bouncer stopped reporting: the sweep drops its old days.
        store.tidy_usage(last.plus(10 * SECONDS_PER_DAY)).unwrap();
        assert_eq!(rows(&store), USAGE_DAYS - 10);
        assert!(store.revoke_feed_token(TOKEN).unwrap().is_some());
        assert_eq!(rows(&store), 0, "gone with the token");
        assert!(
            !store
                .record_bouncer_usage(TOKEN, &report(1, 1), last)
                .unwrap(),
            "a revoked token's report is refused"
        );
        assert_eq!(rows(&store), 0, "a revoked token's report keeps nothing");
    }

    #[test]
    fn an_engines_last_report_is_on_its_machine() {
        let store = sql_store();
        let new = NewMachine::generate().unwrap();
        let machine = NewMachineRecord {
            id: new.id.clone(),
            machine_id: new.machine_id,
            name: None,
        };
        let defaults = MachineSettings::default();
        assert!(store.create_machine(&machine, defaults, NOON).unwrap());
        assert_eq!(store.machines().unwrap()[0].usage, None);
        let report = EngineReport {
            version: Some("v1.6.3".to_owned()),
            os: Some("ubuntu 24.04".to_owned()),
            started_at: Some(NOON),
            datasources: 4,
        };
        assert!(store
            .record_engine_usage(&new.id, &report, NOON.plus(60))
            .unwrap());
        assert_eq!(
            store.machines().unwrap()[0].usage,
            Some(EngineUsage {
                version: Some("v1.6.3".to_owned()),
                os: Some("ubuntu 24.04".to_owned()),
                started_at: Some(NOON.to_rfc3339()),
                reported_at: NOON.plus(60).to_rfc3339(),
                datasources: 4,
            })
        );
        let unknown = "mc_0000000000000000";
        assert!(
            !store.record_engine_usage(unknown, &report, NOON).unwrap(),
            "a report of no machine of the holder's is refused"
        );
    }

    #[test]
    fn a_holder_from_before_usage_metrics_keeps_its_tokens_and_machines_and_gains_them() {
        let sql = NativeSql::new();
        crate::store::sql::migrate(&sql, &MIGRATIONS[..11]).unwrap();
        // What the code before wrote: a feed token that pulled, a machine that logged in.
        sql.execute(
            "INSERT INTO feed_tokens (id, digest, created_at, scope, decision, last_used, pulled)
             VALUES (?1, 'd', 5, 'personal', 'captcha', 7, 'decisions')",
            &[Value::text(TOKEN)],
        )
        .unwrap();
        sql.execute(
            "INSERT INTO machines (id, machine_id, digest, ttl, adds, created_at, last_login_at)
             VALUES ('mc_0000000000000001', 'glm_0123456789abcdef0123456789abcdef', 'd',
                     600, 1, 5, 6)",
            &[],
        )
        .unwrap();
        migrate(&sql).unwrap();
        let store = HolderTables::new(sql);
        let listed = store.feed_tokens(NOON).unwrap();
        assert_eq!(
            (
                listed[0].scope,
                listed[0].pulled.as_deref(),
                &listed[0].usage
            ),
            (Scope::Personal, Some("decisions"), &None)
        );
        let machines = store.machines().unwrap();
        assert_eq!((machines[0].ttl, &machines[0].usage), (600, &None));
        assert!(store
            .record_bouncer_usage(TOKEN, &report(2, 3), NOON)
            .unwrap());
        let usage = store.feed_tokens(NOON).unwrap()[0].usage.clone().unwrap();
        assert_eq!(usage.days.last().map(|day| day.packets), Some(2));
    }
}
