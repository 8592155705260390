//! The object that revokes licenses: a singleton. A revocation is in force once
//! the license's record in KV is marked revoked, which every path consults
//! within the propagation bound, and this object writes it first, itself: no
//! call into the directory comes before it, so nothing that keeps the directory
//! busy holds a revocation up. Then the holder's object is told, so that a login,
//! which asks it, refuses at once, and the directory files the revocation (the
//! license's row, and the audit row, at the time it was made). When either
//! fails, it stays here and the alarm tries again until it succeeds. The
//! holder's allow-list flag is the other thing a license's record says, and is
//! written here too, so that the record's one writer never writes one over the
//! other.

use std::cell::Cell;

use futures_util::lock::Mutex;
use worker::{durable_object, DurableObject, Env, Request, Response, Result, SqlStorage, State};

use super::protocol::{
    MarkAllowList, RevocationsCall, RevocationsProtocol, RevocationsRefusal, Revoke,
};
use crate::domain::access::license::{notice_retry_seconds, LicenseId};
use crate::domain::time::UnixTime;
use crate::objects::directory::client::directory;
use crate::objects::directory::protocol::FileRevocation;
use crate::objects::holder::client::holder;
use crate::objects::holder::protocol::Revoke as RevokeHolder;
use crate::objects::protocol::{receive, Ask, Failure, Received};
use crate::objects::startup::Started;
use crate::platform::clock;
use crate::store::licenses;
use crate::store::revocations::{Filing, PendingRevocations};
use crate::store::sql::SqlError;

/// Licenses one alarm tries at most, of notices and of filings each; more are
/// due at once after it.
const NOTICES_PER_ALARM: usize = 50;

/// What a call comes to: its answer, or the refusal or fault that stops it.
type Answered<T> = std::result::Result<T, Failure<RevocationsRefusal>>;

#[durable_object(alarm)]
pub struct Revocations {
    state: State,
    env: Env,
    sql: SqlStorage,
    /// Once this instance has brought its schema up to date.
    started: Started<()>,
    /// Held across each read and write of a license's record in KV: a record is
    /// read, changed and written whole, and the runtime delivers other calls
    /// while KV answers, so without it a revocation could be written over.
    records: Mutex<()>,
    /// The test build's way to make the next notice fail, as an unreachable object would.
    fail_next_notice: Cell<bool>,
    /// The test build's way to make filings fail, as an unreachable directory would.
    failing_filings: Cell<bool>,
    /// The test build's way to hold allow-list markings, and how many wait.
    #[cfg(feature = "test-hooks")]
    holding_marks: Cell<bool>,
    #[cfg(feature = "test-hooks")]
    marks_waiting: Cell<u32>,
}

impl DurableObject for Revocations {
    fn new(state: State, env: Env) -> Self {
        let sql = state.storage().sql();
        Self {
            state,
            env,
            sql,
            started: Started::default(),
            records: Mutex::new(()),
            fail_next_notice: Cell::new(false),
            failing_filings: Cell::new(false),
            #[cfg(feature = "test-hooks")]
            holding_marks: Cell::new(false),
            #[cfg(feature = "test-hooks")]
            marks_waiting: Cell::new(0),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        clock::adopt(&req)?;
        let call = match receive::<RevocationsProtocol>(&mut req).await? {
            Received::Call(call) => call,
            Received::OtherShape(answer) => return Ok(answer),
        };
        self.started.get_or_start(|| self.start()).await?;
        match call {
            RevocationsCall::Revoke(call) => Revoke::reply(self.revoke(call).await),
            RevocationsCall::MarkAllowList(call) => {
                MarkAllowList::reply(self.mark_allow_list(call).await)
            }
            #[cfg(feature = "test-hooks")]
            RevocationsCall::FailNextNotice(super::protocol::FailNextNotice) => {
                self.fail_next_notice.set(true);
                super::protocol::FailNextNotice::reply(Ok(()))
            }
            #[cfg(feature = "test-hooks")]
            RevocationsCall::FailFilings(super::protocol::FailFilings(failing)) => {
                self.failing_filings.set(failing);
                super::protocol::FailFilings::reply(Ok(()))
            }
            #[cfg(feature = "test-hooks")]
            RevocationsCall::HoldMarks(super::protocol::HoldMarks(hold)) => {
                self.holding_marks.set(hold);
                super::protocol::HoldMarks::reply(Ok(self.marks_waiting.get()))
            }
            #[cfg(feature = "test-hooks")]
            RevocationsCall::RunAlarm(super::protocol::RunAlarm) => {
                DurableObject::alarm(self).await?;
                let left = self.pending().count().map_err(fault)?;
                super::protocol::RunAlarm::reply(Ok(left))
            }
        }
    }

    /// Tells the objects and files the revocations that are due, each once.
    async fn alarm(&self) -> Result<Response> {
        self.started.get_or_start(|| self.start()).await?;
        let now = clock::now().unix();
        let due = self.pending().due(now, NOTICES_PER_ALARM).map_err(fault)?;
        for (license, attempts) in due {
            self.tell(&license, attempts, now).await?;
        }
        let due = self
            .pending()
            .due_filings(now, NOTICES_PER_ALARM)
            .map_err(fault)?;
        for filing in due {
            self.file(filing, now).await?;
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

    /// The record first, then the holder's object and the directory, each kept
    /// here to try again when it fails.
    async fn revoke(&self, Revoke { license, by }: Revoke) -> Answered<()> {
        let now = clock::now();
        let revoked = {
            let _record = self.records.lock().await;
            licenses::revoke(&self.env, &license, now.unix()).await?
        };
        if !revoked {
            return Err(Failure::Refused(RevocationsRefusal::NoSuchLicense));
        }
        let pending = self.pending();
        pending.add(&license, now.unix()).map_err(fault)?;
        pending
            .add_filing(&license, (now.0, &by), now.unix())
            .map_err(fault)?;
        self.tell(&license, 0, now.unix()).await?;
        let filing = Filing {
            license,
            at: now.0,
            by,
            attempts: 0,
        };
        self.file(filing, now.unix()).await?;
        Ok(())
    }

    /// A holder's allow-list flag on its license's record, which every request
    /// reads with the license's standing.
    async fn mark_allow_list(&self, call: MarkAllowList) -> Answered<()> {
        #[cfg(feature = "test-hooks")]
        self.wait_while_marks_held().await;
        let _record = self.records.lock().await;
        let marked =
            licenses::mark_allow_list(&self.env, &call.license, call.allow_list, call.version)
                .await?;
        if marked {
            Ok(())
        } else {
            Err(Failure::Refused(RevocationsRefusal::NoSuchLicense))
        }
    }

    /// A marking held by the test hook waits here, other calls coming in meanwhile.
    #[cfg(feature = "test-hooks")]
    async fn wait_while_marks_held(&self) {
        if !self.holding_marks.get() {
            return;
        }
        self.marks_waiting.set(self.marks_waiting.get() + 1);
        while self.holding_marks.get() {
            worker::Delay::from(std::time::Duration::from_millis(10)).await;
        }
        self.marks_waiting.set(self.marks_waiting.get() - 1);
    }

    /// Tells the holder's object; on failure, leaves the revocation pending and
    /// makes sure the alarm comes back for it.
    async fn tell(&self, license: &LicenseId, attempts: u32, now: UnixTime) -> Result<()> {
        let told = if self.fail_next_notice.replace(false) {
            Err("the notice failed, made by the test hook".to_owned())
        } else {
            match holder(&self.env, license) {
                Ok(object) => object.ask(RevokeHolder).await.map_err(|e| format!("{e:?}")),
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

    /// Files the revocation in the directory (its row and its audit row, once,
    /// at the time it was made); on failure, keeps it and makes sure the alarm
    /// comes back for it.
    async fn file(&self, filing: Filing, now: UnixTime) -> Result<()> {
        let Filing {
            license,
            at,
            by,
            attempts,
        } = filing;
        let filed = if self.failing_filings.get() {
            Err("the directory failed, made by the test hook".to_owned())
        } else {
            let call = FileRevocation {
                license: license.clone(),
                at,
                by,
            };
            match directory(&self.env) {
                Ok(object) => object.ask(call).await.map_err(|e| format!("{e:?}")),
                Err(e) => Err(e.to_string()),
            }
        };
        match filed {
            Ok(()) => self.pending().filed(&license).map_err(fault),
            Err(why) => {
                worker::console_error!(
                    "revocation of {}: the directory did not file it ({why}); trying again",
                    license.as_str()
                );
                let next = now.plus(notice_retry_seconds(attempts));
                self.pending()
                    .filing_failed(&license, next)
                    .map_err(fault)?;
                self.schedule().await
            }
        }
    }

    /// An alarm for the next notice or filing due, if any.
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
