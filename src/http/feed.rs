//! The feed a firewall pulls, and the feed tokens that open it.

use std::rc::Rc;

use serde::Serialize;
use serde_json::json;
use worker::{Env, Request, Response};

use super::error::ApiError;
use super::feed_query::{FeedQuery, Format, Scope};
use super::form;
use super::reply::Reply;
use crate::domain::feed::{FeedAnswer, FeedItem, FeedItems};
use crate::domain::feed_token::{
    self, FeedTokenInfo, FeedTokenOwner, NewFeedToken, NewFeedTokenRecord,
};
use crate::domain::ip_list::ListKind;
use crate::domain::license::LicenseId;
use crate::domain::time::{Millis, UnixTime};
use crate::objects::holder::client::holder;
use crate::objects::holder::protocol::{CreateFeedToken, Feed, FeedTokens, RevokeFeedToken};
use crate::objects::lists::client as lists;
use crate::platform::config;
use crate::store::{licenses, StoreError};

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
    let answer = holder(env, license)?
        .ask(Feed {
            token,
            since,
            known,
        })
        .await?;
    let version = query.version(answer.changes(), global_version, allow_version);
    let response = match answer {
        FeedAnswer::Unchanged { .. } => Response::empty()?.with_status(304),
        FeedAnswer::Delta { delta, .. } => {
            let (new, deleted) = delta.filter(&global, &allow);
            let items = |items: Vec<FeedItem>| items.iter().map(item_json).collect::<Vec<_>>();
            Response::from_json(
                &json!({ "new": items(new), "deleted": items(deleted), "cursor": version.to_string() }),
            )?
        }
        FeedAnswer::Whole { entries, .. } => {
            let items = FeedItems::new(entries, global, &allow);
            stream(
                items,
                query.format,
                &version.to_string(),
                query.since.is_some(),
            )?
        }
    };
    response.headers().set("ETag", &query.etag(version))?;
    Ok(Reply::Built(response))
}

/// An item as the JSON feed shows it.
fn item_json(item: &FeedItem) -> serde_json::Value {
    json!({
        "value": item.block.to_string(),
        "scope": if item.global { "global" } else { "personal" },
        "expiresAt": item.expires_at.map(UnixTime::to_rfc3339),
        "comment": item.comment,
    })
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
                        text.push_str(&item_json(&item).to_string());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::range::Ipv4Range;

    #[test]
    fn json_items_carry_scope_expiry_and_comment() {
        let block = Ipv4Range::parse("8.8.8.8").unwrap();
        let listed = FeedItem {
            block,
            global: false,
            expires_at: Some(UnixTime(1_795_262_400)),
            comment: Some("scanner".into()),
        };
        assert_eq!(
            item_json(&listed),
            json!({ "value": "8.8.8.8", "scope": "personal", "expiresAt": "2026-11-21T12:00:00Z", "comment": "scanner" })
        );
        let global = FeedItem {
            block: Ipv4Range::parse("45.0.0.0/8").unwrap(),
            global: true,
            expires_at: None,
            comment: None,
        };
        assert_eq!(item_json(&global)["scope"], "global");
    }
}
