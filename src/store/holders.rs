//! Calls into a license holder's Durable Object: JSON in, JSON out.

use serde::de::DeserializeOwned;
use serde::Serialize;
use worker::{Env, Headers, Method, Request, RequestInit};

use super::StoreError;
use crate::clock;
use crate::domain::entry::{Entry, HistoryEvent};
use crate::domain::feed::{FeedAnswer, FeedRequest};
use crate::domain::feed_token::{FeedTokenInfo, NewFeedTokenRecord};
use crate::domain::holder::{Answer, Call, DailyUsage};
use crate::domain::license::LicenseId;
use crate::domain::page::{EntryCursor, HistoryCursor, Page, PageQuery};

pub const BINDING: &str = "HOLDERS";
/// What the holder's object answers, with 401, for a feed token it no longer has.
pub const FEED_TOKEN_REVOKED: &str = "feed token revoked";

/// Runs the calls in order in one visit to the holder's object; one answer per call.
pub async fn perform_calls(
    env: &Env,
    license: &LicenseId,
    calls: &[Call],
) -> Result<Vec<Answer>, StoreError> {
    let answers: Vec<Answer> = send(env, license, "calls", &calls).await?;
    if answers.len() == calls.len() {
        Ok(answers)
    } else {
        Err(StoreError::Corrupt(format!(
            "holder object answered {} of {} calls",
            answers.len(),
            calls.len()
        )))
    }
}

pub async fn list(
    env: &Env,
    license: &LicenseId,
    query: &PageQuery<EntryCursor>,
) -> Result<Page<Entry, EntryCursor>, StoreError> {
    send(env, license, "list", query).await
}

pub async fn history(
    env: &Env,
    license: &LicenseId,
    query: &PageQuery<HistoryCursor>,
) -> Result<Page<HistoryEvent, HistoryCursor>, StoreError> {
    send(env, license, "history", query).await
}

/// What the holder's day has used of the limits, as stored (of any day).
pub async fn usage(env: &Env, license: &LicenseId) -> Result<DailyUsage, StoreError> {
    send(env, license, "usage", &()).await
}

pub async fn feed(
    env: &Env,
    license: &LicenseId,
    request: &FeedRequest,
) -> Result<FeedAnswer, StoreError> {
    send(env, license, "feed", request).await
}

/// Records a new feed token; `false` when the holder has the most it may.
pub async fn create_feed_token(
    env: &Env,
    license: &LicenseId,
    record: &NewFeedTokenRecord,
) -> Result<bool, StoreError> {
    send(env, license, "feed_tokens/create", record).await
}

pub async fn feed_tokens(env: &Env, license: &LicenseId) -> Result<Vec<FeedTokenInfo>, StoreError> {
    send(env, license, "feed_tokens/list", &()).await
}

/// Deletes a feed token; its digest, or `None` when the holder had no such token.
pub async fn revoke_feed_token(
    env: &Env,
    license: &LicenseId,
    id: &str,
) -> Result<Option<String>, StoreError> {
    send(env, license, "feed_tokens/revoke", &id).await
}

/// Tells the holder's object that the license is revoked; from then on it refuses every call.
pub async fn revoke(env: &Env, license: &LicenseId) -> Result<(), StoreError> {
    send::<_, serde::de::IgnoredAny>(env, license, "revoke", &())
        .await
        .map(|_| ())
}

/// Runs the holder object's alarm now (end-to-end tests only).
#[cfg(feature = "test-hooks")]
pub async fn run_alarm(env: &Env, license: &LicenseId) -> Result<(), StoreError> {
    send::<_, serde::de::IgnoredAny>(env, license, "__test/alarm", &())
        .await
        .map(drop)
}

async fn send<T: Serialize, R: DeserializeOwned>(
    env: &Env,
    license: &LicenseId,
    route: &str,
    body: &T,
) -> Result<R, StoreError> {
    let stub = env.durable_object(BINDING)?.get_by_name(license.as_str())?;
    let json = serde_json::to_string(body)?;
    let headers = Headers::new();
    clock::forward(&headers)?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_body(Some(json.into()));
    let mut response = stub
        .fetch_with_request(Request::new_with_init(
            &format!("https://holder/{route}"),
            &init,
        )?)
        .await?;
    let text = response.text().await?;
    match response.status_code() {
        200 => serde_json::from_str(&text)
            .map_err(|e| StoreError::Corrupt(format!("holder object answered {text:?}: {e}"))),
        401 if text == FEED_TOKEN_REVOKED => Err(StoreError::FeedTokenRevoked),
        401 => Err(StoreError::LicenseRevoked),
        status => Err(StoreError::Corrupt(format!(
            "holder object answered {status}: {text}"
        ))),
    }
}
