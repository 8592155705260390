//! The feed a firewall pulls, and the feed tokens that open it.

use serde::Serialize;
use worker::{Env, Request, Response};

use super::error::ApiError;
use super::feed_body::{self, Operator, Shape};
use super::feed_query::{FeedQuery, Format, Scope};
use super::form;
use super::reply::Reply;
use crate::domain::delta::{block_changes, touching, BlockChanges};
use crate::domain::feed::FeedHead;
use crate::domain::feed_token::{
    self, FeedTokenInfo, FeedTokenOwner, NewFeedToken, NewFeedTokenRecord,
};
use crate::domain::intervals::Intervals;
use crate::domain::ip_list::ListKind;
use crate::domain::license::LicenseId;
use crate::domain::range::Ipv4Range;
use crate::domain::settings::Freshness;
use crate::domain::snapshot::Shards;
use crate::domain::time::Millis;
use crate::objects::holder::client::holder;
use crate::objects::holder::protocol::{CreateFeedToken, Feed, FeedTokens, RevokeFeedToken};
use crate::objects::lists::client as lists;
use crate::platform::config;
use crate::store::holder_feed::MAX_PROBED;
use crate::store::{licenses, StoreError};

/// `GET /api/greylistFeed`: the whole feed as text or JSON, or (JSON with
/// `since`) the changes after a cursor. Costs one call to the holder's object,
/// whose records stream through as they come; with the current `If-None-Match`
/// it answers 304 and sends nothing else.
pub async fn feed(
    license: &LicenseId,
    token: Option<String>,
    req: Request,
    env: &Env,
    now: Millis,
) -> Result<Reply, ApiError> {
    let query =
        FeedQuery::parse(form::query_of(&req.inner().url())).map_err(ApiError::BadRequest)?;
    let settings = config::settings(env)?;
    let freshness = settings.freshness;
    let (allow_version, allow) = lists::intervals(env, ListKind::Allow, freshness, now).await?;
    // The global list as the isolate holds it; the feed leaves out what the allow list holds.
    let (global_version, global) = match query.scope {
        Scope::All => lists::shards(env, ListKind::Global, freshness, now).await?,
        Scope::Personal => (0, Shards::default()),
    };
    let if_none_match = req.headers().get("If-None-Match")?.unwrap_or_default();
    let known = query.known_changes(&if_none_match, global_version, allow_version);
    let changes = match query.global_since(global_version, allow_version) {
        Some(from) => {
            global_changes(env, (from, global_version), &global, &allow, freshness, now).await?
        }
        None => None,
    };
    let since = query.delta_from(global_version, allow_version, changes.is_some());
    let probe = changes.as_ref().map(probed).unwrap_or_default();
    let (start, records) = holder(env, license)?
        .ask_stream(Feed {
            token,
            since,
            known,
            probe,
        })
        .await?;
    let version = query.version(start.head.changes(), global_version, allow_version);
    let (shape, changes) = match (start.head, changes) {
        (FeedHead::Unchanged { .. }, _) => {
            let response = Response::empty()?.with_status(304);
            response.headers().set("ETag", &query.etag(version))?;
            return Ok(Reply::Built(response));
        }
        // The firewall holds the holder's own entries of these addresses: they stay.
        (FeedHead::Delta { .. }, Some(mut changes)) => {
            let held = |block: &Ipv4Range| {
                block.prefix() == 32 && start.listed.binary_search(&block.first()).is_ok()
            };
            changes.deleted.retain(|block| !held(block));
            changes.added.retain(|block| !held(block));
            (Shape::Delta, changes)
        }
        (FeedHead::Delta { .. }, None) => (Shape::Delta, BlockChanges::default()),
        // Changes were asked for, but the whole feed is what answers them.
        (FeedHead::Whole { .. }, _) => (
            Shape::Whole {
                reset: query.since.is_some(),
            },
            BlockChanges::default(),
        ),
    };
    let content_type = match query.format {
        Format::Text => "text/plain; charset=utf-8",
        Format::Json => "application/json",
    };
    let operator = Operator { global, allow };
    let body = feed_body::body(
        records,
        operator,
        changes,
        query.format,
        shape,
        version.to_string(),
        settings.page_entries,
    );
    let response = Response::from_stream(body)?;
    response.headers().set("Content-Type", content_type)?;
    response.headers().set("ETag", &query.etag(version))?;
    Ok(Reply::Built(response))
}

/// How the feed's global blocks changed from the cursor's version of the global
/// list to the current one (`global`, version `span.1`), the allow list unchanged; `None` when the published
/// changes do not say, or would make the holder's object look up more addresses
/// than it takes: the whole feed answers then.
async fn global_changes(
    env: &Env,
    span: (u64, u64),
    global: &Shards,
    allow: &Intervals,
    freshness: Freshness,
    now: Millis,
) -> Result<Option<BlockChanges>, ApiError> {
    let Some(change) = lists::changes(env, ListKind::Global, span, freshness, now).await? else {
        return Ok(None);
    };
    let changes = block_changes(&touching(global, &change), &change, allow);
    Ok((probed(&changes).len() <= MAX_PROBED).then_some(changes))
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
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TokenList {
    feed_tokens: Vec<FeedTokenInfo>,
}

/// `POST /api/feedTokens`: a new read-only token for the feed, shown this once.
pub async fn create_token(license: &LicenseId, env: &Env) -> Result<Reply, ApiError> {
    let new = NewFeedToken::generate().map_err(StoreError::Randomness)?;
    let digest = feed_token::digest(&new.token);
    let record = NewFeedTokenRecord {
        id: new.id.clone(),
        digest: digest.clone(),
    };
    holder(env, license)?.ask(CreateFeedToken(record)).await?;
    let owner = FeedTokenOwner {
        license: license.as_str().to_owned(),
        id: new.id.clone(),
    };
    licenses::save_feed_token(env, &digest, &owner).await?;
    Reply::json(
        201,
        &CreatedFeedToken {
            id: &new.id,
            feed_token: &new.token,
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
