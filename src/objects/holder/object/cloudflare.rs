//! The holder's own Cloudflare edge, from their object: connecting (the token
//! checked, the list and the zone's rule found or made), and the sync the alarm
//! runs: the items wanted, the difference to what was put in the list, one bulk
//! operation at a time, polled until it ends; a refusal tried again later, a
//! refused token stopping the sync until the holder gives one that works.

use std::collections::HashSet;
use std::rc::Rc;

use super::{Answered, HolderList};
use crate::domain::access::license::{random, LicenseId};
use crate::domain::cloudflare::connection::Connect;
use crate::domain::cloudflare::item::{ItemText, Relevance, Selection, Span, Tier};
use crate::domain::cloudflare::link::{
    CloudflareError, ConnectRefusal, LastPush, Link, OperatorVersions, Pending, PushKind, Status,
    SyncState,
};
use crate::domain::cloudflare::push::{
    push_due, retry_seconds, room, Difference, PutItem, Step, AT_CAPACITY, FULL_COMPARISON_SECONDS,
    ITEMS_PAGE, OPERATOR_LOOK_SECONDS, POLL_SECONDS, PUSH_SPACING_SECONDS,
};
use crate::domain::cloudflare::seal::{SealingKey, NONCE_BYTES};
use crate::domain::feed::feed_token::Scope;
use crate::domain::feed::item::{personal_block, FeedBlock, Source};
use crate::domain::operator_lists::list::ListKind;
use crate::domain::operator_lists::snapshot::Shards;
use crate::domain::precedence::PublishedLists;
use crate::domain::settings::Freshness;
use crate::domain::time::UnixTime;
use crate::objects::cloudflare_account::client::cloudflare_account;
use crate::objects::cloudflare_account::protocol::{EndTurn, TakeTurn};
use crate::objects::operator_lists::client::published;
use crate::objects::protocol::Failure;
use crate::platform::clock;
use crate::platform::cloudflare_api::{challenge_rule, ApiFailure, CloudflareApi, DEFAULT_BASE};
use crate::store::holder::list::HolderTables;
use crate::store::operator_lists::snapshots::Versioned;
use crate::store::StoreError;

/// Why a sync stops when the token cannot be opened.
const KEY_MISSING: &str =
    "CLOUDFLARE_TOKEN_KEY is not set, or is not the key the token was sealed under: connect again";

/// How long a turn on the account lasts unless taken again: a poll renews it.
const TURN_SECONDS: u64 = 120;
/// A turn another license holds is asked for again this soon.
const TURN_WAIT_SECONDS: u64 = 2;

/// Pages of the list one alarm reads at most: 20 000 items, in 40 of the 50
/// subrequests a free plan's invocation may make (a paid plan's 1 000 leave room).
const PAGES_PER_ALARM: usize = 40;

/// Entries read at once while the items are built.
const ENTRIES_PAGE: usize = 1_000;

impl ApiFailure {
    fn refusal(self) -> ConnectRefusal {
        ConnectRefusal::Cloudflare {
            status: self.status,
            code: self.code,
            message: self.message,
        }
    }
}

/// An item as a reading remembers it: eight bytes, whatever the list's size.
fn seen_hash(item: &str) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(item)
}

impl HolderList {
    /// The account's turn for this holder's license until `until`: whether it has it.
    async fn take_turn(&self, link: &Link, until: UnixTime) -> Answered<bool> {
        let Some((license, _)) = HolderTables::new(&self.sql).license()? else {
            return Ok(true);
        };
        Ok(cloudflare_account(&self.env, &link.account)?
            .ask(TakeTurn { license, until })
            .await
            .map_err(Failure::into_fault)?)
    }

    async fn end_turn(&self, link: &Link) -> Answered<()> {
        if let Some((license, _)) = HolderTables::new(&self.sql).license()? {
            cloudflare_account(&self.env, &link.account)?
                .ask(EndTurn(license))
                .await
                .map_err(Failure::into_fault)?;
        }
        Ok(())
    }

    fn sealing_key(&self) -> Option<SealingKey> {
        let secret = self.env.var("CLOUDFLARE_TOKEN_KEY").ok()?.to_string();
        (!secret.is_empty()).then(|| SealingKey::new(&secret))
    }

    fn api_base(&self) -> String {
        self.env
            .var("CLOUDFLARE_API")
            .map(|base| base.to_string())
            .ok()
            .filter(|base| !base.is_empty())
            .unwrap_or_else(|| DEFAULT_BASE.to_owned())
    }

    /// The holder's link, read once per instance: every change of it is made here.
    pub(super) fn cloudflare_link(&self) -> Answered<Option<Link>> {
        if self.cloudflare.borrow().is_none() {
            let link = HolderTables::new(&self.sql).cloudflare_link()?;
            *self.cloudflare.borrow_mut() = Some(link);
        }
        Ok(self.cloudflare.borrow().clone().flatten())
    }

    fn keep_link(&self, link: Option<Link>) -> Answered<()> {
        let store = HolderTables::new(&self.sql);
        match &link {
            Some(link) => store.save_cloudflare_link(link)?,
            None => store.forget_cloudflare()?,
        }
        *self.cloudflare.borrow_mut() = Some(link);
        Ok(())
    }

    pub(super) fn cloudflare_status(&self) -> Answered<Status> {
        Ok(self
            .cloudflare_link()?
            .map_or_else(Status::default, |link| link.status()))
    }

    /// Checks the token against the account (its lists), finds or makes the list
    /// and, with a zone, the rule that challenges it; nothing is kept unless all
    /// of that worked.
    pub(super) async fn cloudflare_connect(
        &self,
        license: &LicenseId,
        connect: Connect,
        now: UnixTime,
    ) -> Answered<Result<Status, ConnectRefusal>> {
        // Named so that the account's turns know whose they are.
        HolderTables::new(&self.sql).know_license(license, UnixTime::default())?;
        let Some(key) = self.sealing_key() else {
            return Ok(Err(ConnectRefusal::Off));
        };
        let base = self.api_base();
        let api = CloudflareApi::new(&base, &connect.token);
        let lists = match api.lists(&connect.account).await {
            Ok(lists) => lists,
            Err(failure) => return Ok(Err(failure.refusal())),
        };
        let previous = self.cloudflare_link()?;
        let name = connect.list_name.as_str();
        let (list_id, reused) = match lists.into_iter().find(|list| list.name == name) {
            Some(list) if list.kind != "ip" => return Ok(Err(ConnectRefusal::NotAnIpList)),
            Some(list) => {
                let ours = previous
                    .as_ref()
                    .is_some_and(|link| link.account == connect.account && link.list_id == list.id);
                if list.num_items > 0 && !ours && !connect.take_over {
                    return Ok(Err(ConnectRefusal::Taken {
                        items: list.num_items,
                    }));
                }
                (list.id, ours)
            }
            None => match api.create_list(&connect.account, name).await {
                Ok(list) => (list.id, false),
                Err(failure) => return Ok(Err(failure.refusal())),
            },
        };
        let rule_id = match &connect.zone {
            None => None,
            Some(zone) => {
                let expression = connect.rule_expression();
                let rule = challenge_rule(&expression);
                let found = match api.entrypoint(zone).await {
                    Ok(found) => found,
                    Err(failure) => return Ok(Err(failure.refusal())),
                };
                let ruleset = match found {
                    Some(ruleset) if ruleset.rules.iter().any(|r| r.expression == expression) => {
                        Ok(ruleset)
                    }
                    Some(ruleset) => api.add_rule(zone, &ruleset.id, rule).await,
                    None => api.create_entrypoint(zone, rule).await,
                };
                match ruleset {
                    Ok(ruleset) => ruleset
                        .rules
                        .into_iter()
                        .find(|r| r.expression == expression && r.action == "managed_challenge")
                        .map(|r| r.id),
                    Err(failure) => return Ok(Err(failure.refusal())),
                }
            }
        };
        let nonce: [u8; NONCE_BYTES] = random().map_err(StoreError::Randomness)?;
        let mut sync = SyncState {
            dirty: true,
            due: Some(now),
            ..SyncState::default()
        };
        if reused {
            if let Some(previous) = &previous {
                sync.last_push = previous.sync.last_push.clone();
                sync.pending = previous.sync.pending.clone();
                sync.compared_at = previous.sync.compared_at;
            }
        } else {
            // Another list: what it holds is read whole before the first push.
            HolderTables::new(&self.sql).cloudflare_forget_items()?;
            *self.seen.borrow_mut() = None;
        }
        let link = Link {
            token: key.seal(&connect.token, nonce),
            token_last_four: connect.token.last_four(),
            account: connect.account,
            list_name: connect.list_name,
            list_id,
            zone: connect.zone,
            rule_id,
            scope: connect.scope,
            max_items: connect.max_items,
            connected_at: now,
            sync,
        };
        let status = link.status();
        self.keep_link(Some(link))?;
        self.schedule_sweep(now).await.map_err(fault)?;
        Ok(Ok(status))
    }

    /// Stops the sync and forgets the token; with `delete_list`, deletes the list
    /// first (Cloudflare refuses while a rule uses it: its words are the answer).
    pub(super) async fn cloudflare_disconnect(
        &self,
        delete_list: bool,
    ) -> Answered<Result<Status, ConnectRefusal>> {
        let Some(link) = self.cloudflare_link()? else {
            return Ok(Ok(Status::default()));
        };
        if delete_list {
            let Some(key) = self.sealing_key() else {
                return Ok(Err(ConnectRefusal::Off));
            };
            if let Some(token) = key.open(&link.token) {
                let base = self.api_base();
                let api = CloudflareApi::new(&base, &token);
                if let Err(failure) = api.delete_list(&link.account, &link.list_id).await {
                    return Ok(Err(failure.refusal()));
                }
            }
        }
        self.keep_link(None)?;
        Ok(Ok(Status::default()))
    }

    /// What the holder challenges changed: a push goes once the burst is gathered.
    pub(super) async fn cloudflare_changed(&self, now: UnixTime) -> Answered<()> {
        let Some(mut link) = self.cloudflare_link()? else {
            return Ok(());
        };
        if link.sync.dirty || link.sync.stopped {
            return Ok(());
        }
        link.sync.dirty = true;
        let due = push_due(now, link.sync.last_sent);
        link.sync.due = Some(link.sync.due.map_or(due, |at| at.min(due)));
        HolderTables::new(&self.sql).save_cloudflare_sync(&link.sync)?;
        *self.cloudflare.borrow_mut() = Some(Some(link));
        self.schedule_sweep(due).await.map_err(fault)?;
        Ok(())
    }

    /// The sync's step the alarm runs; answers when the next is due.
    pub(super) async fn cloudflare_sync(&self, now: UnixTime) -> Answered<Option<UnixTime>> {
        let Some(mut link) = self.cloudflare_link()? else {
            return Ok(None);
        };
        if link.sync.stopped {
            return Ok(None);
        }
        let next_look = self.look_at_operator_lists(&mut link, now).await?;
        if link.sync.due.is_none_or(|due| due > now) {
            return Ok(link.sync.wakes_at(next_look));
        }
        let mut sync = link.sync.clone();
        let outcome = match self.sealing_key().and_then(|key| key.open(&link.token)) {
            None => Err(ApiFailure {
                status: 0,
                code: None,
                message: KEY_MISSING.to_owned(),
                retry_after: None,
            }),
            Some(token) => {
                let base = self.api_base();
                let api = CloudflareApi::new(&base, &token);
                self.sync_step(&api, &link, &mut sync, now).await?
            }
        };
        if let Err(failure) = outcome {
            sync.attempts += 1;
            sync.last_error = Some(CloudflareError {
                code: failure.code,
                message: failure.message.clone(),
                at: now,
            });
            if failure.is_credentials() || failure.message == KEY_MISSING {
                sync.stopped = true;
                sync.due = None;
            } else {
                sync.due = Some(now.plus(retry_seconds(sync.attempts, failure.retry_after)));
            }
        }
        // A connection made again while this step waited on Cloudflare is the one kept.
        let current = self.cloudflare_link()?;
        let Some(mut current) = current.filter(|current| current.connected_at == link.connected_at)
        else {
            return Ok(None);
        };
        current.sync = sync;
        let due = current.sync.wakes_at(next_look);
        HolderTables::new(&self.sql).save_cloudflare_sync(&current.sync)?;
        *self.cloudflare.borrow_mut() = Some(Some(current));
        Ok(due)
    }

    /// Every `OPERATOR_LOOK_SECONDS`, the versions of the operator's lists the
    /// holder's list weighs (the allow list; the global list too for the scope
    /// `all`), as this isolate holds them: one that moved since the last
    /// comparison makes the list dirty. Answers when the next look is due.
    async fn look_at_operator_lists(&self, link: &mut Link, now: UnixTime) -> Answered<UnixTime> {
        if let Some(at) = self
            .operator_look
            .get()
            .map(|at| at.plus(OPERATOR_LOOK_SECONDS))
            .filter(|at| *at > now)
        {
            return Ok(at);
        }
        self.operator_look.set(Some(now));
        if !link.sync.dirty && link.sync.weighed != Some(self.operator_versions(link.scope).await?)
        {
            self.cloudflare_changed(now).await?;
            if let Some(changed) = self.cloudflare_link()? {
                *link = changed;
            }
        }
        Ok(now.plus(OPERATOR_LOOK_SECONDS))
    }

    /// How long the operator's lists' snapshots are held.
    async fn freshness(&self) -> Answered<Freshness> {
        let ready = self.started.get_or_start(|| self.start()).await;
        Ok(ready.map_err(fault)?.freshness)
    }

    /// The versions of the operator's lists a list of `scope` weighs.
    async fn operator_versions(&self, scope: Scope) -> Answered<OperatorVersions> {
        let (freshness, now) = (self.freshness().await?, clock::now());
        let version = |kind| published::version(&self.env, kind, freshness, now);
        Ok(OperatorVersions {
            global: match scope {
                Scope::All => version(ListKind::Global).await.map_err(Failure::Fault)?,
                Scope::Personal => 0,
            },
            allow: version(ListKind::Allow).await.map_err(Failure::Fault)?,
        })
    }

    /// One step: a pending operation polled, else the list read whole when due,
    /// else the next difference sent.
    async fn sync_step(
        &self,
        api: &CloudflareApi<'_>,
        link: &Link,
        sync: &mut SyncState,
        now: UnixTime,
    ) -> Answered<Result<(), ApiFailure>> {
        let store = HolderTables::new(&self.sql);
        if let Some(pending) = sync.pending.clone() {
            // Held while Cloudflare runs it: it lapses only if this object stops asking.
            self.take_turn(link, now.plus(TURN_SECONDS)).await?;
            let operation = match api.operation(&link.account, &pending.operation_id).await {
                Ok(operation) => operation,
                Err(failure) => return Ok(Err(failure)),
            };
            if matches!(operation.status.as_str(), "completed" | "failed") {
                self.end_turn(link).await?;
            }
            match operation.status.as_str() {
                "completed" => {
                    let (added, removed) = match pending.kind {
                        PushKind::Add => {
                            store.cloudflare_added(&pending.items)?;
                            (pending.items.len() as u64, 0)
                        }
                        PushKind::Remove => {
                            store.cloudflare_removed(&pending.items)?;
                            (0, pending.items.len() as u64)
                        }
                    };
                    sync.pending = None;
                    sync.attempts = 0;
                    sync.last_error = None;
                    // What the list says now is this service's doing: a later move is someone else's.
                    match api.list(&link.account, &link.list_id).await {
                        Ok(list) => sync.list_modified_on = list.modified_on,
                        Err(failure) => return Ok(Err(failure)),
                    }
                    sync.last_push = Some(LastPush {
                        at: now,
                        added,
                        removed,
                        operation_id: pending.operation_id,
                        status: operation.status,
                    });
                    // Compared again at once: the next difference waits for the spacing.
                    sync.due = Some(now);
                }
                "failed" => {
                    let error = operation.error.clone().unwrap_or_default();
                    if pending.kind == PushKind::Add && error.contains(AT_CAPACITY) {
                        // The account holds no more: the list grows towards this by halves.
                        let put = store.cloudflare_count()?;
                        sync.refused_at = Some(put + pending.items.len() as u64);
                        sync.dirty = true;
                    }
                    sync.pending = None;
                    sync.last_push = Some(LastPush {
                        at: now,
                        added: 0,
                        removed: 0,
                        operation_id: pending.operation_id,
                        status: operation.status,
                    });
                    return Ok(Err(ApiFailure {
                        status: 200,
                        code: None,
                        message: operation
                            .error
                            .unwrap_or_else(|| "the bulk operation failed".to_owned()),
                        retry_after: None,
                    }));
                }
                _ => sync.due = Some(now.plus(POLL_SECONDS)),
            }
            return Ok(Ok(()));
        }
        if !sync.reading
            && sync
                .compared_at
                .is_some_and(|at| at.plus(FULL_COMPARISON_SECONDS) <= now)
        {
            // The hourly look: one call, and the pages only if the list moved since.
            let list = match api.list(&link.account, &link.list_id).await {
                Ok(list) => list,
                Err(failure) => return Ok(Err(failure)),
            };
            // Its time is to the second: a count that differs shows a change made within it.
            let put = HolderTables::new(&self.sql).cloudflare_count()?;
            if list.modified_on.is_some()
                && list.modified_on == sync.list_modified_on
                && list.num_items == put
            {
                sync.compared_at = Some(now);
                sync.refused_at = None;
            } else {
                sync.compared_at = None;
                sync.list_modified_on = list.modified_on;
            }
        }
        if sync.reading || sync.compared_at.is_none() {
            match self.read_list(api, link, sync).await? {
                Err(failure) => return Ok(Err(failure)),
                Ok(false) => {
                    // The platform's subrequests are counted per alarm: the next goes on at once.
                    sync.due = Some(now);
                    return Ok(Ok(()));
                }
                Ok(true) => {}
            }
            sync.compared_at = Some(now);
            sync.refused_at = None;
            sync.dirty = true;
        }
        if !sync.dirty {
            sync.due = sync.compared_at.map(|at| at.plus(FULL_COMPARISON_SECONDS));
            return Ok(Ok(()));
        }
        let room = room(
            u64::from(link.max_items),
            store.cloudflare_count()?,
            sync.refused_at,
        );
        let (wanted, left_out, weighed) = self.wanted_items(link.scope, room as usize, now).await?;
        sync.items = wanted.len() as u64;
        sync.left_out = left_out;
        sync.weighed = Some(weighed);
        // The items put, a page at a time: the list put is never held beside the items wanted.
        let mut difference = Difference::new(&wanted);
        store.cloudflare_items_by_page(ENTRIES_PAGE, |page| {
            difference.put(page);
            Ok(())
        })?;
        let step = difference.finish();
        let spaced = sync.last_sent.map(|sent| sent.plus(PUSH_SPACING_SECONDS));
        if let Some(at) =
            spaced.filter(|at| *at > now && matches!(step, Step::Add(_) | Step::Remove(_)))
        {
            // At most one push every PUSH_SPACING_SECONDS: this one waits its turn.
            sync.due = Some(at);
            return Ok(Ok(()));
        }
        if matches!(step, Step::Add(_) | Step::Remove(_))
            && !self.take_turn(link, now.plus(TURN_SECONDS)).await?
        {
            // Another license's operation runs on this account: Cloudflare would refuse a second.
            sync.due = Some(now.plus(TURN_WAIT_SECONDS));
            return Ok(Ok(()));
        }
        let sent = match step {
            Step::Done => {
                sync.dirty = false;
                sync.due = sync.compared_at.map(|at| at.plus(FULL_COMPARISON_SECONDS));
                return Ok(Ok(()));
            }
            Step::LearnIds => {
                // An item put without its id: the list is read whole at once.
                sync.compared_at = None;
                sync.due = Some(now);
                return Ok(Ok(()));
            }
            Step::Remove(items) => {
                let ids: Vec<String> = items.into_iter().filter_map(|item| item.id).collect();
                api.delete_items(&link.account, &link.list_id, &ids)
                    .await
                    .map(|id| (id, PushKind::Remove, ids))
            }
            Step::Add(items) => {
                let items: Vec<String> = items.into_iter().map(|item| item.0).collect();
                api.add_items(&link.account, &link.list_id, &items)
                    .await
                    .map(|id| (id, PushKind::Add, items))
            }
        };
        if sent.is_err() {
            self.end_turn(link).await?;
        }
        match sent {
            Ok((operation_id, kind, items)) => {
                sync.pending = Some(Pending {
                    operation_id,
                    kind,
                    items,
                    since: now,
                });
                sync.last_sent = Some(now);
                sync.due = Some(now.plus(POLL_SECONDS));
                Ok(Ok(()))
            }
            Err(failure) => Ok(Err(failure)),
        }
    }

    /// The next pages of the list's items as Cloudflare holds them, at most
    /// `PAGES_PER_ALARM`, each compared with what is put (a row written only for
    /// a difference); the items seen kept in memory as hashes, so that at the end
    /// what is put but was not seen (deleted by hand) is forgotten. An instance
    /// evicted midway starts the reading again. Answers whether it is done.
    async fn read_list(
        &self,
        api: &CloudflareApi<'_>,
        link: &Link,
        sync: &mut SyncState,
    ) -> Answered<Result<bool, ApiFailure>> {
        let store = HolderTables::new(&self.sql);
        if !sync.reading || self.seen.borrow().is_none() {
            *self.seen.borrow_mut() = Some(HashSet::new());
            sync.reading = true;
            sync.read_after = None;
        }
        for _ in 0..PAGES_PER_ALARM {
            let page = api
                .items_page(
                    &link.account,
                    &link.list_id,
                    sync.read_after.as_deref(),
                    ITEMS_PAGE,
                )
                .await;
            let (items, after) = match page {
                Ok(page) => page,
                Err(failure) => return Ok(Err(failure)),
            };
            let found: Vec<PutItem> = items
                .into_iter()
                .filter_map(|item| {
                    Some(PutItem {
                        item: ItemText(item.ip?),
                        id: Some(item.id),
                    })
                })
                .collect();
            store.cloudflare_found(&found)?;
            if let Some(seen) = self.seen.borrow_mut().as_mut() {
                seen.extend(found.iter().map(|put| seen_hash(&put.item.0)));
            }
            sync.read_after = after;
            if sync.read_after.is_none() {
                let seen = self.seen.borrow_mut().take().unwrap_or_default();
                store.cloudflare_items_by_page(ENTRIES_PAGE, |page| {
                    page.iter()
                        .filter(|put| !seen.contains(&seen_hash(&put.item.0)))
                        .try_for_each(|put| store.cloudflare_gone(&put.item.0))
                })?;
                sync.reading = false;
                return Ok(Ok(true));
            }
        }
        Ok(Ok(false))
    }

    /// The items the holder challenges, the most relevant `max` in their text's
    /// order, how many the cap left out, and the versions of the operator's lists weighed: the
    /// holder's live entries and, for the scope `all`, the global list's blocks,
    /// both without what either allow list holds, as a feed weighs them.
    async fn wanted_items(
        &self,
        scope: Scope,
        max: usize,
        now: UnixTime,
    ) -> Answered<(Vec<ItemText>, u64, OperatorVersions)> {
        let (freshness, millis) = (self.freshness().await?, clock::now());
        let allow = published::intervals(&self.env, ListKind::Allow, freshness, millis)
            .await
            .map_err(Failure::Fault)?;
        let (global, promoted) = match scope {
            Scope::All => {
                let (global, promoted) =
                    published::shards(&self.env, ListKind::Global, freshness, millis)
                        .await
                        .map_err(Failure::Fault)?;
                (global, promoted.whole().await.map_err(Failure::Fault)?)
            }
            Scope::Personal => (Versioned::default(), Default::default()),
        };
        let weighed = OperatorVersions {
            global: global.version,
            allow: allow.version,
        };
        // From here nothing waits: the entries read are the holder's of this moment.
        let own = {
            let (v4, v6) = self.allow_set()?.intervals();
            (Rc::new(v4), Rc::new(v6))
        };
        let lists =
            PublishedLists::with_own_allow((global.v4, global.v6), (allow.v4, allow.v6), own);
        let mut blocks = lists.challenged_blocks().peekable();
        let mut selection = Selection::new(max);
        let push_block = |selection: &mut Selection, block: FeedBlock| {
            selection.push(
                Span::of_block(block),
                Relevance::global(tier_of(block, &promoted)),
            )
        };
        let store = HolderTables::new(&self.sql);
        let mut after: Option<Vec<u8>> = None;
        loop {
            let page = store.entries_by_address(after.as_deref(), ENTRIES_PAGE, now)?;
            let full = page.len() == ENTRIES_PAGE;
            for (listed, added_at, key) in page {
                // The global blocks before it first: each family goes in address order.
                let place = personal_block(listed).place();
                while let Some(block) = blocks.next_if(|block| block.place() < place) {
                    push_block(&mut selection, block);
                }
                if lists.challenges_entry(listed) {
                    selection.push(Span::of_entry(listed), Relevance::own(added_at));
                }
                after = Some(key);
            }
            if !full {
                break;
            }
        }
        for block in blocks {
            push_block(&mut selection, block);
        }
        let (items, left_out) = selection.finish();
        // In their text's order, as the items put are read (`Difference`).
        let mut items: Vec<ItemText> = items.into_iter().map(|ranked| ranked.item).collect();
        items.sort_unstable();
        Ok((items, left_out, weighed))
    }
}

/// Whose a global block is: the network's when every address of it was
/// promoted, else the operator's (`Source::of_global`).
fn tier_of(block: FeedBlock, (promoted, promoted6): &(Shards, Shards<u128>)) -> Tier {
    let source = match block {
        FeedBlock::V4(range) => Source::of_global(range, promoted.holding(range.first())),
        FeedBlock::V6Range(range) => Source::of_global(range, promoted6.holding(range.first())),
        FeedBlock::V6(_) | FeedBlock::V6Net64(_) => Source::Operator,
    };
    match source {
        Source::Promoted => Tier::Promoted,
        Source::Operator | Source::Personal => Tier::Operator,
    }
}

fn fault(
    error: worker::Error,
) -> crate::objects::protocol::Failure<crate::objects::holder::protocol::HolderRefusal> {
    crate::objects::protocol::Failure::Fault(error.into())
}
