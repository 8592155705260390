//! A Cloudflare account's turns: at most one license's bulk operation at a
//! time. The turn is kept in storage, so that an evicted instance still knows
//! it; it lapses at its time, so that a holder's object that never ends its
//! turn (its license revoked mid-push) holds no one else up for long.

use worker::{durable_object, DurableObject, Env, Request, Response, Result, SqlStorage, State};

use super::protocol::{CloudflareAccountCall, CloudflareAccountProtocol, EndTurn, TakeTurn};
use crate::objects::protocol::{receive, Ask, Failure, Received};
use crate::objects::startup::Started;
use crate::platform::clock;
use crate::store::cloudflare_account::Turns;

#[durable_object]
pub struct CloudflareAccount {
    sql: SqlStorage,
    started: Started<()>,
}

impl DurableObject for CloudflareAccount {
    fn new(state: State, _env: Env) -> Self {
        Self {
            sql: state.storage().sql(),
            started: Started::default(),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        clock::adopt(&req)?;
        let call = match receive::<CloudflareAccountProtocol>(&mut req).await? {
            Received::Call(call) => call,
            Received::OtherShape(answer) => return Ok(answer),
        };
        self.started
            .get_or_start(|| async {
                Turns::new(&self.sql)
                    .migrate()
                    .map_err(|e| worker::Error::RustError(format!("schema: {e}")))
            })
            .await?;
        let turns = Turns::new(&self.sql);
        let now = clock::now().unix();
        match call {
            CloudflareAccountCall::TakeTurn(TakeTurn { license, until }) => TakeTurn::reply(
                turns
                    .take(license.as_str(), until, now)
                    .map_err(Failure::from),
            ),
            CloudflareAccountCall::EndTurn(EndTurn(license)) => {
                EndTurn::reply(turns.end(license.as_str()).map_err(Failure::from))
            }
        }
    }
}
