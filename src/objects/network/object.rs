//! The Durable Object that counts the reports of its share of the addresses. The
//! runtime runs one call at a time per object and a count never waits, so the
//! reports of one address, from however many holders at once, are counted exactly.
//! Its alarm tells the lists' writer, in one batch, the addresses whose consensus
//! was reached (promotions) or decayed since: a batch at most every
//! `BATCH_SECONDS` a shard, so that the writer's versions come at a bounded rate.

use worker::{durable_object, DurableObject, Env, Request, Response, Result, SqlStorage, State};

use super::protocol::{
    Count, Dismiss, Forget, ReportsCall, ReportsProtocol, TallyOf, MOST_REPORTERS,
};
use crate::domain::network::consensus::Consensus;
use crate::domain::time::UnixTime;
use crate::objects::operator_lists::client::writer;
use crate::objects::operator_lists::protocol::Promote;
use crate::objects::protocol::{receive, Ask, Failure, Received};
use crate::objects::startup::Started;
use crate::platform::{clock, config};
use crate::store::network::tally::Tally;

/// Seconds a shard gathers promotions before it tells the writer: the reports
/// that complete a consensus meanwhile go in the same batch.
const BATCH_SECONDS: u64 = 5;
/// Changes one batch tells the writer at most; more go in the next, at once.
const BATCH: u64 = 1_000;

#[durable_object(alarm)]
pub struct ReportShard {
    state: State,
    sql: SqlStorage,
    env: Env,
    /// The consensus's settings, once this instance has brought its schema up to date.
    started: Started<Consensus>,
}

impl DurableObject for ReportShard {
    fn new(state: State, env: Env) -> Self {
        Self {
            sql: state.storage().sql(),
            state,
            env,
            started: Started::default(),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        clock::adopt(&req)?;
        let call = match receive::<ReportsProtocol>(&mut req).await? {
            Received::Call(call) => call,
            Received::OtherShape(answer) => return Ok(answer),
        };
        let consensus = self.started.get_or_start(|| self.start()).await?;
        let now = clock::now().unix();
        let tally = Tally::new(&self.sql);
        match call {
            ReportsCall::Count(Count { license, reports }) => {
                let reached = tally.count(&license, &reports, consensus, now);
                if reached.as_ref().is_ok_and(|reached| !reached.is_empty()) {
                    self.schedule(now.plus(BATCH_SECONDS)).await?;
                }
                Count::reply(reached.map_err(Failure::from))
            }
            ReportsCall::Dismiss(Dismiss(ips)) => Dismiss::reply(
                ips.into_iter()
                    .try_for_each(|ip| tally.dismiss(ip, now))
                    .map_err(Failure::from),
            ),
            #[cfg(feature = "test-hooks")]
            ReportsCall::RunAlarm(super::protocol::RunAlarm) => {
                self.state.storage().delete_alarm().await?;
                DurableObject::alarm(self).await?;
                super::protocol::RunAlarm::reply(Ok(()))
            }
            ReportsCall::Forget(Forget(license)) => {
                Forget::reply(tally.forget(&license, now).map_err(Failure::from))
            }
            ReportsCall::TallyOf(TallyOf(ip, shown)) => TallyOf::reply(
                tally
                    .of(ip, consensus, now, shown.min(MOST_REPORTERS))
                    .map_err(Failure::from),
            ),
        }
    }

    async fn alarm(&self) -> Result<Response> {
        let consensus = self.started.get_or_start(|| self.start()).await?;
        self.tell_writer(consensus).await?;
        Response::ok("told")
    }
}

impl ReportShard {
    /// Makes sure an alarm fires no later than `at`.
    async fn schedule(&self, at: UnixTime) -> Result<()> {
        let storage = self.state.storage();
        let set = storage.get_alarm().await?.map(|ms| ms as u64 / 1000);
        if set.is_none_or(|set| set > at.0) {
            let when = chrono::DateTime::from_timestamp(at.0 as i64, 0)
                .ok_or("alarm time out of range")?;
            storage.set_alarm(when).await?;
        }
        Ok(())
    }

    /// What decayed goes to the pending changes; a batch of them goes to the
    /// writer, and is forgotten once it took them. The next alarm: at once while
    /// changes wait, else when the earliest consensus decays.
    async fn tell_writer(&self, consensus: Consensus) -> Result<()> {
        let now = clock::now().unix();
        let tally = Tally::new(&self.sql);
        let stored =
            |e: crate::store::sql::SqlError| worker::Error::RustError(format!("report shard: {e}"));
        tally.decay(consensus, now, BATCH).map_err(stored)?;
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
            writer(&self.env)
                .map_err(|e| worker::Error::RustError(e.to_string()))?
                .ask(Promote { add, remove })
                .await
                .map_err(|e| worker::Error::RustError(format!("the lists' writer: {e:?}")))?;
            tally.sent(&pending).map_err(stored)?;
        }
        let next = if tally.has_pending().map_err(stored)? {
            Some(now)
        } else {
            tally.next_decay(consensus).map_err(stored)?
        };
        if let Some(at) = next {
            self.schedule(at).await?;
        }
        Ok(())
    }

    /// The schema brought up to date, and the consensus's settings.
    async fn start(&self) -> Result<Consensus> {
        Tally::new(&self.sql)
            .migrate()
            .map_err(|e| format!("report shard schema: {e}"))?;
        Ok(config::object_settings(&self.env)
            .map_err(|e| e.0)?
            .consensus)
    }
}
