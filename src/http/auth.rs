//! Who is calling: a license holder with an access token, or the operator.
//! The edge asks here once per request, before the route's handler, which gets
//! the identity and never reads the header itself.

use std::cell::RefCell;

use worker::{Env, Request};

use super::credentials::{bearer, feed_token};
use super::error::ApiError;
use super::log::RequestLog;
use crate::domain::feed_token;
use crate::domain::license::{secrets_match, LicenseId};
use crate::domain::time::Millis;
use crate::domain::token::VerifiedTokens;
use crate::platform::config;
use crate::store::licenses;

thread_local! {
    static TOKENS: RefCell<VerifiedTokens> = RefCell::new(VerifiedTokens::default());
}

fn bearer_token(req: &Request) -> Result<Option<String>, ApiError> {
    Ok(req
        .headers()
        .get("Authorization")?
        .as_deref()
        .and_then(bearer)
        .map(str::to_owned))
}

/// The license of a valid access token whose license is still active; the
/// request's log line names it from here on.
pub async fn license_holder(
    req: &Request,
    env: &Env,
    now: Millis,
    log: &mut RequestLog,
) -> Result<LicenseId, ApiError> {
    let token = bearer_token(req)?.ok_or(ApiError::Unauthorized("token_missing"))?;
    let settings = config::settings(env)?;
    let license = TOKENS
        .with_borrow_mut(|tokens| tokens.verify(settings.jwt_secret.expose(), &token, now.unix()))
        .map_err(|e| ApiError::Unauthorized(e.code()))?;
    log.license = Some(license.clone());
    if licenses::is_active(env, &license, settings.freshness, now).await? {
        Ok(license)
    } else {
        Err(ApiError::Unauthorized("license_revoked"))
    }
}

/// Who may read a feed: a holder with an access token, or with one of its feed
/// tokens (whose id comes along, for the holder's object to check it still exists).
pub async fn feed_reader(
    req: &Request,
    env: &Env,
    now: Millis,
    log: &mut RequestLog,
) -> Result<(LicenseId, Option<String>), ApiError> {
    let header = req.headers().get("Authorization")?.unwrap_or_default();
    let Some(token) = feed_token(&header) else {
        return Ok((license_holder(req, env, now, log).await?, None));
    };
    let owner = licenses::feed_token_owner(env, &feed_token::digest(&token))
        .await?
        .ok_or(ApiError::Unauthorized("feed_token_unknown"))?;
    let license = owner
        .license()
        .ok_or_else(|| ApiError::Internal(format!("feed token {} names no license", owner.id)))?;
    log.license = Some(license.clone());
    Ok((license, Some(owner.id)))
}

/// The operator, proven by `ADMIN_TOKEN`, compared in constant time.
pub fn operator(req: &Request, env: &Env) -> Result<(), ApiError> {
    let settings = config::settings(env)?;
    match bearer_token(req)? {
        Some(token) if secrets_match(&token, settings.admin_token.expose()) => Ok(()),
        _ => Err(ApiError::AdminUnauthorized),
    }
}
