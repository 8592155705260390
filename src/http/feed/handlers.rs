//! The feed a firewall pulls, and the feed tokens that open it.

use std::collections::HashSet;
use std::rc::Rc;

use serde::{Deserialize, Serialize};
use worker::{Env, Request, Response};

use crate::domain::code::Coded;
use crate::domain::feed::cap::{self, CursorCut, Shift};
use crate::domain::feed::decision::DecisionType;
use crate::domain::feed::feed_token::{
    self, FeedTokenInfo, FeedTokenOwner, NewFeedToken, NewFeedTokenRecord, PullClient, Scope,
};
use crate::domain::feed::item::{FeedBlock, FeedHead};
use crate::domain::net::address::{Listed, PublicIp};
use crate::domain::net::family::Addr;
use crate::domain::net::intervals::{combine, Intervals, Op};
use crate::domain::net::ipv4::PublicIpv4;
use crate::domain::net::ipv6::PublicIpv6;
use crate::domain::net::range::{Ipv4Range, Ipv6Range};
use crate::domain::operator_lists::delta::{
    block_changes, relabeled, touches_more_than, touching, AllowMoves, BlockChanges, VersionChange,
};
use crate::domain::operator_lists::list::ListKind;
use crate::domain::operator_lists::snapshot::Shards;
use crate::domain::precedence::PublishedLists;
use crate::domain::settings::Freshness;
use crate::domain::time::Millis;
use crate::http::auth::caller::{FeedCaller, HolderCaller};
use crate::http::context::RequestContext;
use crate::http::error::ApiError;
use crate::http::feed::appliance::ApplianceFile;
use crate::http::feed::body::{self as feed_body, Content, DeltaBlocks, DeltaCut, Render};
use crate::http::feed::items::{read_again, read_whole, Items};
use crate::http::feed::query::{FeedQuery, Format};
use crate::http::wire::body::{Body, MAX_BODY_BYTES};
use crate::http::wire::form;
use crate::http::wire::reply::Reply;
use crate::objects::holder::client::holder;
use crate::objects::holder::protocol::{
    CreateFeedToken, Feed, FeedStart, FeedTokens, OwnAllow, RevokeFeedToken,
};
use crate::objects::operator_lists::client::published::{self, Promoted};
use crate::store::holder::feed::{MAX_MOVED_RANGES, MAX_PROBED};
use crate::store::operator_lists::snapshots::{self, Versioned};
use crate::store::{licenses, StoreError};

/// `GET /api/greylistFeed`: the whole feed as text, JSON or an appliance's
/// file (merged into the fewest blocks with `aggregate`, cut to the most
/// relevant `maxItems`), or (JSON with `since`) the changes after a cursor.
/// Costs one call to the holder's object, whose records stream through as they
/// come; with the current `If-None-Match` it answers 304 and sends nothing
/// else. A cut feed reads the holder's list once more to count it first (twice
/// when the cut falls among own entries listed within the same few hours); a
/// cut delta reads it whole to count, to find how far the cut reaches, and
/// where the cut moved, for what it pushed out or let in.
pub async fn feed(
    cx: &RequestContext,
    req: Request,
    reader: FeedCaller,
) -> Result<Reply, ApiError> {
    let (env, now, settings) = (&cx.env, cx.now, &cx.settings);
    let FeedCaller {
        license,
        token,
        may_read,
        merged,
        max_items,
    } = reader;
    let license = &license;
    let query = FeedQuery::parse(form::query_of(&req.inner().url()))
        .and_then(|query| query.merged_by_token(merged))
        .map(|query| query.cut_by_token(max_items))
        .map_err(ApiError::BadRequest)?;
    if !may_read.allows(query.scope) {
        return Err(ApiError::Forbidden(
            "this feed token reads the personal list only (scope personal); create one of scope all to read the global list too".to_owned(),
        ));
    }
    let freshness = settings.objects.freshness;
    // The feed leaves out what the allow list holds; only the JSON feed labels
    // the promoted blocks.
    let VersionedLists {
        global,
        allow,
        promoted,
    } = operator_lists(cx, query.scope).await?;
    let (global_version, allow_version) = (global.version, allow.version);
    let if_none_match = req.headers().get("If-None-Match")?.unwrap_or_default();
    let known = query.known_changes(&if_none_match, global_version, allow_version);
    let changes = match query.since {
        Some(_) => {
            let lists = Lists {
                global: &global,
                allow: &allow,
            };
            operator_changes(env, &query, lists, freshness, now).await?
        }
        None => None,
    };
    let since = query.delta_from(changes.is_some());
    let (probe, moves) = changes
        .as_ref()
        .map(OperatorChanges::asked)
        .unwrap_or_default();
    let client = Some(PullClient::new(
        user_agent(&req)?.as_deref(),
        query.format.code(),
    ));
    let ask = |since, known, probe, moves| Feed {
        token: token.clone(),
        client: client.clone(),
        pull: None,
        since,
        known,
        probe,
        moves,
        ..Feed::default()
    };
    let object = holder(env, license)?;
    let (mut start, mut records) = object.ask_stream(ask(since, known, probe, moves)).await?;
    let version = query.version(start.head.changes(), global_version, allow_version);
    let lists = Lists {
        global: &global,
        allow: &allow,
    };
    let (mut content, mut changes) = match (start.head, changes) {
        (FeedHead::Unchanged { .. }, _) => {
            let response = Response::empty()?.with_status(304);
            response.headers().set("ETag", &query.etag(version))?;
            return Ok(Reply::Built(response));
        }
        (FeedHead::Delta { .. }, changes) => {
            match global_changes(lists, changes, &start.own_allow) {
                Some(blocks) => (Content::Delta { cut: None }, held_apart(&start, blocks)),
                // Too much to work out: the whole feed again, as for a cursor too old.
                None => {
                    (start, records) = object
                        .ask_stream(ask(None, None, Vec::new(), AllowMoves::default()))
                        .await?;
                    // Never merged: a delta was asked for, which `aggregate`
                    // refuses. Cut below, as every whole feed `maxItems` asks cut.
                    (
                        Content::Whole {
                            reset: true,
                            merged: false,
                            cut: None,
                        },
                        GlobalChanges::default(),
                    )
                }
            }
        }
        // Changes were asked for, but the whole feed is what answers them.
        (FeedHead::Whole { .. }, _) => (
            Content::Whole {
                reset: query.since.is_some(),
                merged: query.aggregate,
                cut: None,
            },
            GlobalChanges::default(),
        ),
        (FeedHead::Renewal { .. } | FeedHead::Moved { .. } | FeedHead::Recount { .. }, _) => {
            return Err(ApiError::Internal(
                "a feed that is not a pull was answered as one".to_owned(),
            ))
        }
    };
    let (render, content_type) = match query.format.appliance() {
        Some(kind) => (
            Render::Appliance(ApplianceFile::new(
                kind,
                query.list.clone(),
                now.unix(),
                settings.ipv6,
            )),
            "text/plain; charset=utf-8",
        ),
        None if query.format == Format::Json => (Render::Json, "application/json"),
        None => (Render::Text, "text/plain; charset=utf-8"),
    };
    let published = snapshots::published(global, allow);
    // The JSON feed says which global blocks were promoted; a cut ranks them.
    let labels = query.format == Format::Json || query.max_items.is_some();
    let promoted = promoted.filter(|_| labels);
    let page = settings.objects.page_entries;
    let own_allow = start.own_allow.intervals();
    let mut items = Items::new(
        records,
        published.and_own_allow(own_allow.clone()),
        query.merging(),
        promoted.clone(),
        page,
    );
    let mut left_out = None;
    let again = read_again(object.clone());
    // The read a cut feed is written from records, with the token's pull, what
    // the cut left out.
    let recorded = |left_out: u64| Feed {
        token: token.clone(),
        client: client.clone(),
        left_out: Some(left_out),
        ..Feed::default()
    };
    match (&mut content, query.max_items, query.since_cut) {
        (Content::Whole { cut, .. }, Some(keep), _) => {
            let counted = items.cut(keep, &again).await?;
            let (_, records) = read_whole(&object, recorded(counted.left_out())).await?;
            items.restart(records);
            left_out = Some(counted.left_out());
            *cut = Some(counted);
        }
        // A cut delta: how far the cut reaches now, beside the changes.
        (Content::Delta { cut }, Some(keep), CursorCut::Bound(from)) => {
            let lists = published.and_own_allow(own_allow);
            let mut whole = Items::new(again().await?, lists, None, promoted, page);
            // Its last read records what the cut leaves out now on the token.
            let last = |left| {
                let read = read_whole(&object, recorded(left));
                async move { Ok(read.await?.1) }
            };
            let (to, left) = whole.bound(keep, &again, last).await?;
            left_out = Some(left);
            match to {
                Some(to) => {
                    // What the cut pushed out or let in is read once more.
                    if to != from {
                        whole.restart(again().await?);
                    }
                    *cut = Some(Box::new(DeltaCut {
                        shift: Shift { from, to },
                        whole,
                    }))
                }
                // The list changed as it was read: the whole feed, cut.
                None => {
                    whole.restart(again().await?);
                    let counted = whole.cut(keep, &again).await?;
                    let (_, records) = read_whole(&object, recorded(counted.left_out())).await?;
                    whole.restart(records);
                    left_out = Some(counted.left_out());
                    content = Content::Whole {
                        reset: true,
                        merged: false,
                        cut: Some(counted),
                    };
                    items = whole;
                    changes = GlobalChanges::default();
                }
            }
        }
        _ => {}
    }
    // A cut delta's cursor says how far its cut reaches now.
    let version_text = match &content {
        Content::Delta { cut: Some(cut) } => {
            format!("{version}{}", CursorCut::Bound(cut.shift.to))
        }
        _ => version.to_string(),
    };
    let body = feed_body::body(items, changes.blocks(), render, content, version_text, page);
    let response = Response::from_stream(body)?;
    response.headers().set("Content-Type", content_type)?;
    response.headers().set("ETag", &query.etag(version))?;
    if let Some(left_out) = left_out {
        response
            .headers()
            .set("X-Greylist-Left-Out", &left_out.to_string())?;
    }
    Ok(Reply::Built(response))
}

/// The client's `User-Agent`, as a feed token's record shows who pulled.
pub(super) fn user_agent(req: &Request) -> Result<Option<String>, ApiError> {
    Ok(req.headers().get("User-Agent")?)
}

/// How the global blocks of each family change in a feed's delta.
#[derive(Debug, Default)]
pub(super) struct GlobalChanges {
    pub v4: BlockChanges,
    pub v6: BlockChanges<u128>,
}

impl GlobalChanges {
    /// The blocks to drop, to add, and to name again (their label may have
    /// changed), of both families.
    pub fn blocks(self) -> DeltaBlocks {
        let both = |v4: Vec<Ipv4Range>, v6: Vec<Ipv6Range>| -> Vec<FeedBlock> {
            (v4.into_iter().map(FeedBlock::V4))
                .chain(v6.into_iter().map(FeedBlock::V6Range))
                .collect()
        };
        DeltaBlocks {
            deleted: both(self.v4.deleted, self.v6.deleted),
            added: both(self.v4.added, self.v6.added),
            relabeled: both(self.v4.relabeled, self.v6.relabeled),
        }
    }

    /// The blocks that could be one of the holder's own entries: single
    /// addresses, and IPv6 /64s, as the entries they would be.
    fn entries(&self) -> Vec<Listed> {
        let v4 = (self
            .v4
            .deleted
            .iter()
            .chain(&self.v4.added)
            .chain(&self.v4.relabeled))
        .map(|&b| FeedBlock::V4(b));
        let v6 = (self
            .v6
            .deleted
            .iter()
            .chain(&self.v6.added)
            .chain(&self.v6.relabeled))
        .map(|&b| FeedBlock::V6Range(b));
        let mut entries: Vec<Listed> = v4.chain(v6).filter_map(as_entry).collect();
        entries.sort_unstable_by_key(|listed| listed.key());
        entries.dedup();
        entries
    }
}

/// The holder's entry a global block would be, if one could be.
fn as_entry(block: FeedBlock) -> Option<Listed> {
    match block {
        FeedBlock::V4(range) if range.prefix() == 32 => {
            PublicIpv4::from_addr(range.first().into()).map(|ip| Listed::Ip(PublicIp::V4(ip)))
        }
        FeedBlock::V6Range(range) if range.prefix() == 128 => {
            PublicIpv6::from_addr(range.first().into()).map(|ip| Listed::Ip(PublicIp::V6(ip)))
        }
        FeedBlock::V6Range(range) if range.prefix() == 64 => {
            PublicIpv6::from_addr(range.first().into()).map(Listed::Net64)
        }
        _ => None,
    }
}

/// The global blocks that change, without those the holder lists as its own
/// entries: the firewall holds those as the holder's, and they stay.
pub(super) fn held_apart(start: &FeedStart, mut blocks: GlobalChanges) -> GlobalChanges {
    let listed: HashSet<Listed> = start.listed.iter().copied().collect();
    let held = |block: FeedBlock| as_entry(block).is_some_and(|entry| listed.contains(&entry));
    blocks.v4.deleted.retain(|&b| !held(FeedBlock::V4(b)));
    blocks.v4.added.retain(|&b| !held(FeedBlock::V4(b)));
    blocks.v6.deleted.retain(|&b| !held(FeedBlock::V6Range(b)));
    blocks.v6.added.retain(|&b| !held(FeedBlock::V6Range(b)));
    blocks.v4.relabeled.retain(|&b| !held(FeedBlock::V4(b)));
    blocks
        .v6
        .relabeled
        .retain(|&b| !held(FeedBlock::V6Range(b)));
    blocks
}

/// The operator's lists as a feed or a pull reads them: each with its version, and the
/// promoted parts of the global list's (`None` for a token that does not read
/// it), from which its decisions say which global blocks were promoted.
pub(super) struct VersionedLists {
    pub global: Versioned<Shards, Shards<u128>>,
    pub allow: Versioned<Rc<Intervals>, Rc<Intervals<u128>>>,
    pub promoted: Option<Promoted>,
}

impl VersionedLists {
    /// The lists as a feed's answer weighs them, each with its version.
    pub(super) fn lists(&self) -> Lists<'_> {
        Lists {
            global: &self.global,
            allow: &self.allow,
        }
    }

    pub(super) fn published(self) -> (PublishedLists, Option<Promoted>) {
        (snapshots::published(self.global, self.allow), self.promoted)
    }
}

/// The operator's lists as a feed or a pull by a token of `scope` reads them:
/// the global list's only when the token reads it. The JSON feed says which of
/// its blocks were promoted, from the promoted parts of the same version.
pub(super) async fn operator_lists(
    cx: &RequestContext,
    scope: Scope,
) -> Result<VersionedLists, ApiError> {
    let (env, now, freshness) = (&cx.env, cx.now, cx.settings.objects.freshness);
    let allow = published::intervals(env, ListKind::Allow, freshness, now).await?;
    let (global, promoted) = match scope {
        Scope::All => {
            let (global, promoted) =
                published::shards(env, ListKind::Global, freshness, now).await?;
            (global, Some(promoted))
        }
        Scope::Personal => (Versioned::default(), None),
    };
    Ok(VersionedLists {
        global,
        allow,
        promoted,
    })
}

/// The operator's lists as a feed answers from them: each with its version.
pub(super) struct Lists<'a> {
    pub global: &'a Versioned<Shards, Shards<u128>>,
    pub allow: &'a Versioned<Rc<Intervals>, Rc<Intervals<u128>>>,
}

/// What changed in the operator's lists since a feed's cursor, as the feed shows it.
pub(super) struct OperatorChanges {
    /// How the global blocks changed.
    pub blocks: GlobalChanges,
    /// Where the allow list's change moved the holder's own entries.
    pub moves: AllowMoves,
    /// The addresses whose membership changed, in the global list and in the
    /// allow list: what the blocks are worked out again from when the holder's
    /// own allow list is weighed too.
    global_change: Rc<VersionChange>,
    allow_change: Rc<VersionChange>,
}

impl OperatorChanges {
    /// The entries the holder's object looks up, and the intervals it looks in.
    pub fn asked(&self) -> (Vec<Listed>, AllowMoves) {
        (self.blocks.entries(), self.moves.clone())
    }
}

/// What changed in the global list (in a `scope=all` feed) and in the allow list
/// from the cursor's versions to the current ones, both families; `None` when the
/// published changes do not say, or would make the holder's object look up more
/// addresses or intervals than it takes: the whole feed answers then.
pub(super) async fn operator_changes(
    env: &Env,
    query: &FeedQuery,
    lists: Lists<'_>,
    freshness: Freshness,
    now: Millis,
) -> Result<Option<OperatorChanges>, ApiError> {
    let change = |kind: ListKind, since: Option<u64>, version: u64| async move {
        match since {
            Some(from) => published::changes(env, kind, (from, version), freshness, now).await,
            None => Ok(Some(Rc::default())),
        }
    };
    let (global_version, allow_version) = (lists.global.version, lists.allow.version);
    let Some(global_change) = change(
        ListKind::Global,
        query.global_since(global_version),
        global_version,
    )
    .await?
    else {
        return Ok(None);
    };
    let Some(allow_change) = change(
        ListKind::Allow,
        query.allow_since(allow_version),
        allow_version,
    )
    .await?
    else {
        return Ok(None);
    };
    let moves = AllowMoves::of(&allow_change, &lists.allow.v4, &lists.allow.v6);
    if moves.len() > MAX_MOVED_RANGES {
        return Ok(None);
    }
    let blocks = GlobalChanges {
        v4: family_changes(
            &lists.global.v4,
            (&global_change.v4, &global_change.promoted.v4),
            &lists.allow.v4,
            &allow_change.v4,
        ),
        v6: family_changes(
            &lists.global.v6,
            (&global_change.v6, &global_change.promoted.v6),
            &lists.allow.v6,
            &allow_change.v6,
        ),
    };
    Ok(
        (blocks.entries().len() <= MAX_PROBED).then_some(OperatorChanges {
            blocks,
            moves,
            global_change,
            allow_change,
        }),
    )
}

/// Global intervals a delta works the holder's allow list's changes out over at
/// most, about 16 bytes each: beyond it (a window in which the holder changed
/// many ranges full of global entries) a feed is answered whole.
pub const MAX_WEIGHED: usize = 100_000;

/// How the global blocks change in a delta, the holder's own allow list weighed
/// beside the operator's (`OwnAllow`, as its object sent it with the delta's
/// head): the blocks are cut by both lists, and a change of either moves them.
/// `changes` is `None` when the operator's lists did not change since the cursor.
/// `None` when that would hold more than `MAX_WEIGHED` global intervals.
pub(super) fn global_changes(
    lists: Lists<'_>,
    changes: Option<OperatorChanges>,
    own: &OwnAllow,
) -> Option<GlobalChanges> {
    if own.is_empty() {
        return Some(changes.map(|c| c.blocks).unwrap_or_default());
    }
    let (global_change, allow_change) = changes
        .map(|c| (c.global_change, c.allow_change))
        .unwrap_or_default();
    // Nothing changed, nothing moves: what follows reads both allow lists whole.
    if global_change.is_empty() && allow_change.is_empty() && own.change.is_empty() {
        return Some(GlobalChanges::default());
    }
    let touched = touches_more_than(&lists.global.v4, &own.change.v4, MAX_WEIGHED)
        || touches_more_than(&lists.global.v6, &own.change.v6, MAX_WEIGHED);
    if touched {
        return None;
    }
    Some(GlobalChanges {
        v4: weighed(
            &lists.global.v4,
            (&global_change.v4, &global_change.promoted.v4),
            (&lists.allow.v4, &allow_change.v4),
            (&own.v4, &own.change.v4),
        ),
        v6: weighed(
            &lists.global.v6,
            (&global_change.v6, &global_change.promoted.v6),
            (&lists.allow.v6, &allow_change.v6),
            (&own.v6, &own.change.v6),
        ),
    })
}

/// One family's set as it is now, and the addresses whose membership changed.
type NowAndChange<'a, A> = (&'a [(A, A)], &'a [(A, A)]);

/// The addresses of one family whose membership of the global list changed,
/// and those whose membership of its promoted part did.
type GlobalChange<'a, A> = (&'a [(A, A)], &'a [(A, A)]);

/// One family's block changes cut by both allow lists, each given as it is now
/// and what changed in it; the global list's change beside its promoted
/// part's.
fn weighed<A: Addr>(
    global: &Shards<A>,
    global_change: GlobalChange<'_, A>,
    (allow, allow_change): NowAndChange<'_, A>,
    (own, own_change): NowAndChange<'_, A>,
) -> BlockChanges<A> {
    let cut = combine(allow, own, Op::Union);
    let before = combine(
        &combine(allow, allow_change, Op::Xor),
        &combine(own, own_change, Op::Xor),
        Op::Union,
    );
    family_changes(
        global,
        global_change,
        &cut,
        &combine(&cut, &before, Op::Xor),
    )
}

/// How one family's global blocks change with the lists' changes of that
/// family: the global list's (its membership, then its promoted part's) and
/// the allow list's.
fn family_changes<A: Addr>(
    global: &Shards<A>,
    (global_change, promoted_change): GlobalChange<'_, A>,
    allow: &[(A, A)],
    allow_change: &[(A, A)],
) -> BlockChanges<A> {
    let around = touching(global, &combine(global_change, allow_change, Op::Union));
    let mut changes = block_changes(&around, global_change, allow, allow_change);
    changes.relabeled = relabeled(global, promoted_change, allow, &changes.added);
    changes
}

/// A new feed token: the only time it is shown.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CreatedFeedToken<'a> {
    id: &'a str,
    feed_token: &'a str,
    scope: Scope,
    decision_type: DecisionType,
    aggregate: bool,
    max_items: Option<u64>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TokenList {
    feed_tokens: Vec<FeedTokenInfo>,
}

/// What `POST /api/feedTokens` may carry as JSON.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TokenRequest {
    scope: Option<String>,
    decision_type: Option<String>,
    aggregate: Option<bool>,
    max_items: Option<u64>,
}

/// What a new token asks for.
struct Requested {
    scope: Scope,
    decision: DecisionType,
    aggregate: bool,
    max_items: Option<u64>,
}

/// What a new token asks for, as form fields or in JSON: its scope (`personal`
/// when none), its CrowdSec decisions' type (`ban` when none), whether its
/// feeds are merged (`aggregate`, not unless asked) and cut (`maxItems`, not
/// unless asked).
fn requested(body: &Body) -> Result<Requested, ApiError> {
    let (scope, decision, aggregate, max_items) = if body.is_json() {
        let asked = body
            .json::<TokenRequest>()
            .map_err(|e| ApiError::BadRequest(format!("the body is not a token request: {e}")))?;
        let max_items = asked
            .max_items
            .map(|max| cap::max_items(&max.to_string()))
            .transpose()
            .map_err(ApiError::BadRequest)?;
        (
            asked.scope,
            asked.decision_type,
            asked.aggregate.unwrap_or(false),
            max_items,
        )
    } else {
        // A form's checkbox sends `on`.
        let aggregate = match body.field("aggregate").as_deref().map(str::trim) {
            None | Some("" | "0" | "false") => false,
            Some("1" | "true" | "on") => true,
            Some(other) => {
                return Err(ApiError::BadRequest(format!(
                    "aggregate is true, false, 1, 0 or on, not {other:?}"
                )))
            }
        };
        let max_items = body
            .field("maxItems")
            .filter(|max| !max.trim().is_empty())
            .map(|max| cap::max_items(&max))
            .transpose()
            .map_err(ApiError::BadRequest)?;
        (
            body.field("scope"),
            body.field("decisionType"),
            aggregate,
            max_items,
        )
    };
    fn coded<T: Coded>(asked: Option<String>, default: T, what: &str) -> Result<T, ApiError> {
        match asked.as_deref().map(str::trim) {
            None | Some("") => Ok(default),
            Some(code) => T::from_code(code)
                .ok_or_else(|| ApiError::BadRequest(format!("{what}, not {code:?}"))),
        }
    }
    Ok(Requested {
        scope: coded(scope, Scope::Personal, "scope is personal or all")?,
        decision: coded(
            decision,
            DecisionType::Ban,
            "decisionType is ban or captcha",
        )?,
        aggregate,
        max_items,
    })
}

/// `POST /api/feedTokens`: a new read-only token for the feed, of the scope asked
/// (`personal` unless `all` is), its feeds merged if asked, shown this once.
pub async fn create_token(
    cx: &RequestContext,
    mut req: Request,
    HolderCaller { license, .. }: HolderCaller,
) -> Result<Reply, ApiError> {
    let (env, license) = (&cx.env, &license);
    let Requested {
        scope,
        decision,
        aggregate,
        max_items,
    } = requested(&Body::read(&mut req, &cx.ctx, MAX_BODY_BYTES).await?)?;
    let new = NewFeedToken::generate().map_err(StoreError::Randomness)?;
    let digest = feed_token::digest(&new.token);
    let record = NewFeedTokenRecord {
        id: new.id.clone(),
        digest: digest.clone(),
        scope,
        decision,
        aggregate,
        max_items,
    };
    holder(env, license)?.ask(CreateFeedToken(record)).await?;
    let owner = FeedTokenOwner {
        license: license.as_str().to_owned(),
        id: new.id.clone(),
        scope,
        aggregate,
        max_items,
    };
    licenses::save_feed_token(env, &digest, &owner).await?;
    Reply::json(
        201,
        &CreatedFeedToken {
            id: &new.id,
            feed_token: &new.token,
            scope,
            decision_type: decision,
            aggregate,
            max_items,
        },
    )
}

/// `GET /api/feedTokens`: id, creation and last use of each token, never the token.
pub async fn list_tokens(
    cx: &RequestContext,
    _: Request,
    HolderCaller { license, .. }: HolderCaller,
) -> Result<Reply, ApiError> {
    Reply::json(
        200,
        &TokenList {
            feed_tokens: holder(&cx.env, &license)?.ask(FeedTokens).await?,
        },
    )
}

/// `DELETE /api/feedTokens/<id>`: the token opens nothing from now on.
pub async fn revoke_token(
    cx: &RequestContext,
    _: Request,
    HolderCaller { license, .. }: HolderCaller,
) -> Result<Reply, ApiError> {
    let (env, license, id) = (&cx.env, &license, cx.id.as_str());
    if !feed_token::is_id(id) {
        return Err(ApiError::NotFound("feed token"));
    }
    let digest = holder(env, license)?
        .ask(RevokeFeedToken(id.to_owned()))
        .await?
        .ok_or(ApiError::NotFound("feed token"))?;
    licenses::forget_feed_token(env, &digest).await?;
    Ok(Reply::NoContent)
}
