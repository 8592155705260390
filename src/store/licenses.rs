//! License records in KV: `license:<id>` holds the record, `key:<sha256 of key>`
//! points at the id. The key itself is never stored.

use std::cell::RefCell;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use worker::kv::KvStore;
use worker::Env;

use super::{cached, for_each_key, fresh, list_page, StoreError};
use crate::domain::feed_token::FeedTokenOwner;
use crate::domain::license::{key_digest, LicenseId, LicenseKey};
use crate::domain::settings::Freshness;
use crate::domain::time::{Millis, UnixTime};

const BINDING: &str = "LICENSES";
/// How many licenses' standing one isolate remembers before it starts afresh.
const REMEMBERED: usize = 10_000;

thread_local! {
    /// License id → (read at; active). Workers isolates are single-threaded.
    static STANDING: RefCell<HashMap<String, (Millis, bool)>> = RefCell::new(HashMap::new());
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LicenseRecord {
    key_digest: String,
    created_at: u64,
    revoked_at: Option<u64>,
}

/// What the operator's listing shows of a license. It rides on the record's key as
/// KV metadata, so that a page of 1 000 licenses is one list call, not 1 000 reads.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LicenseSummary {
    pub license: String,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Standing {
    created_at: u64,
    revoked_at: Option<u64>,
}

impl LicenseRecord {
    fn standing(&self) -> Standing {
        Standing {
            created_at: self.created_at,
            revoked_at: self.revoked_at,
        }
    }
}

impl Standing {
    fn summary(&self, id: &str) -> LicenseSummary {
        LicenseSummary {
            license: id.to_owned(),
            created_at: UnixTime(self.created_at).to_rfc3339(),
            revoked_at: self.revoked_at.map(|at| UnixTime(at).to_rfc3339()),
        }
    }
}

async fn save(kv: &KvStore, id: &LicenseId, record: &LicenseRecord) -> Result<(), StoreError> {
    let text = serde_json::to_string(record)?;
    kv.put(&record_key(id), text)?
        .metadata(record.standing())?
        .execute()
        .await?;
    Ok(())
}

const RECORD_PREFIX: &str = "license:";

fn record_key(id: &LicenseId) -> String {
    format!("{RECORD_PREFIX}{}", id.as_str())
}

fn digest_key(digest: &str) -> String {
    format!("key:{digest}")
}

pub async fn create(env: &Env, now: UnixTime) -> Result<(LicenseId, LicenseKey), StoreError> {
    let (id, key) = (LicenseId::generate()?, LicenseKey::generate()?);
    let digest = key_digest(key.reveal());
    let kv = env.kv(BINDING)?;
    save(
        &kv,
        &id,
        &LicenseRecord {
            key_digest: digest.clone(),
            created_at: now.0,
            revoked_at: None,
        },
    )
    .await?;
    kv.put(&digest_key(&digest), id.as_str())?.execute().await?;
    Ok((id, key))
}

/// Marks the license revoked and forgets its key; `false` when there is no such license.
pub async fn revoke(env: &Env, id: &LicenseId, now: UnixTime) -> Result<bool, StoreError> {
    let kv = env.kv(BINDING)?;
    let Some(mut record) = kv.get(&record_key(id)).json::<LicenseRecord>().await? else {
        return Ok(false);
    };
    kv.delete(&digest_key(&record.key_digest)).await?;
    STANDING.with_borrow_mut(|standing| standing.remove(id.as_str()));
    if record.revoked_at.is_none() {
        record.revoked_at = Some(now.0);
        save(&kv, id, &record).await?;
    }
    Ok(true)
}

/// The active license a key belongs to, if any: one read, since revoking deletes
/// the key's record before it marks the license.
pub async fn find_by_key(env: &Env, key: &str) -> Result<Option<LicenseId>, StoreError> {
    let id = cached(env.kv(BINDING)?.get(&digest_key(&key_digest(key))))
        .text()
        .await?;
    Ok(id.as_deref().and_then(LicenseId::parse))
}

/// Whether the license exists and is not revoked, as KV says within the edge
/// cache's period; the isolate remembers the answer for its own period, so most
/// requests read nothing.
pub async fn is_active(
    env: &Env,
    id: &LicenseId,
    freshness: Freshness,
    now: Millis,
) -> Result<bool, StoreError> {
    let remembered = STANDING.with_borrow(|standing| {
        standing
            .get(id.as_str())
            .filter(|(at, _)| fresh(*at, now, freshness))
            .map(|(_, active)| *active)
    });
    if let Some(active) = remembered {
        return Ok(active);
    }
    let record = cached(env.kv(BINDING)?.get(&record_key(id)))
        .json::<LicenseRecord>()
        .await?;
    let active = record.is_some_and(|r| r.revoked_at.is_none());
    if freshness.isolate_seconds() > 0 {
        STANDING.with_borrow_mut(|standing| {
            if standing.len() >= REMEMBERED {
                standing.clear();
            }
            standing.insert(id.as_str().to_owned(), (now, active));
        });
    }
    Ok(active)
}

/// One page of licenses, in the order of their ids, and the cursor of the next.
/// A record written before its key carried metadata is read.
pub async fn page(
    env: &Env,
    cursor: Option<&str>,
    limit: u32,
) -> Result<(Vec<LicenseSummary>, Option<String>), StoreError> {
    let kv = env.kv(BINDING)?;
    let (keys, next) = list_page(
        &kv,
        Some(RECORD_PREFIX),
        cursor.map(str::to_owned),
        Some(limit.into()),
    )
    .await
    .map_err(|e| match cursor {
        Some(_) => StoreError::UnknownCursor,
        None => e.into(),
    })?;
    let mut licenses = Vec::with_capacity(keys.len());
    for key in &keys {
        let id = key.name.strip_prefix(RECORD_PREFIX).unwrap_or(&key.name);
        let standing = match key
            .metadata
            .clone()
            .and_then(|m| serde_json::from_value::<Standing>(m).ok())
        {
            Some(standing) => Some(standing),
            None => kv
                .get(&key.name)
                .json::<LicenseRecord>()
                .await?
                .map(|record| record.standing()),
        };
        licenses.extend(standing.map(|standing| standing.summary(id)));
    }
    Ok((licenses, next))
}

/// How many licenses were ever created, revoked ones included.
pub async fn count(env: &Env) -> Result<usize, StoreError> {
    let mut count = 0;
    for_each_key(&env.kv(BINDING)?, Some(RECORD_PREFIX), |keys| {
        count += keys.len()
    })
    .await?;
    Ok(count)
}

fn feed_token_key(digest: &str) -> String {
    format!("feed:{digest}")
}

/// Remembers whose a feed token is, under its digest.
pub async fn save_feed_token(
    env: &Env,
    digest: &str,
    owner: &FeedTokenOwner,
) -> Result<(), StoreError> {
    let record = serde_json::to_string(owner)?;
    env.kv(BINDING)?
        .put(&feed_token_key(digest), record)?
        .execute()
        .await?;
    Ok(())
}

/// Whose the token with this digest is, as KV says within the edge cache's period;
/// the holder's object then checks that the token still exists.
pub async fn feed_token_owner(
    env: &Env,
    digest: &str,
) -> Result<Option<FeedTokenOwner>, StoreError> {
    Ok(cached(env.kv(BINDING)?.get(&feed_token_key(digest)))
        .json()
        .await?)
}

pub async fn forget_feed_token(env: &Env, digest: &str) -> Result<(), StoreError> {
    env.kv(BINDING)?.delete(&feed_token_key(digest)).await?;
    Ok(())
}
