//! The Durable Object that counts the reports of its share of the addresses. The
//! runtime runs one call at a time per object and a count never waits, so the
//! reports of one address, from however many holders at once, are counted exactly.

use worker::{durable_object, DurableObject, Env, Request, Response, Result, SqlStorage, State};

use super::protocol::{Count, Forget, ReportsCall, ReportsProtocol, TallyOf};
use crate::domain::network::consensus::Consensus;
use crate::objects::protocol::{receive, Ask, Failure};
use crate::objects::startup::Started;
use crate::platform::{clock, config};
use crate::store::network::tally::Tally;

/// Reporters the operator's lookup shows at most, the most recent first.
const REPORTERS_SHOWN: u64 = 100;

#[durable_object]
pub struct ReportShard {
    sql: SqlStorage,
    env: Env,
    /// The consensus's settings, once this instance has brought its schema up to date.
    started: Started<Consensus>,
}

impl DurableObject for ReportShard {
    fn new(state: State, env: Env) -> Self {
        Self {
            sql: state.storage().sql(),
            env,
            started: Started::default(),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        clock::adopt(&req)?;
        let call = receive::<ReportsProtocol>(&mut req).await?;
        let consensus = self.started.get_or_start(|| self.start()).await?;
        let now = clock::now().unix();
        let tally = Tally::new(&self.sql);
        match call {
            ReportsCall::Count(Count { license, reports }) => Count::reply(
                tally
                    .count(&license, &reports, consensus, now)
                    .map_err(Failure::from),
            ),
            ReportsCall::Forget(Forget(license)) => {
                Forget::reply(tally.forget(&license, now).map_err(Failure::from))
            }
            ReportsCall::TallyOf(TallyOf(ip)) => TallyOf::reply(
                tally
                    .of(ip, consensus, now, REPORTERS_SHOWN)
                    .map_err(Failure::from),
            ),
        }
    }
}

impl ReportShard {
    /// The schema brought up to date, and the consensus's settings.
    async fn start(&self) -> Result<Consensus> {
        Tally::new(&self.sql)
            .migrate()
            .map_err(|e| format!("report shard schema: {e}"))?;
        Ok(config::settings(&self.env).map_err(|e| e.0)?.consensus)
    }
}
