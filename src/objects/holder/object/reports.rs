//! The holder's side of the network: reports weighed by the holder's allow
//! list, counted against the day's reports and kept with their network; a
//! canary's catch; the license's standing, revocation and suspension; and the
//! alarm's sending of the kept reports and the standing to the report shards,
//! and of the standing's audit rows to the directory.

use std::collections::BTreeMap;

use worker::{Result, SqlStorage};

use super::{fault, Answered, HolderList};
use crate::domain::access::audit::{Stamp, FORWARDED_AT_ONCE};
use crate::domain::access::license::LicenseId;
use crate::domain::holder::list::Limits;
use crate::domain::net::address::PublicIp;
use crate::domain::network::consensus::{shard_of, SHARDS};
use crate::domain::network::report::{perform_report, Outgoing, ReportAnswer, ReportOutcome};
use crate::domain::network::standing::Kept;
use crate::domain::precedence::{weigh_then_perform, Holding, Weighing};
use crate::domain::time::UnixTime;
use crate::objects::directory::client::directory;
use crate::objects::directory::protocol::RecordForwarded;
use crate::objects::holder::protocol::Report;
use crate::objects::protocol::{Ask, Failure};
use crate::objects::report_shard::client::report_shard;
use crate::objects::report_shard::protocol::{Count, Forget, ReportShardProtocol, SetStanding};
use crate::store::holder::list::HolderTables;
use crate::store::sql::SqlError;

/// Reports one alarm sends on at most, a call per shard they fall in; when more
/// are kept, the next alarm runs at once.
const REPORT_BATCH: usize = 1_000;
/// A report is sent on at the next whole second, not at once: the reports of
/// that second go with it, one call per shard, so that an agent reporting one
/// address at a time costs a shard call a second, not one a report.
pub(super) const REPORT_GATHER_SECONDS: u64 = 1;

impl HolderList {
    /// Records the revocation (which drops the reports not yet sent and the
    /// Cloudflare connection: `HolderTables::revoke`), and tells every report
    /// shard that the license's reports stop counting. A shard that is not told
    /// fails the call, and the revocations' object tells this one again.
    pub(super) async fn revoke(&self, now: UnixTime) -> Answered<()> {
        let store = HolderTables::new(&self.sql);
        store.revoke(now)?;
        self.revoked.set(Some(true));
        *self.cloudflare.borrow_mut() = Some(None);
        if let Some((license, _)) = store.license()? {
            for index in 0..SHARDS {
                report_shard(&self.env, index)?
                    .ask(Forget(license.clone()))
                    .await
                    .map_err(Failure::into_fault)?;
            }
        }
        Ok(())
    }
    /// Reports of attackers: each weighed by the holder's allow list first (a
    /// report of what it holds is refused), then counted against the day's reports
    /// and kept with the network it came from; the alarm, set for the next whole
    /// second, sends them to their shards, so that reports arriving meanwhile go in
    /// the same batch. A canary among the request's addresses suspends the license
    /// from the network, and its answer is any report's.
    pub(super) async fn report(
        &self,
        Report {
            license,
            licensed_at,
            network,
            calls,
            canaries,
        }: Report,
        now: UnixTime,
        limits: Limits,
    ) -> Answered<Vec<ReportAnswer>> {
        let mut store = HolderTables::new(&self.sql);
        store.know_license(&license, licensed_at)?;
        let answers = {
            let allow = self.allow_set()?;
            calls
                .iter()
                .map(|call| {
                    let holding = Holding {
                        global_challenge: false,
                        own_allow: allow.holds_ip(call.ip),
                    };
                    weigh_then_perform(
                        Weighing::Report,
                        holding,
                        |list| {
                            let outcome = list.report_outcome()?;
                            Some(ReportAnswer {
                                outcome,
                                usage: None,
                                limits,
                            })
                        },
                        || perform_report(&mut store, call, network, (now, limits)),
                    )
                })
                .collect::<std::result::Result<Vec<_>, _>>()?
        };
        let caught = self.catch(&store, &canaries, now)?;
        if caught || answers.iter().any(|a| a.outcome == ReportOutcome::Reported) {
            self.schedule_sweep(now.plus(REPORT_GATHER_SECONDS))
                .await
                .map_err(|e| Failure::Fault(e.into()))?;
        }
        Ok(answers)
    }
    /// A canary reported: the license is suspended from the network (once; the
    /// first canary is the one it shows). Answers whether that changed its standing.
    pub(super) fn catch(
        &self,
        store: &HolderTables<&SqlStorage>,
        canaries: &[PublicIp],
        now: UnixTime,
    ) -> std::result::Result<bool, SqlError> {
        let Some(&canary) = canaries.first() else {
            return Ok(false);
        };
        let kept = store.network_standing()?.standing;
        store.change_network_standing(kept.caught(canary, now), None)
    }
    /// The operator's change of the license's standing in the network: kept now,
    /// with who made it, told to every shard and the directory by the alarm,
    /// which runs at once.
    pub(super) async fn set_network(
        &self,
        suspended: bool,
        by: &Stamp,
        now: UnixTime,
    ) -> Answered<Kept> {
        let store = HolderTables::new(&self.sql);
        let kept = store.network_standing()?.standing.set(suspended, now);
        if store.change_network_standing(kept, Some(by))? {
            self.schedule_sweep(now)
                .await
                .map_err(|e| Failure::Fault(e.into()))?;
        }
        Ok(kept)
    }
    /// Tells every shard the license's standing when it changed since they were
    /// last told, then sends a batch of the reports kept to their shards, one call
    /// per shard; answers whether more are kept. A shard that fails leaves the
    /// batch kept (and the standing untold), and the alarm's retry sends it again
    /// (a report counted twice by a shard that did take it counts once: a license
    /// counts once an address).
    pub(super) async fn send_reports(&self) -> Result<bool> {
        // An alarm and the test build's hook may run at once: one sends, so that
        // no report is sent twice while the other waits on a shard.
        if self.sending.replace(true) {
            return Ok(false);
        }
        let sent = match self.tell_standing().await {
            Ok(()) => self.send_batch().await,
            Err(error) => Err(error),
        };
        self.sending.set(false);
        sent
    }
    /// Every shard and the directory told the standing's last change: the
    /// shards what counts, the directory its audit row (numbered by the change,
    /// so that it writes each once however often it is sent).
    async fn tell_standing(&self) -> Result<()> {
        let store = HolderTables::new(&self.sql);
        let kept = store.network_standing().map_err(fault)?;
        let Some((license, _)) = store.license().map_err(fault)? else {
            return Ok(());
        };
        if kept.told < kept.version {
            for index in 0..SHARDS {
                let call = SetStanding {
                    license: license.clone(),
                    suspended: kept.standing.suspended,
                };
                self.ask_shard(index, call).await?;
            }
            store.standing_told(kept.version).map_err(fault)?;
        }
        self.forward_standing_audit(&store, &license).await
    }
    /// The audit rows of the standing's changes, sent the directory until it has
    /// them (each written once, however often it is sent).
    async fn forward_standing_audit(
        &self,
        store: &HolderTables<&SqlStorage>,
        license: &LicenseId,
    ) -> Result<()> {
        let rows = store
            .network_audit(license, FORWARDED_AT_ONCE)
            .map_err(fault)?;
        let Some(last) = rows.last().map(|row| row.seq) else {
            return Ok(());
        };
        directory(&self.env)
            .map_err(|e| worker::Error::RustError(e.to_string()))?
            .ask(RecordForwarded(rows))
            .await
            .map_err(|e| worker::Error::RustError(format!("the directory: {e:?}")))?;
        store.network_audit_sent(last).map_err(fault)
    }
    /// Report shard `index`'s answer to `call`; a fault names the shard.
    async fn ask_shard<C: Ask<ReportShardProtocol>>(
        &self,
        index: u32,
        call: C,
    ) -> Result<C::Answer> {
        report_shard(&self.env, index)
            .map_err(|e| worker::Error::RustError(e.to_string()))?
            .ask(call)
            .await
            .map_err(|e| {
                worker::Error::RustError(format!("report shard {index}: {}", e.into_fault()))
            })
    }
    async fn send_batch(&self) -> Result<bool> {
        let store = HolderTables::new(&self.sql);
        let Some((license, licensed_at)) = store.license().map_err(fault)? else {
            return Ok(false);
        };
        let kept = store.kept_reports(REPORT_BATCH).map_err(fault)?;
        let Some(&(last, _)) = kept.last() else {
            return Ok(false);
        };
        let mut by_shard: BTreeMap<u32, Vec<Outgoing>> = BTreeMap::new();
        for (_, report) in kept.iter() {
            by_shard
                .entry(shard_of(&report.subject.key()))
                .or_default()
                .push(report.clone());
        }
        for (index, reports) in by_shard {
            let count = Count {
                license: license.clone(),
                licensed_at,
                reports,
            };
            self.ask_shard(index, count).await?;
        }
        store.forget_reports(last).map_err(fault)?;
        Ok(kept.len() == REPORT_BATCH)
    }
}
