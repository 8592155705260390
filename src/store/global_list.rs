//! The global challenge list in KV: one key per address, so a lookup is one
//! read however long the list grows.

use worker::Env;

use super::cached;
use crate::domain::ipv4::PublicIpv4;
use crate::domain::list_edit::ListEdit;
use crate::http::error::ApiError;

const BINDING: &str = "GLOBAL_LIST";

pub async fn contains(env: &Env, ip: PublicIpv4) -> Result<bool, ApiError> {
    Ok(cached(env.kv(BINDING)?.get(&ip.to_string())).text().await?.is_some())
}

/// Applies removals, then additions; counts only entries that changed.
pub async fn apply(env: &Env, edit: ListEdit<PublicIpv4>) -> Result<(usize, usize), ApiError> {
    let kv = env.kv(BINDING)?;
    let (mut added, mut removed) = (0, 0);
    for ip in edit.remove {
        let key = ip.to_string();
        if kv.get(&key).text().await?.is_some() {
            kv.delete(&key).await?;
            removed += 1;
        }
    }
    for ip in edit.add {
        let key = ip.to_string();
        if kv.get(&key).text().await?.is_none() {
            kv.put(&key, "1")?.execute().await?;
            added += 1;
        }
    }
    Ok((added, removed))
}
