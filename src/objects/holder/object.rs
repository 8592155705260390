//! The Durable Object that owns one license holder's personal list. The runtime
//! runs one request at a time per object, and `perform` never awaits, so the
//! read-check-write of an add or remove cannot interleave with another; its
//! writes commit together, before the answer leaves.
//!
//! Here: the object, its start, the dispatch of each call, the list's
//! operations and the alarm. The reports and the license's standing in the
//! network are in `object/reports.rs`, a CrowdSec engine's alerts in
//! `object/alerts.rs`, the holder's allow list in `object/allow.rs`, the
//! feed's part and a bouncer's live lookup in `object/feed.rs`, and the usage
//! reports of its bouncers and engines in `object/usage.rs`.

use std::cell::{Cell, RefCell};

use worker::{durable_object, DurableObject, Env, Request, Response, Result, SqlStorage, State};

use super::protocol::{
    Activity, AddressListing, AdmitLicense, AllowPage, AllowPerform, ChangeMachine,
    CloudflareConnect, CloudflareDisconnect, CloudflareState, CreateFeedToken, CreateMachine,
    EntryPage, Feed, FeedTokens, History, HolderCall, HolderProtocol, HolderRefusal, HolderSummary,
    LiveLookup, Machines, Perform, RecordMachineLogin, RecordUsage, Report, Revoke,
    RevokeFeedToken, RevokeMachine, SetNetwork, Summary, TakeAlerts, Usage, WhyListed,
};
use crate::domain::cloudflare::link::Link;
use crate::domain::holder::activity::last_days;
use crate::domain::holder::allow::AllowSet;
use crate::domain::holder::entry::Entry;
use crate::domain::holder::list::{perform, sweep, Limits, ListAnswer, ListStore, Operation};
use crate::domain::machines::credentials::MachineSettings;
use crate::domain::net::address::{Ipv6Prefix, Listed, PublicIp};
use crate::domain::precedence::{weigh_then_perform, Holding};
use crate::domain::settings::Freshness;
use crate::domain::time::{UnixTime, SECONDS_PER_DAY};
use crate::objects::protocol::{receive, refuse, Ask, AskStream, Failure, Received};
use crate::objects::startup::Started;
use crate::platform::{clock, config};
use crate::store::holder::list::HolderTables;
use crate::store::holder::schema::migrate;
use crate::store::sql::SqlError;

/// Expired entries one alarm, or one feed read, removes at most; when there are
/// more, the next alarm runs at once.
const SWEEP_BATCH: usize = 1_000;
mod alerts;
mod allow;
mod cloudflare;
mod feed;
mod reports;
mod usage;

use usage::{GatheredUsage, UsageReporter};

/// What a call comes to: its answer, or the refusal or fault that stops it.
type Answered<T> = std::result::Result<T, Failure<HolderRefusal>>;

/// What the object runs under, from the settings.
#[derive(Clone, Copy)]
struct Ready {
    limits: Limits,
    /// Records in one page of a feed.
    page: usize,
    /// How long the operator's lists' snapshots are held (the Cloudflare list weighs them).
    freshness: Freshness,
}

#[durable_object(alarm)]
pub struct HolderList {
    state: State,
    sql: SqlStorage,
    /// The settings, once this instance has brought its schema up to date.
    started: Started<Ready>,
    env: Env,
    /// When the next alarm is known to be set, so most requests need not ask.
    alarm_at: Cell<Option<u64>>,
    /// Whether the license is revoked, once read: every request of a holder comes
    /// through this one object, so the answer cannot go stale here.
    revoked: Cell<Option<bool>>,
    /// The holder's allow list, once read: every change of it is made here.
    allow: RefCell<Option<AllowSet>>,
    /// Whether reports are on their way to the shards.
    sending: Cell<bool>,
    /// Usage reports past the first of their minute, not yet written.
    usage: GatheredUsage,
    /// The holder's Cloudflare link, once read: every change of it is made here.
    cloudflare: RefCell<Option<Option<Link>>>,
    /// The items a reading of the holder's Cloudflare list saw so far, as hashes.
    seen: RefCell<Option<std::collections::HashSet<u64>>>,
    /// When the operator's lists' versions were last looked at for that list;
    /// kept in memory only, so that a look that finds nothing writes nothing
    /// (an instance evicted looks again at once).
    operator_look: Cell<Option<UnixTime>>,
    /// Whether the next pull told to ask again is followed by another (`PulledElsewhere`).
    #[cfg(feature = "test-hooks")]
    pulled_elsewhere: Cell<bool>,
    /// The address the next pull adds before it reads the list (`AddBeforePull`).
    #[cfg(feature = "test-hooks")]
    add_before_pull: Cell<Option<crate::domain::net::address::PublicIp>>,
}

impl DurableObject for HolderList {
    fn new(state: State, env: Env) -> Self {
        let sql = state.storage().sql();
        Self {
            state,
            sql,
            started: Started::default(),
            env,
            alarm_at: Cell::new(None),
            revoked: Cell::new(None),
            allow: RefCell::new(None),
            sending: Cell::new(false),
            usage: GatheredUsage::default(),
            cloudflare: RefCell::new(None),
            seen: RefCell::new(None),
            operator_look: Cell::new(None),
            #[cfg(feature = "test-hooks")]
            pulled_elsewhere: Cell::new(false),
            #[cfg(feature = "test-hooks")]
            add_before_pull: Cell::new(None),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let ready = self.started.get_or_start(|| self.start()).await?;
        clock::adopt(&req)?;
        // The last wait before the work: from here a call runs without yielding, and the
        // alarm calls after it are storage operations, during which the runtime delivers
        // no other request to this object.
        let call = match receive::<HolderProtocol>(&mut req).await? {
            Received::Call(call) => call,
            Received::OtherShape(answer) => return Ok(answer),
        };
        let now = clock::now().unix();
        // A revoked license is refused here at once, whatever an edge cache still says.
        let operators = matches!(
            call,
            HolderCall::Revoke(_)
                | HolderCall::Summary(_)
                | HolderCall::WhyListed(_)
                | HolderCall::SetNetwork(_)
        );
        // The runtime runs a revoked holder's alarm too: so does the tests' hook.
        #[cfg(feature = "test-hooks")]
        let operators =
            operators || matches!(call, HolderCall::RunAlarm(_) | HolderCall::AlarmAt(_));
        if !operators && self.is_revoked()? {
            return refuse::<HolderProtocol>(HolderRefusal::LicenseRevoked);
        }
        let store = HolderTables::new(&self.sql);
        match call {
            HolderCall::Perform(Perform(calls)) => {
                Perform::reply(self.perform(&calls, now, ready.limits).await)
            }
            HolderCall::Report(call) => Report::reply(self.report(call, now, ready.limits).await),
            HolderCall::AllowPerform(call) => {
                AllowPerform::reply(self.allow_perform(call, now, ready.limits).await)
            }
            HolderCall::AllowPage(AllowPage(query)) => {
                AllowPage::reply(stored(store.allow_page(&query)))
            }
            HolderCall::EntryPage(EntryPage(query)) => {
                EntryPage::reply(stored(store.list(&query, now)))
            }
            HolderCall::History(History(query)) => History::reply(stored(store.history(&query))),
            HolderCall::Usage(Usage) => Usage::reply(stored(store.usage())),
            HolderCall::Activity(Activity) => {
                let today = now.utc_day();
                Activity::reply(stored(store.activity(today)).map(|rows| last_days(&rows, today)))
            }
            HolderCall::Feed(feed) => Feed::reply(self.feed(feed, now, ready.page).await),
            HolderCall::CreateFeedToken(CreateFeedToken(token)) => {
                CreateFeedToken::reply(match store.create_feed_token(&token, now) {
                    Ok(true) => Ok(()),
                    Ok(false) => Err(Failure::Refused(HolderRefusal::TooManyFeedTokens)),
                    Err(fault) => Err(fault.into()),
                })
            }
            HolderCall::FeedTokens(FeedTokens) => FeedTokens::reply(stored(store.feed_tokens(now))),
            HolderCall::LiveLookup(lookup) => LiveLookup::reply(self.lookup(&lookup, now)),
            HolderCall::RevokeFeedToken(RevokeFeedToken(id)) => {
                self.usage.forget(&UsageReporter::Token(id.clone()));
                RevokeFeedToken::reply(stored(store.revoke_feed_token(&id)))
            }
            HolderCall::Revoke(Revoke) => Revoke::reply(self.revoke(now).await),
            // A revoked license was refused above.
            HolderCall::AdmitLicense(AdmitLicense) => AdmitLicense::reply(Ok(())),
            HolderCall::Summary(Summary) => Summary::reply(stored(picture(&store, now))),
            HolderCall::SetNetwork(SetNetwork {
                license,
                suspended,
                by,
            }) => {
                let known = store.know_license(&license, UnixTime::default());
                SetNetwork::reply(match known {
                    Ok(()) => self.set_network(suspended, &by, now).await,
                    Err(fault) => Err(fault.into()),
                })
            }
            HolderCall::WhyListed(WhyListed(ip)) => WhyListed::reply(self.why_held(ip, now)),
            HolderCall::CreateMachine(CreateMachine(machine)) => {
                let defaults = MachineSettings::default();
                CreateMachine::reply(match store.create_machine(&machine, defaults, now) {
                    Ok(true) => Ok(()),
                    Ok(false) => Err(Failure::Refused(HolderRefusal::TooManyMachines)),
                    Err(fault) => Err(fault.into()),
                })
            }
            HolderCall::Machines(Machines) => Machines::reply(stored(store.machines())),
            HolderCall::ChangeMachine(ChangeMachine { id, change }) => {
                ChangeMachine::reply(stored(store.change_machine(&id, &change)))
            }
            HolderCall::RevokeMachine(RevokeMachine(id)) => {
                self.usage.forget(&UsageReporter::Machine(id.clone()));
                RevokeMachine::reply(stored(store.revoke_machine(&id)))
            }
            HolderCall::RecordMachineLogin(RecordMachineLogin { id, scenarios }) => {
                RecordMachineLogin::reply(match store.record_login(&id, &scenarios, now) {
                    Ok(true) => Ok(()),
                    Ok(false) => Err(Failure::Refused(HolderRefusal::MachineRevoked)),
                    Err(fault) => Err(fault.into()),
                })
            }
            HolderCall::TakeAlerts(call) => {
                TakeAlerts::reply(self.take_alerts(call, now, ready.limits).await)
            }
            HolderCall::RecordUsage(call) => RecordUsage::reply(self.record_usage(call, now).await),
            HolderCall::CloudflareConnect(CloudflareConnect { license, connect }) => {
                CloudflareConnect::reply(self.cloudflare_connect(&license, connect, now).await)
            }
            HolderCall::CloudflareState(CloudflareState) => {
                CloudflareState::reply(self.cloudflare_status())
            }
            HolderCall::CloudflareDisconnect(CloudflareDisconnect { delete_list }) => {
                CloudflareDisconnect::reply(self.cloudflare_disconnect(delete_list).await)
            }
            #[cfg(feature = "test-hooks")]
            HolderCall::WasmMemory(super::protocol::WasmMemory) => {
                super::protocol::WasmMemory::reply(Ok(crate::platform::memory::wasm_bytes()))
            }
            #[cfg(feature = "test-hooks")]
            HolderCall::Panic(super::protocol::Panic) => panic!("a panic the tests asked for"),
            #[cfg(feature = "test-hooks")]
            HolderCall::PulledElsewhere(super::protocol::PulledElsewhere) => {
                self.pulled_elsewhere.set(true);
                super::protocol::PulledElsewhere::reply(Ok(()))
            }
            #[cfg(feature = "test-hooks")]
            HolderCall::AddBeforePull(super::protocol::AddBeforePull { ip }) => {
                self.add_before_pull.set(Some(ip));
                super::protocol::AddBeforePull::reply(Ok(()))
            }
            #[cfg(feature = "test-hooks")]
            HolderCall::Meter(super::protocol::Meter) => super::protocol::Meter::reply(
                crate::platform::meter::reading().map_err(Failure::from),
            ),
            #[cfg(feature = "test-hooks")]
            HolderCall::RunAlarm(super::protocol::RunAlarm) => {
                // As when the runtime fires it: the alarm that runs is no longer set.
                self.state.storage().delete_alarm().await?;
                DurableObject::alarm(self).await?;
                super::protocol::RunAlarm::reply(Ok(()))
            }
            #[cfg(feature = "test-hooks")]
            HolderCall::AlarmAt(super::protocol::AlarmAt) => {
                let at = self.state.storage().get_alarm().await?;
                super::protocol::AlarmAt::reply(Ok(at.map(|ms| ms as u64 / 1000)))
            }
        }
    }

    /// Deletes a batch of expired entries (recording each in the history); when that
    /// was the last batch, drops old history and sets the next alarm for the next
    /// expiry or a day from now, else runs again at once.
    async fn alarm(&self) -> Result<Response> {
        self.started.get_or_start(|| self.start()).await?;
        self.alarm_at.set(None);
        let more_reports = self.send_reports().await?;
        let now = clock::now().unix();
        self.write_gathered_usage(now)?;
        let mut store = HolderTables::new(&self.sql);
        let swept = sweep(&mut store, now, SWEEP_BATCH).map_err(fault)?;
        let next = if more_reports || swept == SWEEP_BATCH {
            Some(now)
        } else {
            store.tidy(now).map_err(fault)?
        };
        if swept > 0 {
            self.cloudflare_changed(now).await.map_err(failure)?;
        }
        let pushed = self.cloudflare_sync(now).await.map_err(failure)?;
        let next = match (next, pushed) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(at) = next {
            self.schedule_sweep(at).await?;
        }
        Response::ok("swept")
    }
}

impl HolderList {
    /// The schema brought up to date, and the settings the object runs under.
    async fn start(&self) -> Result<Ready> {
        migrate(&self.sql).map_err(|e| format!("schema: {e}"))?;
        let settings = config::object_settings(&self.env).map_err(|e| e.0)?;
        Ok(Ready {
            limits: settings.limits,
            page: settings.page_entries,
            freshness: settings.freshness,
        })
    }

    /// Every call of a bulk request in one pass: nothing runs in between, and the
    /// day's limits apply item by item in the order given.
    async fn perform(
        &self,
        calls: &[crate::domain::holder::list::ListCall],
        now: UnixTime,
        limits: Limits,
    ) -> Answered<Vec<ListAnswer>> {
        let answers = self.weigh_and_perform(calls, now, limits)?;
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
            self.schedule_sweep(next)
                .await
                .map_err(|e| Failure::Fault(e.into()))?;
            self.cloudflare_changed(now).await?;
        }
        Ok(answers)
    }

    /// Each call weighed by the lists this object keeps, the holder's allow list
    /// before the personal list, without a wait: no borrow of the allow list
    /// outlives it, and nothing runs in between.
    fn weigh_and_perform(
        &self,
        calls: &[crate::domain::holder::list::ListCall],
        now: UnixTime,
        limits: Limits,
    ) -> Answered<Vec<ListAnswer>> {
        let mut store = HolderTables::new(&self.sql);
        let allow = self.allow_set()?;
        let answers = calls.iter().map(|call| {
            let holding = Holding {
                global_challenge: call.global_challenge,
                own_allow: allow.holds_ip(call.ip),
            };
            weigh_then_perform(
                call.operation,
                holding,
                |list| {
                    let outcome = list.object_outcome(call.operation.into())?;
                    Some(ListAnswer {
                        outcome,
                        usage: None,
                        limits,
                    })
                },
                || perform(&mut store, call, now, limits),
            )
        });
        Ok(answers.collect::<std::result::Result<Vec<_>, _>>()?)
    }

    /// The live entry that lists `ip`, and the allow-list entry that holds it.
    fn why_held(&self, ip: PublicIp, now: UnixTime) -> Answered<AddressListing> {
        let store = HolderTables::new(&self.sql);
        let allowing = self.allow_set()?.holding(ip);
        Ok(AddressListing {
            entry: holding(&store, ip, now)?,
            allowed_by: match allowing {
                Some(range) => store.allow_entry(range)?,
                None => None,
            },
        })
    }

    fn is_revoked(&self) -> Result<bool> {
        if let Some(revoked) = self.revoked.get() {
            return Ok(revoked);
        }
        let revoked = HolderTables::new(&self.sql).is_revoked().map_err(fault)?;
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

/// What the store read or wrote, as an answer: its faults are the object's.
fn stored<T>(result: std::result::Result<T, SqlError>) -> Answered<T> {
    result.map_err(Failure::from)
}

/// A call's failure, as the alarm returns it.
fn failure(failure: Failure<HolderRefusal>) -> worker::Error {
    worker::Error::RustError(format!("holder: {failure:?}"))
}

fn fault(error: SqlError) -> worker::Error {
    worker::Error::RustError(format!("holder storage: {error}"))
}

fn picture(
    store: &HolderTables<&SqlStorage>,
    now: UnixTime,
) -> std::result::Result<HolderSummary, SqlError> {
    Ok(HolderSummary {
        entries: store.live_entries(now)?,
        today: store.usage()?.on(now.utc_day()),
        feed_tokens: store.feed_tokens(now)?,
        last_change: store.last_change()?.map(UnixTime::to_rfc3339),
        machines: store.machines()?,
        network: store.network_standing()?.standing,
    })
}

/// The live entry that lists `ip`, under whichever of its keys it is listed.
fn holding(
    store: &HolderTables<&SqlStorage>,
    ip: PublicIp,
    now: UnixTime,
) -> std::result::Result<Option<Entry>, SqlError> {
    for key in Listed::candidates(ip, Ipv6Prefix::default()) {
        if let Some(entry) = store.entry(key)?.filter(|entry| entry.is_live(now)) {
            return Ok(Some(entry));
        }
    }
    Ok(None)
}
