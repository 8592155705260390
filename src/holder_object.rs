//! The Durable Object that owns one license holder's personal list. The runtime
//! runs one request at a time per object, and `perform` never awaits, so the
//! read-check-write of an add or remove cannot interleave with another; its
//! writes commit together, before the answer leaves.

use std::cell::Cell;

use worker::{durable_object, DurableObject, Env, Request, Response, Result, SqlStorage, State};

use crate::domain::feed::FeedRequest;
use crate::domain::feed_token::NewFeedTokenRecord;
use crate::domain::holder::{perform, sweep, Answer, Call, Limits, ListStore, Operation};
use crate::domain::time::{UnixTime, SECONDS_PER_DAY};
use crate::store::holder_list::{migrate, SqlListStore};
use crate::store::holders::FEED_TOKEN_REVOKED;
use crate::store::sql::SqlError;
use crate::{clock, config};

/// Expired entries one alarm removes at most; when there are more, the next alarm runs at once.
const SWEEP_BATCH: usize = 1_000;

#[durable_object]
pub struct HolderList {
    state: State,
    sql: SqlStorage,
    /// The limits once the schema exists; a configuration or storage fault otherwise,
    /// answered as a 500 on every request rather than a panic at start.
    ready: std::result::Result<Limits, String>,
    /// When the next alarm is known to be set, so most requests need not ask.
    alarm_at: Cell<Option<u64>>,
    /// Whether the license is revoked, once read: every request of a holder comes
    /// through this one object, so the answer cannot go stale here.
    revoked: Cell<Option<bool>>,
}

impl DurableObject for HolderList {
    fn new(state: State, env: Env) -> Self {
        let sql = state.storage().sql();
        let ready = migrate(&sql)
            .map_err(|e| format!("schema: {e}"))
            .and_then(|_| config::settings(&env).map(|s| s.limits).map_err(|e| e.0));
        Self {
            state,
            sql,
            ready,
            alarm_at: Cell::new(None),
            revoked: Cell::new(None),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let limits = match &self.ready {
            Ok(limits) => *limits,
            Err(problem) => return Response::error(problem.clone(), 500),
        };
        // The last wait before the work: from here the operation runs without yielding, and
        // the alarm calls after it are storage operations, during which the runtime
        // delivers no other request to this object.
        clock::adopt(&req)?;
        let body = req.text().await?;
        let now = clock::now().unix();
        let mut store = SqlListStore::new(&self.sql);
        let path = req.path();
        if path == "/revoke" {
            store.revoke(now).map_err(fault)?;
            self.revoked.set(Some(true));
            return Response::from_json(&"revoked");
        }
        // A revoked license is refused here at once, whatever an edge cache still says.
        if self.is_revoked()? {
            return Response::error("revoked", 401);
        }
        match path.as_str() {
            "/calls" => {
                // Every call of a bulk request in one pass: nothing runs in between, and the
                // day's limits apply item by item in the order given.
                let calls: Vec<Call> = serde_json::from_str(&body)?;
                let answers = calls
                    .iter()
                    .map(|call| perform(&mut store, call, now, limits))
                    .collect::<std::result::Result<Vec<Answer>, SqlError>>()
                    .map_err(fault)?;
                // Adds and removes may leave something to sweep (an expiring entry, history); checks never do.
                let next = calls
                    .iter()
                    .filter(|call| call.operation != Operation::Check)
                    .map(|call| {
                        call.details
                            .expiry
                            .map_or(now.plus(SECONDS_PER_DAY), |expiry| expiry.at(now))
                    })
                    .min();
                if let Some(next) = next {
                    self.schedule_sweep(next).await?;
                }
                Response::from_json(&answers)
            }
            "/feed" => {
                let request: FeedRequest = serde_json::from_str(&body)?;
                if let Some(token) = &request.token {
                    if !store.touch_feed_token(token, now).map_err(fault)? {
                        return Response::error(FEED_TOKEN_REVOKED, 401);
                    }
                }
                // Entries past their expiry leave the list, and enter the history, before it is read.
                while sweep(&mut store, now, SWEEP_BATCH).map_err(fault)? == SWEEP_BATCH {}
                Response::from_json(&store.feed(&request, now).map_err(fault)?)
            }
            "/feed_tokens/create" => {
                let token: NewFeedTokenRecord = serde_json::from_str(&body)?;
                Response::from_json(&store.create_feed_token(&token, now).map_err(fault)?)
            }
            "/usage" => Response::from_json(&store.usage().map_err(fault)?),
            "/feed_tokens/list" => Response::from_json(&store.feed_tokens().map_err(fault)?),
            "/feed_tokens/revoke" => Response::from_json(
                &store
                    .revoke_feed_token(&serde_json::from_str::<String>(&body)?)
                    .map_err(fault)?,
            ),
            "/list" => Response::from_json(
                &store
                    .list(&serde_json::from_str(&body)?, now)
                    .map_err(fault)?,
            ),
            "/history" => Response::from_json(
                &store
                    .history(&serde_json::from_str(&body)?)
                    .map_err(fault)?,
            ),
            #[cfg(feature = "test-hooks")]
            "/__test/alarm" => {
                DurableObject::alarm(self).await?;
                Response::from_json(&"ran")
            }
            path => Response::error(format!("no such holder route: {path}"), 404),
        }
    }

    /// Deletes a batch of expired entries (recording each in the history); when that
    /// was the last batch, drops old history and sets the next alarm for the next
    /// expiry or a day from now, else runs again at once.
    async fn alarm(&self) -> Result<Response> {
        self.alarm_at.set(None);
        let mut store = SqlListStore::new(&self.sql);
        let now = clock::now().unix();
        let next = if sweep(&mut store, now, SWEEP_BATCH).map_err(fault)? == SWEEP_BATCH {
            Some(now)
        } else {
            store.tidy(now).map_err(fault)?
        };
        if let Some(at) = next {
            self.schedule_sweep(at).await?;
        }
        Response::ok("swept")
    }
}

impl HolderList {
    fn is_revoked(&self) -> Result<bool> {
        if let Some(revoked) = self.revoked.get() {
            return Ok(revoked);
        }
        let revoked = SqlListStore::new(&self.sql).is_revoked().map_err(fault)?;
        self.revoked.set(Some(revoked));
        Ok(revoked)
    }

    /// Makes sure an alarm fires no later than `at`.
    async fn schedule_sweep(&self, at: UnixTime) -> Result<()> {
        let storage = self.state.storage();
        if self.alarm_at.get().is_none() {
            self.alarm_at
                .set(storage.get_alarm().await?.map(|ms| ms as u64 / 1000));
        }
        if self.alarm_at.get().is_none_or(|scheduled| scheduled > at.0) {
            let when = chrono::DateTime::from_timestamp(at.0 as i64, 0)
                .ok_or("alarm time out of range")?;
            storage.set_alarm(when).await?;
            self.alarm_at.set(Some(at.0));
        }
        Ok(())
    }
}

fn fault(error: SqlError) -> worker::Error {
    worker::Error::RustError(format!("holder storage: {error}"))
}
