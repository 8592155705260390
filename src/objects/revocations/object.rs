//! The object that keeps the revocations still to be told to holders' objects: a
//! singleton. A license's record in KV is marked revoked first, and every path
//! consults it within the propagation bound; the holder's object is told too, so
//! that a login, which asks it, refuses at once. When telling it fails, the
//! revocation stays here and the alarm tries again until it succeeds.

use std::cell::Cell;

use worker::{durable_object, DurableObject, Env, Request, Response, Result, SqlStorage, State};

use super::protocol::{Notify, RevocationsCall, RevocationsProtocol};
use crate::domain::access::license::{notice_retry_seconds, LicenseId};
use crate::domain::time::UnixTime;
use crate::objects::holder::client::holder;
use crate::objects::holder::protocol::Revoke;
use crate::objects::protocol::{receive, Ask};
use crate::objects::startup::Started;
use crate::platform::clock;
use crate::store::revocations::PendingRevocations;
use crate::store::sql::SqlError;

/// Licenses one alarm tries at most; more are due at once after it.
const NOTICES_PER_ALARM: usize = 50;

#[durable_object]
pub struct Revocations {
    state: State,
    env: Env,
    sql: SqlStorage,
    /// Once this instance has brought its schema up to date.
    started: Started<()>,
    /// The test build's way to make the next notice fail, as an unreachable object would.
    fail_next_notice: Cell<bool>,
}

impl DurableObject for Revocations {
    fn new(state: State, env: Env) -> Self {
        let sql = state.storage().sql();
        Self {
            state,
            env,
            sql,
            started: Started::default(),
            fail_next_notice: Cell::new(false),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        clock::adopt(&req)?;
        let call = receive::<RevocationsProtocol>(&mut req).await?;
        self.started.get_or_start(|| self.start()).await?;
        let now = clock::now().unix();
        match call {
            RevocationsCall::Notify(Notify(license)) => {
                self.pending().add(&license, now).map_err(fault)?;
                self.tell(&license, 0, now).await?;
                Notify::reply(Ok(()))
            }
            #[cfg(feature = "test-hooks")]
            RevocationsCall::FailNextNotice(super::protocol::FailNextNotice) => {
                self.fail_next_notice.set(true);
                super::protocol::FailNextNotice::reply(Ok(()))
            }
            #[cfg(feature = "test-hooks")]
            RevocationsCall::RunAlarm(super::protocol::RunAlarm) => {
                DurableObject::alarm(self).await?;
                let left = self.pending().count().map_err(fault)?;
                super::protocol::RunAlarm::reply(Ok(left))
            }
        }
    }

    /// Tells the objects of the revocations that are due, each once.
    async fn alarm(&self) -> Result<Response> {
        self.started.get_or_start(|| self.start()).await?;
        let now = clock::now().unix();
        let due = self.pending().due(now, NOTICES_PER_ALARM).map_err(fault)?;
        for (license, attempts) in due {
            self.tell(&license, attempts, now).await?;
        }
        self.schedule().await?;
        Response::ok("told")
    }
}

impl Revocations {
    /// The schema brought up to date.
    async fn start(&self) -> Result<()> {
        self.pending().migrate().map_err(fault)
    }

    fn pending(&self) -> PendingRevocations<&SqlStorage> {
        PendingRevocations::new(&self.sql)
    }

    /// Tells the holder's object; on failure, leaves the revocation pending and
    /// makes sure the alarm comes back for it.
    async fn tell(&self, license: &LicenseId, attempts: u32, now: UnixTime) -> Result<()> {
        let told = if self.fail_next_notice.replace(false) {
            Err("the notice failed, made by the test hook".to_owned())
        } else {
            match holder(&self.env, license) {
                Ok(object) => object.ask(Revoke).await.map_err(|e| format!("{e:?}")),
                Err(e) => Err(e.to_string()),
            }
        };
        match told {
            Ok(()) => self.pending().told(license).map_err(fault),
            Err(why) => {
                worker::console_error!(
                    "revocation of {}: the holder's object was not told ({why}); trying again",
                    license.as_str()
                );
                let next = now.plus(notice_retry_seconds(attempts));
                self.pending().failed(license, next).map_err(fault)?;
                self.schedule().await
            }
        }
    }

    /// An alarm for the next revocation due, if any.
    async fn schedule(&self) -> Result<()> {
        if let Some(at) = self.pending().next_due().map_err(fault)? {
            let when = chrono::DateTime::from_timestamp(at.0 as i64, 0)
                .ok_or("alarm time out of range")?;
            self.state.storage().set_alarm(when).await?;
        }
        Ok(())
    }
}

fn fault(error: SqlError) -> worker::Error {
    worker::Error::RustError(format!("revocations storage: {error}"))
}
