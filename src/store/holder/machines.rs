//! A holder's machines (its CrowdSec engines) in its object's database: each
//! with its login name, its label and settings, when it
//! last logged in and alerted, the scenarios its last login named, and counts.

use crate::domain::machines::credentials::{
    AlertCounts, MachineChange, MachineId, MachineInfo, MachineSettings, NewMachineRecord,
    MAX_PER_HOLDER as MAX_MACHINES,
};
use crate::domain::time::UnixTime;
use crate::store::holder::list::HolderTables;
use crate::store::holder::usage_metrics::{engine_usage, ENGINE_COLUMNS};
use crate::store::sql::{Row, Sql, SqlError, Value};

/// What an alert needs of its machine: its settings, and how many alerts it
/// sent before (the next alert's number is the one after).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MachineState {
    pub settings: MachineSettings,
    pub alerts: u64,
}

/// A machine's columns as its holder sees it; its engine's last report
/// (`ENGINE_COLUMNS`) follows them.
const INFO_COLUMNS: &str = "id, machine_id, name, created_at, last_login_at, last_alert_at, \
     scenarios, alerts, reported, added, ignored, ttl, adds";
/// Where the engine's last report starts among the columns read.
const USAGE_AT: usize = 13;

fn at(row: &Row, column: usize) -> Result<Option<String>, SqlError> {
    Ok(row.opt_int(column)?.map(|at| UnixTime(at).to_rfc3339()))
}

/// A row of `INFO_COLUMNS` and `ENGINE_COLUMNS`.
fn info_of(row: &Row) -> Result<MachineInfo, SqlError> {
    let scenarios = serde_json::from_str(&row.text(6)?)
        .map_err(|e| SqlError(format!("a machine's scenarios: {e}")))?;
    Ok(MachineInfo {
        id: row.text(0)?,
        machine_id: row.text(1)?,
        name: row.opt_text(2)?,
        created_at: UnixTime(row.int(3)?).to_rfc3339(),
        last_login_at: at(row, 4)?,
        last_alert_at: at(row, 5)?,
        scenarios,
        counts: AlertCounts {
            alerts: row.int(7)?,
            reported: row.int(8)?,
            added: row.int(9)?,
            ignored: row.int(10)?,
        },
        ttl: row.int(11)?,
        adds: row.int(12)? != 0,
        usage: engine_usage(row, USAGE_AT)?,
    })
}

impl<S: Sql> HolderTables<S> {
    /// Records a new machine with `settings`, unless the holder has the most it may.
    pub fn create_machine(
        &self,
        machine: &NewMachineRecord,
        settings: MachineSettings,
        now: UnixTime,
    ) -> Result<bool, SqlError> {
        let count = self.sql().query("SELECT count(*) FROM machines", &[])?;
        if count.first().map_or(Ok(0), |row| row.int(0))? >= MAX_MACHINES as u64 {
            return Ok(false);
        }
        self.sql().execute(
            "INSERT INTO machines (id, machine_id, name, ttl, adds, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            &[
                Value::text(&machine.id),
                Value::text(machine.machine_id.as_str()),
                Value::opt_text(machine.name.as_deref()),
                Value::int(settings.ttl),
                Value::int(u64::from(settings.adds)),
                Value::int(now.0),
            ],
        )?;
        Ok(true)
    }

    /// Every machine as its holder sees it, oldest first.
    pub fn machines(&self) -> Result<Vec<MachineInfo>, SqlError> {
        let rows = self.sql().query(
            &format!(
                "SELECT {INFO_COLUMNS}, {ENGINE_COLUMNS} FROM machines ORDER BY created_at, id"
            ),
            &[],
        )?;
        rows.iter().map(info_of).collect()
    }

    /// Machine `id` as its holder sees it, or `None` when there is no such machine.
    pub fn machine(&self, id: &str) -> Result<Option<MachineInfo>, SqlError> {
        let rows = self.sql().query(
            &format!("SELECT {INFO_COLUMNS}, {ENGINE_COLUMNS} FROM machines WHERE id = ?1"),
            &[Value::text(id)],
        )?;
        rows.first().map(info_of).transpose()
    }

    /// What an alert of machine `id` needs of it, or `None` once it is revoked.
    pub fn machine_state(&self, id: &str) -> Result<Option<MachineState>, SqlError> {
        let rows = self.sql().query(
            "SELECT ttl, adds, alerts FROM machines WHERE id = ?1",
            &[Value::text(id)],
        )?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        Ok(Some(MachineState {
            settings: MachineSettings {
                ttl: row.int(0)?,
                adds: row.int(1)? != 0,
            },
            alerts: row.int(2)?,
        }))
    }

    /// Makes `change` to machine `id`: its state after, or `None` when there is
    /// no such machine. An empty name takes the label away.
    pub fn change_machine(
        &self,
        id: &str,
        change: &MachineChange,
    ) -> Result<Option<MachineInfo>, SqlError> {
        let written = self.sql().execute(
            "UPDATE machines SET name = CASE WHEN ?2 IS NULL THEN name ELSE nullif(?2, '') END,
                 ttl = coalesce(?3, ttl), adds = coalesce(?4, adds)
             WHERE id = ?1",
            &[
                Value::text(id),
                Value::opt_text(change.name.as_deref()),
                Value::opt_int(change.ttl),
                Value::opt_int(change.adds.map(u64::from)),
            ],
        )?;
        if written == 0 {
            return Ok(None);
        }
        self.machine(id)
    }

    /// Deletes machine `id`: its login name, for its login record to go too, or
    /// `None` when there was no such machine.
    pub fn revoke_machine(&self, id: &str) -> Result<Option<MachineId>, SqlError> {
        let rows = self.sql().query(
            "SELECT machine_id FROM machines WHERE id = ?1",
            &[Value::text(id)],
        )?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let text = row.text(0)?;
        let machine_id = MachineId::parse(&text)
            .ok_or_else(|| SqlError(format!("a machine's login name {text:?}")))?;
        self.sql()
            .execute("DELETE FROM machines WHERE id = ?1", &[Value::text(id)])?;
        Ok(Some(machine_id))
    }

    /// Records a login of machine `id`: when, and the scenarios it named;
    /// `false` when there is no such machine (it was revoked).
    pub fn record_login(
        &self,
        id: &str,
        scenarios: &[String],
        now: UnixTime,
    ) -> Result<bool, SqlError> {
        let scenarios = serde_json::to_string(scenarios)
            .map_err(|e| SqlError(format!("a machine's scenarios: {e}")))?;
        let written = self.sql().execute(
            "UPDATE machines SET last_login_at = ?2, scenarios = ?3 WHERE id = ?1",
            &[Value::text(id), Value::int(now.0), Value::text(scenarios)],
        )?;
        Ok(written > 0)
    }

    /// Adds what a request's alerts came to to machine `id`'s counts, and notes
    /// when it last alerted.
    pub fn record_alerts(
        &self,
        id: &str,
        counts: AlertCounts,
        now: UnixTime,
    ) -> Result<(), SqlError> {
        self.sql().execute(
            "UPDATE machines SET last_alert_at = ?2, alerts = alerts + ?3,
                 reported = reported + ?4, added = added + ?5, ignored = ignored + ?6
             WHERE id = ?1",
            &[
                Value::text(id),
                Value::int(now.0),
                Value::int(counts.alerts),
                Value::int(counts.reported),
                Value::int(counts.added),
                Value::int(counts.ignored),
            ],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::machines::credentials::NewMachine;
    use crate::store::holder::rule_tests::{sql_store, NOON};

    fn record(name: Option<&str>) -> (NewMachineRecord, MachineId) {
        let new = NewMachine::generate().unwrap();
        let record = NewMachineRecord {
            id: new.id,
            machine_id: new.machine_id.clone(),
            name: name.map(str::to_owned),
        };
        (record, new.machine_id)
    }

    #[test]
    fn a_holder_keeps_at_most_twenty_machines_each_as_its_holder_sees_it() {
        let store = sql_store();
        let defaults = MachineSettings::default();
        let (first, login) = record(Some("web-1"));
        assert!(store.create_machine(&first, defaults, NOON).unwrap());
        for n in 1..20 {
            let (other, _) = record(None);
            let at = NOON.plus(n);
            assert!(store.create_machine(&other, defaults, at).unwrap());
        }
        let (one_more, _) = record(None);
        assert!(!store.create_machine(&one_more, defaults, NOON).unwrap());
        let all = store.machines().unwrap();
        assert_eq!(all.len(), 20);
        assert_eq!(
            all[0],
            MachineInfo {
                id: first.id.clone(),
                machine_id: login.as_str().to_owned(),
                name: Some("web-1".to_owned()),
                created_at: NOON.to_rfc3339(),
                last_login_at: None,
                last_alert_at: None,
                scenarios: Vec::new(),
                counts: AlertCounts::default(),
                ttl: 14_400,
                adds: true,
                usage: None,
            }
        );
        assert_eq!(store.revoke_machine(&first.id).unwrap(), Some(login));
        assert_eq!(store.revoke_machine(&first.id).unwrap(), None);
        assert!(store.machine_state(&first.id).unwrap().is_none());
        assert!(store.create_machine(&one_more, defaults, NOON).unwrap());
    }

    #[test]
    fn a_machine_records_its_logins_alerts_and_changes() {
        let store = sql_store();
        let (machine, _) = record(None);
        let id = machine.id.clone();
        store
            .create_machine(&machine, MachineSettings::default(), NOON)
            .unwrap();
        let scenarios = ["crowdsecurity/ssh-bf".to_owned()];
        assert!(store.record_login(&id, &scenarios, NOON.plus(1)).unwrap());
        let unknown = "mc_0000000000000000";
        assert!(!store.record_login(unknown, &[], NOON).unwrap());
        let counts = AlertCounts {
            alerts: 3,
            reported: 2,
            added: 1,
            ignored: 1,
        };
        store.record_alerts(&id, counts, NOON.plus(2)).unwrap();
        store.record_alerts(&id, counts, NOON.plus(3)).unwrap();
        let change = MachineChange {
            name: Some("edge".to_owned()),
            ttl: Some(600),
            adds: Some(false),
        };
        let info = store.change_machine(&id, &change).unwrap().unwrap();
        assert_eq!(info.scenarios, scenarios);
        assert_eq!(info.last_login_at, Some(NOON.plus(1).to_rfc3339()));
        assert_eq!(info.last_alert_at, Some(NOON.plus(3).to_rfc3339()));
        assert_eq!(info.counts, counts.plus(counts));
        assert_eq!(
            (info.name.as_deref(), info.ttl, info.adds),
            (Some("edge"), 600, false)
        );
        assert_eq!(
            store.machine_state(&id).unwrap(),
            Some(MachineState {
                settings: MachineSettings {
                    ttl: 600,
                    adds: false
                },
                alerts: 6,
            })
        );
        let unnamed = MachineChange {
            name: Some(String::new()),
            ..MachineChange::default()
        };
        let info = store.change_machine(&id, &unnamed).unwrap().unwrap();
        assert_eq!(info.name, None, "the label goes");
        assert_eq!(info.ttl, 600, "the rest stays");
        let nothing = MachineChange::default();
        assert_eq!(store.change_machine(unknown, &nothing).unwrap(), None);
    }
}
