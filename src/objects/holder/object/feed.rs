//! The holder's part of a feed: its head and its records a page at a time, a
//! pull's position moved once its last page is sent, the holder's allow list
//! as a feed weighs it, and one address looked up for a bouncer in live mode.

use futures_util::stream;
use worker::SqlStorage;

use super::{Answered, HolderList, SWEEP_BATCH};
use crate::domain::feed::decision::DecisionType;
use crate::domain::feed::feed_token::PullClient;
use crate::domain::feed::item::{FeedHead, FeedRecord, FeedVersion};
use crate::domain::holder::allow::AllowSet;
use crate::domain::holder::entry::Entry;
use crate::domain::holder::list::{sweep, ListStore};
use crate::domain::net::address::Listed;
use crate::domain::operator_lists::delta::{AllowMoves, VersionChange};
use crate::domain::time::UnixTime;
use crate::objects::holder::protocol::{Feed, FeedStart, HolderRefusal, LiveLookup, OwnAllow};
use crate::objects::protocol::{Failure, Streamed, StreamedOutcome};
use crate::store::holder::feed as holder_feed;
use crate::store::holder::feed::FeedPages;
use crate::store::holder::feed_tokens::TokenState;
use crate::store::holder::list::HolderTables;
use crate::store::sql::SqlError;
use crate::store::StoreError;

impl HolderList {
    /// The feed's personal part: its head now, its records a page at a time as the
    /// caller reads them. One batch of expired entries leaves the list first; the
    /// alarm, set to run at once, takes the rest, so no read sweeps without bound.
    pub(super) async fn feed(
        &self,
        feed: Feed,
        now: UnixTime,
        page: usize,
    ) -> StreamedOutcome<FeedStart, FeedRecord, HolderRefusal> {
        let store = HolderTables::new(self.sql.clone());
        let token = match &feed.token {
            Some(id) => Some((id.clone(), self.token(&store, id)?)),
            None => None,
        };
        let mut sweeping = HolderTables::new(&self.sql);
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
        let held_cut = token
            .as_ref()
            .and_then(|(_, state)| state.position)
            .map(|position| position.cut)
            .unwrap_or_default();
        // A pull's position moves once this object has sent its last page: a pull
        // broken off before then (a fault, a Worker that stopped reading) is
        // answered the same changes again. Pages the runtime buffered on their
        // way to a bouncer that then hung up are not: it needs startup again.
        let (head, mut pages, finish) = match (feed.pull, token) {
            (Some(pull), Some((id, state))) => {
                #[cfg(feature = "test-hooks")]
                if let Some(ip) = self.add_before_pull.take() {
                    use crate::domain::holder::list::{perform, ListCall, Operation};
                    let call = ListCall {
                        operation: Operation::Add,
                        ip,
                        prefix: Default::default(),
                        details: Default::default(),
                        client: None,
                        global_challenge: false,
                    };
                    let limits = crate::domain::holder::list::Limits::default();
                    perform(&mut HolderTables::new(&self.sql), &call, now, limits)?;
                }
                let (plan, head, pages) = holder_feed::open_pull(
                    store,
                    (pull, feed.moves, feed.cut),
                    state.position,
                    now,
                    page,
                )?;
                let current = FeedVersion {
                    changes: head.changes(),
                    global: pull.global,
                    allow: pull.allow,
                };
                let position = plan.next(state.position, (current, feed.cut), now);
                #[cfg(feature = "test-hooks")]
                if matches!(head, FeedHead::Moved { .. }) && self.pulled_elsewhere.take() {
                    let elsewhere = crate::domain::feed::decision::Position {
                        cursor: FeedVersion {
                            global: pull.global + 1,
                            ..current
                        },
                        renewed_at: now,
                        cut: feed.cut,
                    };
                    HolderTables::new(&self.sql).record_pull(
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
            left_out: feed.left_out,
            now,
        });
        // An answer with nothing to follow is recorded now, any other once it is
        // read; a pull told to ask again is recorded by the call that answers it.
        let finish = match (head, finish) {
            (FeedHead::Unchanged { .. }, Some(finish)) => {
                finish.record(pages.store())?;
                None
            }
            (FeedHead::Moved { .. } | FeedHead::Recount { .. }, _) => None,
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
                held_cut,
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
        store: &HolderTables<S>,
        id: &str,
    ) -> Answered<TokenState> {
        store
            .token_state(id)?
            .ok_or(Failure::Refused(HolderRefusal::FeedTokenRevoked))
    }
    /// One address, as a bouncer in live mode asks: the live entry, if any.
    pub(super) fn lookup(
        &self,
        lookup: &LiveLookup,
        now: UnixTime,
    ) -> Answered<(DecisionType, Option<Entry>, OwnAllow)> {
        let store = HolderTables::new(&self.sql);
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
}

/// What a token's record takes once its pull is answered.
struct Finish {
    id: String,
    state: TokenState,
    client: PullClient,
    position: Option<crate::domain::feed::decision::Position>,
    /// How many items a cut pull left out.
    left_out: Option<u64>,
    now: UnixTime,
}

impl Finish {
    fn record<S: crate::store::sql::Sql>(
        &self,
        store: &HolderTables<S>,
    ) -> std::result::Result<(), SqlError> {
        store.record_pull(&self.id, &self.state, &self.client, self.position, self.now)?;
        match self.left_out {
            Some(left_out) => store.record_left_out(&self.id, &self.state, left_out),
            None => Ok(()),
        }
    }
}
