//! The feed a firewall pulls, and the feed tokens that open it.

use std::rc::Rc;

use serde::{Deserialize, Serialize};
use worker::{Context, Env, Request, Response};

use super::appliance::ApplianceFile;
use super::auth::FeedReader;
use super::body::{Body, MAX_BODY_BYTES};
use super::error::ApiError;
use super::feed_body::{self, Operator, Render, Shape};
use super::feed_query::{FeedQuery, Format};
use super::form;
use super::reply::Reply;
use crate::domain::code::Coded;
use crate::domain::decision::DecisionType;
use crate::domain::delta::{block_changes, touching, AllowMoves, BlockChanges};
use crate::domain::feed::FeedHead;
use crate::domain::feed_token::{
    self, FeedTokenInfo, FeedTokenOwner, NewFeedToken, NewFeedTokenRecord, PullClient, Scope,
};
use crate::domain::intervals::{combine, Intervals, Op};
use crate::domain::ip_list::ListKind;
use crate::domain::license::LicenseId;
use crate::domain::range::Ipv4Range;
use crate::domain::settings::Freshness;
use crate::domain::snapshot::Shards;
use crate::domain::time::Millis;
use crate::objects::holder::client::holder;
use crate::objects::holder::protocol::{
    CreateFeedToken, Feed, FeedStart, FeedTokens, RevokeFeedToken,
};
use crate::objects::lists::client as lists;
use crate::platform::config;
use crate::store::holder_feed::{MAX_MOVED_RANGES, MAX_PROBED};
use crate::store::snapshots::Whole;
use crate::store::{licenses, StoreError};

/// `GET /api/greylistFeed`: the whole feed as text or JSON, or (JSON with
/// `since`) the changes after a cursor. Costs one call to the holder's object,
/// whose records stream through as they come; with the current `If-None-Match`
/// it answers 304 and sends nothing else.
pub async fn feed(
    reader: FeedReader,
    req: Request,
    env: &Env,
    now: Millis,
) -> Result<Reply, ApiError> {
    let FeedReader {
        license,
        token,
        may_read,
    } = reader;
    let license = &license;
    let query =
        FeedQuery::parse(form::query_of(&req.inner().url())).map_err(ApiError::BadRequest)?;
    if !may_read.allows(query.scope) {
        return Err(ApiError::Forbidden(
            "this feed token reads the personal list only (scope personal); create one of scope all to read the global list too".to_owned(),
        ));
    }
    let settings = config::settings(env)?;
    let freshness = settings.freshness;
    let allow = lists::intervals(env, ListKind::Allow, freshness, now).await?;
    // The global list as the isolate holds it; the feed leaves out what the allow list holds.
    let global = match query.scope {
        Scope::All => lists::shards(env, ListKind::Global, freshness, now).await?,
        Scope::Personal => Whole::default(),
    };
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
    let (start, records) = holder(env, license)?
        .ask_stream(Feed {
            token,
            client: Some(PullClient::new(
                user_agent(&req)?.as_deref(),
                query.format.code(),
            )),
            pull: None,
            since,
            known,
            probe,
            moves,
        })
        .await?;
    let version = query.version(start.head.changes(), global_version, allow_version);
    let (shape, changes) = match (start.head, changes) {
        (FeedHead::Unchanged { .. }, _) => {
            let response = Response::empty()?.with_status(304);
            response.headers().set("ETag", &query.etag(version))?;
            return Ok(Reply::Built(response));
        }
        (FeedHead::Delta { .. }, changes) => (
            Shape::Delta,
            held_apart(&start, changes.map(|c| c.blocks).unwrap_or_default()),
        ),
        // Changes were asked for, but the whole feed is what answers them.
        (FeedHead::Whole { .. }, _) => (
            Shape::Whole {
                reset: query.since.is_some(),
            },
            BlockChanges::default(),
        ),
        (FeedHead::Renewal { .. } | FeedHead::Moved { .. }, _) => {
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
    let operator = Operator {
        global: global.v4,
        allow: allow.v4,
        global6: global.v6,
        allow6: allow.v6,
    };
    let body = feed_body::body(
        records,
        operator,
        changes,
        render,
        shape,
        version.to_string(),
        settings.page_entries,
    );
    let response = Response::from_stream(body)?;
    response.headers().set("Content-Type", content_type)?;
    response.headers().set("ETag", &query.etag(version))?;
    Ok(Reply::Built(response))
}

/// The client's `User-Agent`, as a feed token's record shows who pulled.
pub(super) fn user_agent(req: &Request) -> Result<Option<String>, ApiError> {
    Ok(req.headers().get("User-Agent")?)
}

/// The global blocks that change, without the single addresses the holder lists
/// itself: the firewall holds those as the holder's own entries, and they stay.
pub(super) fn held_apart(start: &FeedStart, mut blocks: BlockChanges) -> BlockChanges {
    let held = |block: &Ipv4Range| {
        block.prefix() == 32 && start.listed.binary_search(&block.first()).is_ok()
    };
    blocks.deleted.retain(|block| !held(block));
    blocks.added.retain(|block| !held(block));
    blocks
}

/// The operator's lists as a feed answers from them: each with its version.
pub(super) struct Lists<'a> {
    pub global: &'a Whole<Shards, Shards<u128>>,
    pub allow: &'a Whole<Rc<Intervals>, Rc<Intervals<u128>>>,
}

/// What changed in the operator's lists since a feed's cursor, as the feed shows it.
pub(super) struct OperatorChanges {
    /// How the global blocks changed.
    pub blocks: BlockChanges,
    /// Where the allow list's change moved the holder's own entries.
    pub moves: AllowMoves,
}

impl OperatorChanges {
    /// The addresses the holder's object looks up, and the intervals it looks in.
    pub fn asked(&self) -> (Vec<u32>, AllowMoves) {
        (probed(&self.blocks), self.moves.clone())
    }
}

/// What changed in the global list (in a `scope=all` feed) and in the allow list
/// from the cursor's versions to the current ones; `None` when the published
/// changes do not say, or would make the holder's object look up more addresses
/// or intervals than it takes: the whole feed answers then.
pub(super) async fn operator_changes(
    env: &Env,
    query: &FeedQuery,
    lists: Lists<'_>,
    freshness: Freshness,
    now: Millis,
) -> Result<Option<OperatorChanges>, ApiError> {
    let change = |kind: ListKind, since: Option<u64>, version: u64| async move {
        match since {
            Some(from) => lists::changes(env, kind, (from, version), freshness, now).await,
            None => Ok(Some(Rc::default())),
        }
    };
    let (global_version, global) = (lists.global.version, &lists.global.v4);
    let (allow_version, allow) = (lists.allow.version, &lists.allow.v4);
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
    // A change of the lists' IPv6 part is answered with the whole feed: the
    // changes a feed shows are worked out for IPv4 blocks and entries.
    if !global_change.v6.is_empty() || !allow_change.v6.is_empty() {
        return Ok(None);
    }
    let (global_change, allow_change) = (&global_change.v4, &allow_change.v4);
    let moves = AllowMoves::of(allow_change, allow);
    if moves.hidden.len() + moves.shown.len() > MAX_MOVED_RANGES {
        return Ok(None);
    }
    let around = touching(global, &combine(global_change, allow_change, Op::Union));
    let blocks = block_changes(&around, global_change, allow, allow_change);
    Ok((probed(&blocks).len() <= MAX_PROBED).then_some(OperatorChanges { blocks, moves }))
}

/// The single addresses among the blocks that change, ascending.
fn probed(changes: &BlockChanges) -> Vec<u32> {
    let mut addrs: Vec<u32> = changes
        .deleted
        .iter()
        .chain(&changes.added)
        .filter(|block| block.prefix() == 32)
        .map(Ipv4Range::first)
        .collect();
    addrs.sort_unstable();
    addrs.dedup();
    addrs
}

/// A new feed token: the only time it is shown.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CreatedFeedToken<'a> {
    id: &'a str,
    feed_token: &'a str,
    scope: Scope,
    decision_type: DecisionType,
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
}

/// What a new token asks for, as form fields or in JSON: its scope (`personal`
/// when none) and its CrowdSec decisions' type (`ban` when none).
fn requested(body: &Body) -> Result<(Scope, DecisionType), ApiError> {
    let (scope, decision) = if body.is_json() {
        let asked = body
            .json::<TokenRequest>()
            .map_err(|e| ApiError::BadRequest(format!("the body is not a token request: {e}")))?;
        (asked.scope, asked.decision_type)
    } else {
        (body.field("scope"), body.field("decisionType"))
    };
    fn coded<T: Coded>(asked: Option<String>, default: T, what: &str) -> Result<T, ApiError> {
        match asked.as_deref().map(str::trim) {
            None | Some("") => Ok(default),
            Some(code) => T::from_code(code)
                .ok_or_else(|| ApiError::BadRequest(format!("{what}, not {code:?}"))),
        }
    }
    Ok((
        coded(scope, Scope::Personal, "scope is personal or all")?,
        coded(
            decision,
            DecisionType::Ban,
            "decisionType is ban or captcha",
        )?,
    ))
}

/// `POST /api/feedTokens`: a new read-only token for the feed, of the scope asked
/// (`personal` unless `all` is), shown this once.
pub async fn create_token(
    license: &LicenseId,
    mut req: Request,
    env: &Env,
    ctx: &Context,
) -> Result<Reply, ApiError> {
    let (scope, decision) = requested(&Body::read(&mut req, ctx, MAX_BODY_BYTES).await?)?;
    let new = NewFeedToken::generate().map_err(StoreError::Randomness)?;
    let digest = feed_token::digest(&new.token);
    let record = NewFeedTokenRecord {
        id: new.id.clone(),
        digest: digest.clone(),
        scope,
        decision,
    };
    holder(env, license)?.ask(CreateFeedToken(record)).await?;
    let owner = FeedTokenOwner {
        license: license.as_str().to_owned(),
        id: new.id.clone(),
        scope,
    };
    licenses::save_feed_token(env, &digest, &owner).await?;
    Reply::json(
        201,
        &CreatedFeedToken {
            id: &new.id,
            feed_token: &new.token,
            scope,
            decision_type: decision,
        },
    )
}

/// `GET /api/feedTokens`: id, creation and last use of each token, never the token.
pub async fn list_tokens(license: &LicenseId, env: &Env) -> Result<Reply, ApiError> {
    Reply::json(
        200,
        &TokenList {
            feed_tokens: holder(env, license)?.ask(FeedTokens).await?,
        },
    )
}

/// `DELETE /api/feedTokens/<id>`: the token opens nothing from now on.
pub async fn revoke_token(license: &LicenseId, env: &Env, id: &str) -> Result<Reply, ApiError> {
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
