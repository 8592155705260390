//! The Durable Object that owns one license holder's personal list. The runtime
//! runs one request at a time per object, and `perform` never awaits, so the
//! read-check-write of an add or remove cannot interleave with another; its
//! writes commit together, before the answer leaves.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use futures_util::stream;
use worker::{durable_object, DurableObject, Env, Request, Response, Result, SqlStorage, State};

use super::protocol::{
    Activity, AdmitLogin, AdmitMachine, AlertsTaken, AllowPage, AllowPerform, ChangeMachine,
    CreateFeedToken, CreateMachine, EntryPage, Feed, FeedStart, FeedTokens, History, HolderCall,
    HolderPicture, HolderProtocol, HolderRefusal, LicensePicture, LiveLookup, Machines, OwnAllow,
    Perform, RecordUsage, Report, Revoke, RevokeFeedToken, RevokeMachine, SetNetwork, TakeAlerts,
    Usage, WhyHeld, WhyListed,
};
use crate::domain::access::audit::{Stamp, FORWARDED_AT_ONCE};
use crate::domain::access::license::LicenseId;
use crate::domain::feed::decision::DecisionType;
use crate::domain::feed::feed_token::PullClient;
use crate::domain::feed::item::{FeedHead, FeedRecord, FeedVersion};
use crate::domain::machines::alert::take_alert;
use crate::domain::machines::credentials::{MachineCounts, MachineSettings};
use crate::domain::net::address::{Ipv6Prefix, Listed, PublicIp};
use crate::domain::network::consensus::{shard_of, SHARDS};
use crate::domain::network::report::{perform_report, Outgoing, ReportAnswer, ReportOutcome};
use crate::domain::network::standing::Kept;
use crate::domain::operator_lists::delta::{AllowMoves, VersionChange};
use crate::domain::personal::activity::last_days;
use crate::domain::personal::allow::{perform_allow, AllowAnswer, AllowSet};
use crate::domain::personal::entry::Entry;
use crate::domain::personal::holder::{perform, sweep, Answer, Limits, ListStore, Operation};
use crate::domain::precedence::weigh_in_object;
use crate::domain::precedence::Weighing;
use crate::domain::time::{UnixTime, SECONDS_PER_DAY};
use crate::objects::directory::client::directory;
use crate::objects::directory::protocol::RecordForwarded;
use crate::objects::network::client::{fault as shard_fault, shard};
use crate::objects::network::protocol::{Count, Forget, ReportsProtocol, SetStanding};
use crate::objects::protocol::{
    receive, refuse, Ask, AskStream, Failure, Received, Streamed, StreamedOutcome,
};
use crate::objects::revocations::client::revocations;
use crate::objects::revocations::protocol::MarkAllowList;
use crate::objects::startup::Started;
use crate::platform::{clock, config};
use crate::store::holder::feed as holder_feed;
use crate::store::holder::feed::FeedPages;
use crate::store::holder::feed_tokens::TokenState;
use crate::store::holder::list::SqlListStore;
use crate::store::holder::schema::migrate;
use crate::store::sql::SqlError;
use crate::store::StoreError;

/// Expired entries one alarm, or one feed read, removes at most; when there are
/// more, the next alarm runs at once.
const SWEEP_BATCH: usize = 1_000;
/// Reports one alarm sends on at most, a call per shard they fall in; when more
/// are kept, the next alarm runs at once.
const REPORT_BATCH: usize = 1_000;
/// A report is sent on at the next whole second, not at once: the reports of
/// that second go with it, one call per shard, so that an agent reporting one
/// address at a time costs a shard call a second, not one a report.
const REPORT_GATHER_SECONDS: u64 = 1;

/// What a call comes to: its answer, or the refusal or fault that stops it.
type Answered<T> = std::result::Result<T, Failure<HolderRefusal>>;

/// What the object runs under, from the settings.
#[derive(Clone, Copy)]
struct Ready {
    limits: Limits,
    /// Records in one page of a feed.
    page: usize,
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
    /// Whether the next pull told to ask again is followed by another (`PulledElsewhere`).
    #[cfg(feature = "test-hooks")]
    pulled_elsewhere: Cell<bool>,
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
            #[cfg(feature = "test-hooks")]
            pulled_elsewhere: Cell::new(false),
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
                | HolderCall::LicensePicture(_)
                | HolderCall::WhyListed(_)
                | HolderCall::SetNetwork(_)
        );
        if !operators && self.is_revoked()? {
            return refuse::<HolderProtocol>(HolderRefusal::LicenseRevoked);
        }
        let store = SqlListStore::new(&self.sql);
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
                RevokeFeedToken::reply(stored(store.revoke_feed_token(&id)))
            }
            HolderCall::Revoke(Revoke) => Revoke::reply(self.revoke(now).await),
            // A revoked license was refused above.
            HolderCall::AdmitLogin(AdmitLogin) => AdmitLogin::reply(Ok(())),
            HolderCall::LicensePicture(LicensePicture) => {
                LicensePicture::reply(stored(picture(&store, now)))
            }
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
                RevokeMachine::reply(stored(store.revoke_machine(&id)))
            }
            HolderCall::AdmitMachine(AdmitMachine { id, scenarios }) => {
                AdmitMachine::reply(match store.record_login(&id, &scenarios, now) {
                    Ok(true) => Ok(()),
                    Ok(false) => Err(Failure::Refused(HolderRefusal::MachineRevoked)),
                    Err(fault) => Err(fault.into()),
                })
            }
            HolderCall::TakeAlerts(call) => {
                TakeAlerts::reply(self.take_alerts(call, now, ready.limits).await)
            }
            HolderCall::RecordUsage(call) => RecordUsage::reply(record_usage(&store, call, now)),
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
        let mut store = SqlListStore::new(&self.sql);
        let now = clock::now().unix();
        let next =
            if more_reports || sweep(&mut store, now, SWEEP_BATCH).map_err(fault)? == SWEEP_BATCH {
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
    /// The schema brought up to date, and the settings the object runs under.
    async fn start(&self) -> Result<Ready> {
        migrate(&self.sql).map_err(|e| format!("schema: {e}"))?;
        let settings = config::object_settings(&self.env).map_err(|e| e.0)?;
        Ok(Ready {
            limits: settings.limits,
            page: settings.page_entries,
        })
    }

    /// Records the revocation, drops the reports not yet sent, and tells every
    /// report shard that the license's reports stop counting. A shard that is not
    /// told fails the call, and the revocations' object tells this one again.
    async fn revoke(&self, now: UnixTime) -> Answered<()> {
        let store = SqlListStore::new(&self.sql);
        store.revoke(now)?;
        self.revoked.set(Some(true));
        store.forget_reports(None)?;
        if let Some((license, _)) = store.license()? {
            for index in 0..SHARDS {
                shard(&self.env, index)?
                    .ask(Forget(license.as_str().to_owned()))
                    .await
                    .map_err(shard_fault)?;
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
    async fn report(
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
        let mut store = SqlListStore::new(&self.sql);
        store.know_license(&license, licensed_at)?;
        let answers = {
            let allow = self.allow_set()?;
            calls
                .iter()
                .map(|call| {
                    match weigh_in_object(Weighing::Report, false, allow.holds_ip(call.ip)) {
                        Some(_) => Ok(ReportAnswer {
                            outcome: ReportOutcome::OwnAllowListed,
                            usage: None,
                            limits,
                        }),
                        None => perform_report(&mut store, call, network, (now, limits)),
                    }
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
    fn catch(
        &self,
        store: &SqlListStore<&SqlStorage>,
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
    async fn set_network(&self, suspended: bool, by: &Stamp, now: UnixTime) -> Answered<Kept> {
        let store = SqlListStore::new(&self.sql);
        let kept = store.network_standing()?.standing.set(suspended, now);
        if store.change_network_standing(kept, Some(by))? {
            self.schedule_sweep(now)
                .await
                .map_err(|e| Failure::Fault(e.into()))?;
        }
        Ok(kept)
    }

    /// A request's alerts from one machine: each applied in order (`take_alert`:
    /// its report kept as `report` keeps one, its adds made as `perform` makes
    /// them) and the machine's counts and last alert written, in one visit
    /// without a wait, so that they commit together. The alarm, set for the next
    /// whole second when anything was taken (as for reports, so that a second's
    /// alerts go to the shards together), sends the reports on and sets the next
    /// sweep.
    async fn take_alerts(
        &self,
        call: TakeAlerts,
        now: UnixTime,
        limits: Limits,
    ) -> Answered<AlertsTaken> {
        let taken = self.apply_alerts(&call, now, limits)?;
        let caught = self.catch(&SqlListStore::new(&self.sql), &call.canaries, now)?;
        if caught || taken.counts.reported > 0 || taken.counts.added > 0 {
            self.schedule_sweep(now.plus(REPORT_GATHER_SECONDS))
                .await
                .map_err(|e| Failure::Fault(e.into()))?;
        }
        Ok(taken)
    }

    fn apply_alerts(
        &self,
        call: &TakeAlerts,
        now: UnixTime,
        limits: Limits,
    ) -> Answered<AlertsTaken> {
        let mut store = SqlListStore::new(&self.sql);
        let Some(machine) = store.machine_state(&call.machine)? else {
            return Err(Failure::Refused(HolderRefusal::MachineRevoked));
        };
        store.know_license(&call.license, call.licensed_at)?;
        // Those past the number a request takes are acknowledged and change nothing.
        let mut counts = MachineCounts {
            alerts: call.beyond,
            ignored: call.beyond,
            ..MachineCounts::default()
        };
        {
            let allow = self.allow_set()?;
            let client = call.client.as_deref();
            for alert in &call.alerts {
                let own_allow = |ip| allow.holds_ip(ip);
                let taken = take_alert(
                    &mut store,
                    alert,
                    machine.settings,
                    own_allow,
                    client,
                    (now, limits),
                )?;
                counts = counts.plus(taken.counts());
            }
        }
        store.record_alerts(&call.machine, counts, now)?;
        Ok(AlertsTaken {
            first: machine.alerts + 1,
            counts,
        })
    }

    /// Tells every shard the license's standing when it changed since they were
    /// last told, then sends a batch of the reports kept to their shards, one call
    /// per shard; answers whether more are kept. A shard that fails leaves the
    /// batch kept (and the standing untold), and the alarm's retry sends it again
    /// (a report counted twice by a shard that did take it counts once: a license
    /// counts once an address).
    async fn send_reports(&self) -> Result<bool> {
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
        let store = SqlListStore::new(&self.sql);
        let kept = store.network_standing().map_err(fault)?;
        let Some((license, _)) = store.license().map_err(fault)? else {
            return Ok(());
        };
        if kept.told < kept.version {
            for index in 0..SHARDS {
                let call = SetStanding {
                    license: license.as_str().to_owned(),
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
        store: &SqlListStore<&SqlStorage>,
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
    async fn ask_shard<C: Ask<ReportsProtocol>>(&self, index: u32, call: C) -> Result<C::Answer> {
        shard(&self.env, index)
            .map_err(|e| worker::Error::RustError(e.to_string()))?
            .ask(call)
            .await
            .map_err(|e| {
                worker::Error::RustError(format!("report shard {index}: {}", shard_fault(e)))
            })
    }

    async fn send_batch(&self) -> Result<bool> {
        let store = SqlListStore::new(&self.sql);
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
                license: license.as_str().to_owned(),
                licensed_at,
                reports,
            };
            self.ask_shard(index, count).await?;
        }
        store.forget_reports(Some(last)).map_err(fault)?;
        Ok(kept.len() == REPORT_BATCH)
    }

    /// Every call of a bulk request in one pass: nothing runs in between, and the
    /// day's limits apply item by item in the order given.
    async fn perform(
        &self,
        calls: &[crate::domain::personal::holder::Call],
        now: UnixTime,
        limits: Limits,
    ) -> Answered<Vec<Answer>> {
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
        }
        Ok(answers)
    }

    /// Each call weighed by the lists this object keeps, the holder's allow list
    /// before the personal list, without a wait: no borrow of the allow list
    /// outlives it, and nothing runs in between.
    fn weigh_and_perform(
        &self,
        calls: &[crate::domain::personal::holder::Call],
        now: UnixTime,
        limits: Limits,
    ) -> Answered<Vec<Answer>> {
        let mut store = SqlListStore::new(&self.sql);
        let allow = self.allow_set()?;
        let answers = calls.iter().map(|call| {
            match weigh_in_object(call.operation, call.global, allow.holds_ip(call.ip)) {
                Some(outcome) => Ok(Answer {
                    outcome,
                    usage: None,
                    limits,
                }),
                None => perform(&mut store, call, now, limits),
            }
        });
        Ok(answers.collect::<std::result::Result<Vec<_>, _>>()?)
    }

    /// The live entry that lists `ip`, and the allow-list entry that holds it.
    fn why_held(&self, ip: PublicIp, now: UnixTime) -> Answered<WhyHeld> {
        let store = SqlListStore::new(&self.sql);
        let allowing = self.allow_set()?.holding(ip);
        Ok(WhyHeld {
            entry: holding(&store, ip, now)?,
            allowed_by: match allowing {
                Some(range) => store.allow_entry(range)?,
                None => None,
            },
        })
    }

    /// The holder's allow list, read once per instance and kept equal to its rows.
    fn allow_set(&self) -> Answered<std::cell::Ref<'_, AllowSet>> {
        if self.allow.borrow().is_none() {
            let set = SqlListStore::new(&self.sql).allow_set()?;
            *self.allow.borrow_mut() = Some(set);
        }
        Ok(std::cell::Ref::map(self.allow.borrow(), |set| {
            set.as_ref().expect("loaded above")
        }))
    }

    /// One operation of the allow list, then the license's record told whether
    /// the holder has entries, when it does not know yet: the Worker answers an
    /// address the global challenge list holds without this object for a holder
    /// without entries. A telling that fails is a fault, and the next operation
    /// of the allow list tells it again.
    async fn allow_perform(
        &self,
        AllowPerform { license, call }: AllowPerform,
        now: UnixTime,
        limits: Limits,
    ) -> Answered<AllowAnswer> {
        let mut store = SqlListStore::new(&self.sql);
        let mut set = self.allow_set()?.clone();
        let answer = perform_allow(&mut store, &mut set, &call, now, limits);
        // A fault may have left some of the change written: the rows are read again.
        *self.allow.borrow_mut() = answer.is_ok().then_some(set);
        let answer = answer?;
        if call.operation != Operation::Check {
            self.schedule_sweep(now.plus(SECONDS_PER_DAY))
                .await
                .map_err(|e| Failure::Fault(e.into()))?;
        }
        // The flag as the list stands now, and again after each telling: while one
        // waits on the revocations' object, another operation may change the list
        // and, finding the flag not yet written, tell nothing.
        loop {
            let allow_list = !self.allow_set()?.is_empty();
            if store.published_allow_flag()? == allow_list {
                break;
            }
            let version = store.next_allow_flag_version()?;
            // The one writer of licenses' records, which also revokes them.
            let told = revocations(&self.env)?
                .ask(MarkAllowList {
                    license: license.clone(),
                    allow_list,
                    version,
                })
                .await;
            match told {
                Ok(()) => store.allow_flag_published(allow_list)?,
                Err(Failure::Fault(fault)) => return Err(Failure::Fault(fault)),
                Err(Failure::Refused(refusal)) => {
                    return Err(Failure::Fault(StoreError::Corrupt(format!(
                        "the revocations' object refused the allow-list flag: {refusal:?}"
                    ))))
                }
            }
        }
        Ok(answer)
    }

    /// The feed's personal part: its head now, its records a page at a time as the
    /// caller reads them. One batch of expired entries leaves the list first; the
    /// alarm, set to run at once, takes the rest, so no read sweeps without bound.
    async fn feed(
        &self,
        feed: Feed,
        now: UnixTime,
        page: usize,
    ) -> StreamedOutcome<FeedStart, FeedRecord, HolderRefusal> {
        let store = SqlListStore::new(self.sql.clone());
        let token = match &feed.token {
            Some(id) => Some((id.clone(), self.token(&store, id)?)),
            None => None,
        };
        let mut sweeping = SqlListStore::new(&self.sql);
        if sweep(&mut sweeping, now, SWEEP_BATCH)? == SWEEP_BATCH {
            self.schedule_sweep(now)
                .await
                .map_err(|e| Failure::Fault(e.into()))?;
        }
        if feed.probe.len() > holder_feed::MAX_PROBED {
            return Err(Failure::Fault(StoreError::Corrupt(format!(
                "a feed probed {} entries",
                feed.probe.len()
            ))));
        }
        let moved = feed.moves.len();
        if moved > holder_feed::MAX_MOVED_RANGES {
            return Err(Failure::Fault(StoreError::Corrupt(format!(
                "a feed looked in {moved} intervals of the allow list"
            ))));
        }
        let mut listed = holder_feed::listed(&store, &feed.probe, now)?;
        let allow = self.allow_set()?.clone();
        let decision = token
            .as_ref()
            .map_or(DecisionType::Ban, |(_, state)| state.decision);
        // A pull's position moves once this object has sent its last page: a pull
        // broken off before then (a fault, a Worker that stopped reading) is
        // answered the same changes again. Pages the runtime buffered on their
        // way to a bouncer that then hung up are not: it needs startup again.
        let (head, mut pages, finish) = match (feed.pull, token) {
            (Some(pull), Some((id, state))) => {
                let (plan, head, pages) =
                    holder_feed::open_pull(store, (pull, feed.moves), state.position, now, page)?;
                let current = FeedVersion {
                    changes: head.changes(),
                    global: pull.global,
                    allow: pull.allow,
                };
                let position = plan.next(state.position, current, now);
                #[cfg(feature = "test-hooks")]
                if matches!(head, FeedHead::Moved { .. }) && self.pulled_elsewhere.take() {
                    let elsewhere = crate::domain::feed::decision::Position {
                        cursor: FeedVersion {
                            global: pull.global + 1,
                            ..current
                        },
                        renewed_at: now,
                    };
                    SqlListStore::new(&self.sql).record_pull(
                        &id,
                        &state,
                        &PullClient::new(None, "elsewhere"),
                        Some(elsewhere),
                        now,
                    )?;
                }
                (head, pages, Some((id, state, position)))
            }
            (_, token) => {
                let (head, pages) =
                    holder_feed::open(store, (feed.since, feed.moves), feed.known, now, page)?;
                let finish = token.map(|(id, state)| (id, state, None));
                (head, pages, finish)
            }
        };
        let own_allow = self.own_allow(&allow, &mut pages, &mut listed, now)?;
        let client = feed.client.unwrap_or_else(|| PullClient::new(None, "feed"));
        let finish = finish.map(|(id, state, position)| Finish {
            id,
            state,
            client,
            position,
            now,
        });
        // An answer with nothing to follow is recorded now, any other once it is
        // read; a pull told to ask again is recorded by the call that answers it.
        let finish = match (head, finish) {
            (FeedHead::Unchanged { .. }, Some(finish)) => {
                finish.record(pages.store())?;
                None
            }
            (FeedHead::Moved { .. }, _) => None,
            (_, finish) => finish,
        };
        let pages = stream::unfold(Some((pages, finish)), |read| async move {
            let (mut pages, finish) = read?;
            match pages.next_page() {
                Ok(Some(page)) => Some((Ok(page), Some((pages, finish)))),
                Ok(None) => match finish.map(|finish| finish.record(pages.store())) {
                    Some(Err(fault)) => Some((Err(fault.into()), None)),
                    _ => None,
                },
                Err(fault) => Some((Err(fault.into()), None)),
            }
        });
        Ok(Streamed {
            head: FeedStart {
                head,
                decision,
                listed,
                own_allow,
            },
            pages: Box::pin(pages),
        })
    }

    /// The holder's allow list as a feed weighs it. For a delta, also what it
    /// changed since the cursor: the holder's entries that change moved join the
    /// pages' moves, and those inside it are told as listed, so that a global
    /// block that is one of them is held apart as the probed ones are.
    fn own_allow(
        &self,
        allow: &AllowSet,
        pages: &mut FeedPages<SqlStorage>,
        listed: &mut Vec<Listed>,
        now: UnixTime,
    ) -> Answered<OwnAllow> {
        let (v4, v6) = allow.intervals();
        let change = match pages.window() {
            Some(window) => pages.store().allow_change(window, allow)?,
            None => VersionChange::default(),
        };
        if !change.is_empty() {
            pages.also_moved(&AllowMoves::of(&change, &v4, &v6));
            let room = holder_feed::MAX_PROBED.saturating_sub(listed.len());
            listed.extend(pages.store().live_inside(&change, now, room)?);
            listed.sort_unstable_by_key(|ip| ip.key());
            listed.dedup();
        }
        Ok(OwnAllow { v4, v6, change })
    }

    /// The feed token a request came with, as it stands; refused when revoked.
    fn token<S: crate::store::sql::Sql>(
        &self,
        store: &SqlListStore<S>,
        id: &str,
    ) -> Answered<TokenState> {
        store
            .token_state(id)?
            .ok_or(Failure::Refused(HolderRefusal::FeedTokenRevoked))
    }

    /// One address, as a bouncer in live mode asks: the live entry, if any.
    fn lookup(
        &self,
        lookup: &LiveLookup,
        now: UnixTime,
    ) -> Answered<(DecisionType, Option<Entry>, OwnAllow)> {
        let store = SqlListStore::new(&self.sql);
        let state = self.token(&store, &lookup.token)?;
        store.record_pull(&lookup.token, &state, &lookup.client, None, now)?;
        let (v4, v6) = self.allow_set()?.intervals();
        let own_allow = OwnAllow {
            v4,
            v6,
            change: VersionChange::default(),
        };
        for key in Listed::candidates(lookup.ip, lookup.prefix) {
            if let Some(entry) = store.entry(key)?.filter(|entry| entry.is_live(now)) {
                return Ok((state.decision, Some(entry), own_allow));
            }
        }
        Ok((state.decision, None, own_allow))
    }

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

/// What the store read or wrote, as an answer: its faults are the object's.
fn stored<T>(result: std::result::Result<T, SqlError>) -> Answered<T> {
    result.map_err(Failure::from)
}

/// What a token's record takes once its pull is answered.
struct Finish {
    id: String,
    state: TokenState,
    client: PullClient,
    position: Option<crate::domain::feed::decision::Position>,
    now: UnixTime,
}

impl Finish {
    fn record<S: crate::store::sql::Sql>(
        &self,
        store: &SqlListStore<S>,
    ) -> std::result::Result<(), SqlError> {
        store.record_pull(&self.id, &self.state, &self.client, self.position, self.now)
    }
}

fn fault(error: SqlError) -> worker::Error {
    worker::Error::RustError(format!("holder storage: {error}"))
}

fn picture(
    store: &SqlListStore<&SqlStorage>,
    now: UnixTime,
) -> std::result::Result<HolderPicture, SqlError> {
    Ok(HolderPicture {
        entries: store.live_entries(now)?,
        today: store.usage()?.on(now.utc_day()),
        feed_tokens: store.feed_tokens(now)?,
        last_change: store.last_change()?.map(UnixTime::to_rfc3339),
        machines: store.machines()?,
        network: store.network_standing()?.standing,
    })
}

/// A bouncer's or engine's report, kept on its feed token or machine in one
/// visit; refused as its pulls or alerts are once that is revoked.
fn record_usage(
    store: &SqlListStore<&SqlStorage>,
    call: RecordUsage,
    now: UnixTime,
) -> Answered<()> {
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
    if kept {
        Ok(())
    } else {
        Err(Failure::Refused(refusal))
    }
}

/// The live entry that lists `ip`, under whichever of its keys it is listed.
fn holding(
    store: &SqlListStore<&SqlStorage>,
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
