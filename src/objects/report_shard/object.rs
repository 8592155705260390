//! The Durable Object that counts the reports of its share of the addresses. The
//! runtime runs one call at a time per object and a count never waits, so the
//! reports of one address, from however many holders at once, are counted exactly.
//! It sets its own alarm: `BATCH_SECONDS` after a count reached a consensus, and
//! for the next address to weigh again (a promotion whose reports would stop
//! making it, a license coming of age, a standing changed). The alarm weighs what
//! is due and tells the operator lists' object, in one batch, the addresses whose consensus
//! was reached (promotions) or lost since: a batch at most every
//! `BATCH_SECONDS` a shard, so that the operator lists' object's versions come at a bounded rate.

use std::cell::Cell;

use worker::{durable_object, DurableObject, Env, Request, Response, Result, SqlStorage, State};

use super::protocol::{
    Count, Dismiss, Forget, ReportShardCall, ReportShardProtocol, SetStanding, Tallies, TallyOf,
    MOST_REPORTERS, MOST_TALLIES,
};
use crate::domain::network::consensus::Consensus;
use crate::domain::time::UnixTime;
use crate::objects::operator_lists::client::operator_lists;
use crate::objects::operator_lists::protocol::Promote;
use crate::objects::protocol::{receive, Ask, Failure, Received};
use crate::objects::startup::Started;
use crate::platform::{clock, config};
use crate::store::report_shard::tally::Tally;
use crate::store::sql::SqlError;

fn stored(error: SqlError) -> worker::Error {
    worker::Error::RustError(format!("report shard: {error}"))
}

/// Seconds a shard gathers promotions before it tells the operator lists' object: the reports
/// that complete a consensus meanwhile go in the same batch.
const BATCH_SECONDS: u64 = 5;
/// Changes one batch tells the operator lists' object at most; more go in the next, at once.
const BATCH: u64 = 1_000;
/// Addresses one alarm weighs again at most; more are weighed by the next, at once.
const RECHECKS: u64 = 200;

#[durable_object(alarm)]
pub struct ReportShard {
    state: State,
    sql: SqlStorage,
    env: Env,
    /// The consensus's settings, once this instance has brought its schema up to date.
    started: Started<Consensus>,
    /// When the alarm is known to be set, so that most counts need not ask.
    alarm_at: Cell<Option<u64>>,
}

impl DurableObject for ReportShard {
    fn new(state: State, env: Env) -> Self {
        Self {
            sql: state.storage().sql(),
            state,
            env,
            started: Started::default(),
            alarm_at: Cell::new(None),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        clock::adopt(&req)?;
        let call = match receive::<ReportShardProtocol>(&mut req).await? {
            Received::Call(call) => call,
            Received::OtherShape(answer) => return Ok(answer),
        };
        let consensus = self.started.get_or_start(|| self.start()).await?;
        let now = clock::now().unix();
        let tally = Tally::new(&self.sql);
        match call {
            ReportShardCall::Count(Count {
                license,
                licensed_at,
                reports,
            }) => {
                let reached =
                    tally.count((license.as_str(), licensed_at), &reports, consensus, now);
                if reached.as_ref().is_ok_and(|reached| !reached.is_empty()) {
                    self.schedule(now.plus(BATCH_SECONDS)).await?;
                } else {
                    // A license on probation: weighed again when it comes of age.
                    self.schedule_next(&tally, now).await?;
                }
                Count::reply(reached.map_err(Failure::from))
            }
            ReportShardCall::Dismiss(Dismiss(ips)) => Dismiss::reply(
                ips.into_iter()
                    .try_for_each(|ip| tally.dismiss(ip, now))
                    .map_err(Failure::from),
            ),
            #[cfg(feature = "test-hooks")]
            ReportShardCall::RunAlarm(super::protocol::RunAlarm) => {
                self.state.storage().delete_alarm().await?;
                DurableObject::alarm(self).await?;
                super::protocol::RunAlarm::reply(Ok(()))
            }
            ReportShardCall::Forget(Forget(license)) => {
                let forgotten = tally.forget(license.as_str(), now);
                if forgotten.is_ok() {
                    self.schedule_next(&tally, now).await?;
                }
                Forget::reply(forgotten.map_err(Failure::from))
            }
            ReportShardCall::SetStanding(SetStanding { license, suspended }) => {
                let set = tally.set_standing(license.as_str(), suspended, now);
                if set.is_ok() {
                    self.schedule_next(&tally, now).await?;
                }
                SetStanding::reply(set.map(drop).map_err(Failure::from))
            }
            ReportShardCall::TallyOf(TallyOf(ip, shown)) => TallyOf::reply(
                tally
                    .of(ip, consensus, now, shown.min(MOST_REPORTERS))
                    .map_err(Failure::from),
            ),
            ReportShardCall::Tallies(Tallies(ips, shown)) => Tallies::reply(
                ips.into_iter()
                    .take(MOST_TALLIES)
                    .map(|ip| tally.of(ip, consensus, now, shown.min(MOST_REPORTERS)))
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(Failure::from),
            ),
        }
    }

    async fn alarm(&self) -> Result<Response> {
        self.alarm_at.set(None);
        let consensus = self.started.get_or_start(|| self.start()).await?;
        self.tell_writer(consensus).await?;
        Response::ok("told")
    }
}

impl ReportShard {
    /// Makes sure an alarm fires no later than `at`.
    async fn schedule(&self, at: UnixTime) -> Result<()> {
        if self.alarm_at.get().is_some_and(|set| set <= at.0) {
            return Ok(());
        }
        let storage = self.state.storage();
        let set = storage.get_alarm().await?.map(|ms| ms as u64 / 1000);
        if set.is_none_or(|set| set > at.0) {
            let when = chrono::DateTime::from_timestamp(at.0 as i64, 0)
                .ok_or("alarm time out of range")?;
            storage.set_alarm(when).await?;
            self.alarm_at.set(Some(at.0));
        } else {
            self.alarm_at.set(set);
        }
        Ok(())
    }

    /// Sets the alarm for what is next due, no earlier than a batch's gathering
    /// from now: what waits for the operator lists' object goes in one batch.
    async fn schedule_next(&self, tally: &Tally<&SqlStorage>, now: UnixTime) -> Result<()> {
        if let Some(at) = tally.next_due(now).map_err(stored)? {
            self.schedule(at.max(now.plus(BATCH_SECONDS))).await?;
        }
        Ok(())
    }

    /// Weighs again what is due (a batch of it); a batch of the pending changes
    /// goes to the operator lists' object, and is forgotten once it took them. The next alarm: at
    /// once while more is due or waits, else at the next address to weigh.
    async fn tell_writer(&self, consensus: Consensus) -> Result<()> {
        let now = clock::now().unix();
        let tally = Tally::new(&self.sql);
        let weighed = tally.recheck(consensus, now, RECHECKS).map_err(stored)?;
        let pending = tally.pending(BATCH).map_err(stored)?;
        if !pending.is_empty() {
            let (add, remove) = pending.iter().fold(
                (Vec::new(), Vec::new()),
                |(mut add, mut remove), &(ip, promote)| {
                    if promote {
                        add.push(ip.to_string());
                    } else {
                        remove.push(ip.to_string());
                    }
                    (add, remove)
                },
            );
            operator_lists(&self.env)
                .map_err(|e| worker::Error::RustError(e.to_string()))?
                .ask(Promote { add, remove })
                .await
                .map_err(|e| {
                    worker::Error::RustError(format!("the operator lists' object: {e:?}"))
                })?;
            tally.sent(&pending).map_err(stored)?;
        }
        let next = if weighed as u64 == RECHECKS {
            Some(now)
        } else {
            tally.next_due(now).map_err(stored)?
        };
        if let Some(at) = next {
            self.schedule(at).await?;
        }
        Ok(())
    }

    /// The schema brought up to date, and the consensus's settings.
    /// What an upgrade left to weigh (every promotion standing before it) is
    /// weighed by an alarm at once.
    async fn start(&self) -> Result<Consensus> {
        let tally = Tally::new(&self.sql);
        tally
            .migrate()
            .map_err(|e| format!("report shard schema: {e}"))?;
        let now = clock::now().unix();
        if let Some(at) = tally.next_due(now).map_err(stored)? {
            self.schedule(at.max(now)).await?;
        }
        Ok(config::object_settings(&self.env)
            .map_err(|e| e.0)?
            .consensus)
    }
}
