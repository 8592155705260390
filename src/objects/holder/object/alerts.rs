//! A CrowdSec engine's alerts, taken by the holder's object: each applied in
//! order by the domain's rule (`take_alert`), the machine's counts written with
//! them, and the alarm set to send their reports on.

use super::reports::REPORT_GATHER_SECONDS;
use super::{Answered, HolderList};
use crate::domain::holder::list::Limits;
use crate::domain::machines::alert::take_alert;
use crate::domain::machines::credentials::AlertCounts;
use crate::domain::time::UnixTime;
use crate::objects::holder::protocol::{AlertsAnswer, HolderRefusal, TakeAlerts};
use crate::objects::protocol::Failure;
use crate::store::holder::list::HolderTables;

impl HolderList {
    /// A request's alerts from one machine: each applied in order (`take_alert`:
    /// its report kept as `report` keeps one, its adds made as `perform` makes
    /// them) and the machine's counts and last alert written, in one visit
    /// without a wait, so that they commit together. The alarm, set for the next
    /// whole second when anything was taken (as for reports, so that a second's
    /// alerts go to the shards together), sends the reports on and sets the next
    /// sweep.
    pub(super) async fn take_alerts(
        &self,
        call: TakeAlerts,
        now: UnixTime,
        limits: Limits,
    ) -> Answered<AlertsAnswer> {
        let taken = self.apply_alerts(&call, now, limits)?;
        let caught = self.catch(&HolderTables::new(&self.sql), &call.canaries, now)?;
        if caught || taken.counts.reported > 0 || taken.counts.added > 0 {
            self.schedule_sweep(now.plus(REPORT_GATHER_SECONDS))
                .await
                .map_err(|e| Failure::Fault(e.into()))?;
        }
        Ok(taken)
    }
    fn apply_alerts(
        &self,
        call: &TakeAlerts,
        now: UnixTime,
        limits: Limits,
    ) -> Answered<AlertsAnswer> {
        let mut store = HolderTables::new(&self.sql);
        let Some(machine) = store.machine_state(&call.machine)? else {
            return Err(Failure::Refused(HolderRefusal::MachineRevoked));
        };
        store.know_license(&call.license, call.licensed_at)?;
        // Those past the number a request takes are acknowledged and change nothing.
        let mut counts = AlertCounts {
            alerts: call.beyond,
            ignored: call.beyond,
            ..AlertCounts::default()
        };
        {
            let allow = self.allow_set()?;
            let client = call.client.as_deref();
            for alert in &call.alerts {
                let own_allow = |ip| allow.holds_ip(ip);
                let taken = take_alert(
                    &mut store,
                    alert,
                    machine.settings,
                    own_allow,
                    client,
                    (now, limits),
                )?;
                counts = counts.plus(taken.counts());
            }
        }
        store.record_alerts(&call.machine, counts, now)?;
        Ok(AlertsAnswer {
            first: machine.alerts + 1,
            counts,
        })
    }
}
