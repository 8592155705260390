//! Who is calling: a license holder with an access token, or the operator.
//! Handlers get an identity from here and never read the header themselves.

use std::cell::RefCell;

use worker::{Env, Request};

use super::error::ApiError;
use super::log::RequestLog;
use crate::config;
use crate::domain::time::UnixTime;
use crate::domain::license::{secrets_match, LicenseId};
use crate::domain::token::{bearer, VerifiedTokens};
use crate::store::licenses;

thread_local! {
    static TOKENS: RefCell<VerifiedTokens> = RefCell::new(VerifiedTokens::default());
}

fn bearer_token(req: &Request) -> Result<Option<String>, ApiError> {
    Ok(req.headers().get("Authorization")?.as_deref().and_then(bearer).map(str::to_owned))
}

/// The license of a valid access token whose license is still active; the
/// request's log line names it from here on.
pub async fn license_holder(req: &Request, env: &Env, now: UnixTime, log: &mut RequestLog) -> Result<LicenseId, ApiError> {
    let token = bearer_token(req)?.ok_or(ApiError::Unauthorized("token_missing"))?;
    let settings = config::settings(env)?;
    let license = TOKENS.with_borrow_mut(|tokens| tokens.verify(&settings.jwt_secret, &token, now)).map_err(|e| ApiError::Unauthorized(e.code()))?;
    log.license = Some(license.clone());
    if licenses::is_active(env, &license, settings.freshness, now.0 * 1000).await? {
        Ok(license)
    } else {
        Err(ApiError::Unauthorized("license_revoked"))
    }
}

/// The operator, proven by `ADMIN_TOKEN`, compared in constant time.
pub fn operator(req: &Request, env: &Env) -> Result<(), ApiError> {
    let settings = config::settings(env)?;
    match bearer_token(req)? {
        Some(token) if secrets_match(&token, &settings.admin_token) => Ok(()),
        _ => Err(ApiError::AdminUnauthorized),
    }
}
