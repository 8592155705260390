//! The usage reports of a holder's bouncers and engines, gathered: the first
//! of a minute from a feed token or machine is written at once (the license's
//! picture shows it), and those after it within that minute are added up here
//! and written as one by the next report after the minute, or by the alarm set
//! for the minute's end. However often a reporter sends, it costs at most one
//! write a minute, as its pulls do. What is gathered lives in this instance's
//! memory until then: should the runtime evict the object within that minute,
//! what its reporter sent after the minute's first is lost, never more.

use std::cell::RefCell;

use super::{Answered, HolderList};
use crate::domain::time::{UnixTime, SECONDS_PER_DAY};
use crate::objects::holder::protocol::{HolderRefusal, RecordUsage};
use crate::objects::protocol::Failure;
use crate::store::holder::list::HolderTables;

/// Who sent a report: a bouncer by its feed token's id, an engine by its machine's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum UsageReporter {
    Token(String),
    Machine(String),
}

impl RecordUsage {
    fn reporter(&self) -> UsageReporter {
        match self {
            RecordUsage::Bouncer { token, .. } => UsageReporter::Token(token.clone()),
            RecordUsage::Engine { machine, .. } => UsageReporter::Machine(machine.clone()),
        }
    }

    /// This report and a later one from the same reporter, as one.
    fn then(self, later: RecordUsage) -> RecordUsage {
        match (self, later) {
            (
                RecordUsage::Bouncer { report, .. },
                RecordUsage::Bouncer {
                    token,
                    report: next,
                },
            ) => RecordUsage::Bouncer {
                token,
                report: report.then(next),
            },
            // An engine's report says what it is now: the later one is all of it.
            (_, later) => later,
        }
    }
}

/// A reporter's minute: the one its last write was in, and what came after it.
struct Minute {
    reporter: UsageReporter,
    written: u64,
    gathered: Option<RecordUsage>,
}

/// The reporters of this instance's current minute, and those with reports
/// gathered: a holder's few tokens and machines at most.
#[derive(Default)]
pub(super) struct GatheredUsage(RefCell<Vec<Minute>>);

impl GatheredUsage {
    /// A revoked token's or machine's reports: never written.
    pub(super) fn forget(&self, reporter: &UsageReporter) {
        self.0
            .borrow_mut()
            .retain(|minute| minute.reporter != *reporter);
    }
}

fn minute_of(now: UnixTime) -> u64 {
    now.0 / 60
}

impl HolderList {
    /// A bouncer's or engine's report: written now when it is its reporter's
    /// first this minute (with what was gathered before), else gathered until
    /// the minute is over. Refused as its pulls or alerts are once its token or
    /// machine is revoked.
    pub(super) async fn record_usage(&self, call: RecordUsage, now: UnixTime) -> Answered<()> {
        let reporter = call.reporter();
        let minute = minute_of(now);
        let earlier = {
            let mut minutes = self.usage.0.borrow_mut();
            match minutes.iter_mut().find(|known| known.reporter == reporter) {
                // Written this minute, so its token or machine stood then, and
                // a revocation since would have forgotten it.
                Some(this) if this.written == minute => {
                    this.gathered = Some(match this.gathered.take() {
                        Some(gathered) => gathered.then(call),
                        None => call,
                    });
                    None
                }
                Some(past) => Some(match past.gathered.take() {
                    Some(gathered) => gathered.then(call),
                    None => call,
                }),
                None => Some(call),
            }
        };
        let Some(call) = earlier else {
            let at = UnixTime((minute + 1) * 60);
            return self
                .schedule_sweep(at)
                .await
                .map_err(|e| Failure::Fault(e.into()));
        };
        let written = self.write_usage(call, now);
        {
            let mut minutes = self.usage.0.borrow_mut();
            minutes.retain(|known| known.reporter != reporter);
            if written.is_ok() {
                minutes.push(Minute {
                    reporter,
                    written: minute,
                    gathered: None,
                });
            }
        }
        written?;
        // The usage days are cut by the daily alarm (`tidy`), which a holder
        // whose only activity is its bouncers' reports would not have otherwise.
        self.schedule_sweep(now.plus(SECONDS_PER_DAY))
            .await
            .map_err(|e| Failure::Fault(e.into()))
    }

    /// What was gathered in minutes now over, written (from the alarm).
    pub(super) fn write_gathered_usage(&self, now: UnixTime) -> worker::Result<()> {
        let minute = minute_of(now);
        let due: Vec<RecordUsage> = {
            let mut minutes = self.usage.0.borrow_mut();
            let due = minutes
                .iter_mut()
                .filter(|known| known.written < minute)
                .filter_map(|known| {
                    let gathered = known.gathered.take()?;
                    known.written = minute;
                    Some(gathered)
                })
                .collect();
            // A reporter quiet since an earlier minute has nothing to gather.
            minutes.retain(|known| known.written == minute || known.gathered.is_some());
            due
        };
        for call in due {
            match self.write_usage(call, now) {
                // Revoked since: nothing of it is kept.
                Ok(()) | Err(Failure::Refused(_)) => {}
                Err(Failure::Fault(fault)) => return Err(format!("usage: {fault}").into()),
            }
        }
        Ok(())
    }

    /// A report kept on its feed token or machine in one visit.
    fn write_usage(&self, call: RecordUsage, now: UnixTime) -> Answered<()> {
        let store = HolderTables::new(&self.sql);
        let (kept, refusal) = match call {
            RecordUsage::Bouncer { token, report } => (
                store.record_bouncer_usage(&token, &report, now)?,
                HolderRefusal::FeedTokenRevoked,
            ),
            RecordUsage::Engine { machine, report } => (
                store.record_engine_usage(&machine, &report, now)?,
                HolderRefusal::MachineRevoked,
            ),
        };
        match kept {
            true => Ok(()),
            false => Err(Failure::Refused(refusal)),
        }
    }
}
