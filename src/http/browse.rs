//! Reading a holder's own list and history, a page at a time.

use serde_json::json;
use worker::{Context, Env, Request};

use super::auth;
use super::body::{Body, MAX_BODY_BYTES};
use super::error::ApiError;
use super::log::RequestLog;
use super::reply::{Listing, Reply};
use crate::{clock, config};
use crate::domain::quota::Quota;
use crate::domain::page::PageQuery;
use crate::domain::time::UnixTime;
use crate::store::holders;

async fn page_query(mut req: Request, ctx: &Context, with_prefix: bool) -> Result<PageQuery, ApiError> {
    let body = Body::read(&mut req, ctx, MAX_BODY_BYTES).await?;
    let prefix = if with_prefix { body.field("prefix") } else { None };
    PageQuery::parse(body.field("cursor").as_deref(), body.field("limit").as_deref(), prefix.as_deref()).map_err(ApiError::BadRequest)
}

/// The caller's live entries, newest first.
pub async fn list(req: Request, env: &Env, ctx: &Context, log: &mut RequestLog) -> Result<Reply, ApiError> {
    let license = auth::license_holder(&req, env, clock::now(), log).await?;
    let page = holders::list(env, &license, &page_query(req, ctx, true).await?).await?;
    Ok(Reply::Listing(Listing {
        message: format!("{} addresses", page.total),
        lines: page.rows.iter().map(|entry| entry.ip.to_string()).collect(),
        entries: page
            .rows
            .iter()
            .map(|e| json!({ "ip": e.ip, "addedAt": e.added_at.to_rfc3339(), "expiresAt": e.expires_at.map(UnixTime::to_rfc3339), "comment": e.comment }))
            .collect(),
        cursor: page.next.map(|c| c.encode()),
    }))
}

/// `GET /api/quota`: the day's additions and removals, used and left, and when they reset.
pub async fn quota(req: Request, env: &Env, log: &mut RequestLog) -> Result<Reply, ApiError> {
    let now = clock::now();
    let license = auth::license_holder(&req, env, now, log).await?;
    let usage = holders::usage(env, &license).await?;
    let quota = Quota::of(usage, config::settings(env)?.limits, now);
    Ok(Reply::Json(200, serde_json::to_value(&quota).map_err(|e| ApiError::Internal(e.to_string()))?))
}

/// The caller's changes, newest first.
pub async fn history(req: Request, env: &Env, ctx: &Context, log: &mut RequestLog) -> Result<Reply, ApiError> {
    let license = auth::license_holder(&req, env, clock::now(), log).await?;
    let page = holders::history(env, &license, &page_query(req, ctx, false).await?).await?;
    Ok(Reply::Listing(Listing {
        message: format!("{} changes", page.total),
        lines: page
            .rows
            .iter()
            .map(|e| format!("{} {} {} {}", e.at.to_rfc3339(), e.change.code(), e.ip, e.client.as_deref().unwrap_or("-")))
            .collect(),
        entries: page.rows.iter().map(|e| json!({ "at": e.at.to_rfc3339(), "change": e.change.code(), "ip": e.ip, "client": e.client })).collect(),
        cursor: page.next.map(|c| c.encode()),
    }))
}
