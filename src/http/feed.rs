//! The feed a firewall pulls, and the feed tokens that open it.

use std::rc::Rc;

use serde::Serialize;
use serde_json::json;
use worker::{Env, Request, Response};

use super::error::ApiError;
use super::reply::Reply;
use crate::config;
use crate::domain::feed::{FeedItem, FeedItems, FeedQuery, FeedRequest, Format, Scope};
use crate::domain::feed_token::{
    self, FeedTokenInfo, FeedTokenOwner, NewFeedToken, NewFeedTokenRecord, MAX_PER_HOLDER,
};
use crate::domain::form;
use crate::domain::ip_list::ListKind;
use crate::domain::license::LicenseId;
use crate::domain::time::Millis;
use crate::store::{holders, licenses, lists, StoreError};

/// Items in one part of a streamed feed.
const PART_ITEMS: usize = 10_000;

/// `GET /api/greylistFeed`: the whole feed as text or JSON, or (JSON with
/// `since`) the changes after a cursor. Costs one call to the holder's object;
/// with the current `If-None-Match` it answers 304 and sends nothing else.
pub async fn feed(
    license: &LicenseId,
    token: Option<String>,
    req: Request,
    env: &Env,
    now: Millis,
) -> Result<Reply, ApiError> {
    let query =
        FeedQuery::parse(form::query_of(&req.inner().url())).map_err(ApiError::BadRequest)?;
    let freshness = config::settings(env)?.freshness;
    let (allow_version, allow) = lists::intervals(env, ListKind::Allow, freshness, now).await?;
    // The global list as the feed holds it: without what the allow list holds.
    let (global_version, global) = match query.scope {
        Scope::All => {
            let (global_version, _, challenged) = lists::challenged(env, freshness, now).await?;
            (global_version, challenged)
        }
        Scope::Personal => (0, Rc::default()),
    };
    let if_none_match = req.headers().get("If-None-Match")?.unwrap_or_default();
    let known = query.known_changes(&if_none_match, global_version, allow_version);
    let since = query.delta_from(global_version, allow_version);
    let answer = holders::feed(
        env,
        license,
        &FeedRequest {
            token,
            since,
            known,
        },
    )
    .await?;
    let version = query.version(answer.changes, global_version, allow_version);
    let etag = query.etag(version);
    let response = if answer.unchanged {
        Response::empty()?.with_status(304)
    } else if let Some(delta) = answer.delta {
        let (new, deleted) = delta.filter(&global, &allow);
        let items = |items: Vec<FeedItem>| items.iter().map(FeedItem::json).collect::<Vec<_>>();
        Response::from_json(
            &json!({ "new": items(new), "deleted": items(deleted), "cursor": version.to_string() }),
        )?
    } else {
        let items = FeedItems::new(answer.entries.unwrap_or_default(), global, &allow);
        let reset = query.since.is_some();
        stream(items, query.format, &version.to_string(), reset)?
    };
    response.headers().set("ETag", &etag)?;
    Ok(Reply::Passed(response))
}

/// The whole feed, a part at a time: never one string of a million lines.
fn stream(
    mut items: FeedItems,
    format: Format,
    version: &str,
    reset: bool,
) -> Result<Response, ApiError> {
    let (head, tail, content_type) = match format {
        Format::Text => (
            format!(
                "# greylist feed, version {version}, {} entries\n",
                items.total()
            ),
            String::new(),
            "text/plain; charset=utf-8",
        ),
        Format::Json => {
            let reset = if reset { "\"reset\":true," } else { "" };
            (
                format!(
                    "{{{reset}\"version\":\"{version}\",\"cursor\":\"{version}\",\"entries\":["
                ),
                "]}".to_owned(),
                "application/json",
            )
        }
    };
    let mut first = true;
    let parts = std::iter::from_fn(move || {
        let part: Vec<FeedItem> = items.by_ref().take(PART_ITEMS).collect();
        (!part.is_empty()).then(|| {
            let mut text = String::new();
            for item in part {
                match format {
                    Format::Text => {
                        text.push_str(&item.text());
                        text.push('\n');
                    }
                    Format::Json => {
                        if !std::mem::take(&mut first) {
                            text.push(',');
                        }
                        text.push_str(&item.json().to_string());
                    }
                }
            }
            text
        })
    });
    let body = std::iter::once(head)
        .chain(parts)
        .chain(std::iter::once(tail))
        .map(|text| Ok::<_, worker::Error>(text.into_bytes()));
    let response = Response::from_stream(futures_util::stream::iter(body))?;
    response.headers().set("Content-Type", content_type)?;
    Ok(response)
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
struct FeedTokens {
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
    if !holders::create_feed_token(env, license, &record).await? {
        return Err(ApiError::Conflict(format!(
            "at most {MAX_PER_HOLDER} feed tokens; revoke one first"
        )));
    }
    licenses::save_feed_token(
        env,
        &digest,
        &FeedTokenOwner {
            license: license.as_str().to_owned(),
            id: new.id.clone(),
        },
    )
    .await?;
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
        &FeedTokens {
            feed_tokens: holders::feed_tokens(env, license).await?,
        },
    )
}

/// `DELETE /api/feedTokens/<id>`: the token opens nothing from now on.
pub async fn revoke_token(license: &LicenseId, env: &Env, id: &str) -> Result<Reply, ApiError> {
    if !feed_token::is_id(id) {
        return Err(ApiError::NotFound("feed token"));
    }
    let digest = holders::revoke_feed_token(env, license, id)
        .await?
        .ok_or(ApiError::NotFound("feed token"))?;
    licenses::forget_feed_token(env, &digest).await?;
    Ok(Reply::NoContent)
}
