//! `POST /v2/authentication/login/license`: a license key for an access token.

use serde::{Deserialize, Serialize};
use worker::Request;

use crate::domain::access::token::TokenKey;
use crate::http::auth::arrival::Arrival;
use crate::http::context::RequestContext;
use crate::http::error::ApiError;
use crate::http::wire::body::{Body, MAX_BODY_BYTES};
use crate::http::wire::reply::Reply;
use crate::objects::holder::client::holder;
use crate::objects::holder::protocol::{AdmitLicense, HolderRefusal};
use crate::objects::protocol::Failure;
use crate::store::licenses;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LoginRequest {
    license_key: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LoginAnswer {
    access_token: String,
    token_type: &'static str,
    expires_in: u64,
}

pub async fn handle(cx: &RequestContext, mut req: Request) -> Result<Reply, ApiError> {
    let (env, ctx, now) = (&cx.env, &cx.ctx, cx.now);
    // Before anything else is read, so a flood of logins costs only the refusal.
    Arrival::Login.count(cx, &req).await?;
    let body = Body::read(&mut req, ctx, MAX_BODY_BYTES).await?;
    let key = if body.is_json() {
        body.json::<LoginRequest>()
            .ok()
            .map(|login| login.license_key)
    } else {
        body.field("licenseKey")
    };
    let key = key.filter(|key| !key.trim().is_empty()).ok_or_else(|| {
        ApiError::BadRequest(
            "send the license key as {\"licenseKey\": \"<LICENSE_KEY>\"}".to_owned(),
        )
    })?;

    let license = licenses::find_by_key(env, key.trim())
        .await?
        .ok_or(ApiError::LoginRefused)?;
    cx.log.names(&license);
    // KV's edge may still show the key of a license revoked a moment ago; its
    // holder's object knows at once.
    match holder(env, &license)?.ask(AdmitLicense).await {
        Ok(()) => {}
        Err(Failure::Refused(HolderRefusal::LicenseRevoked)) => return Err(ApiError::LoginRefused),
        Err(failure) => return Err(failure.into()),
    }
    let settings = &cx.settings;
    let lifetime = settings.token_lifetime_seconds;
    let token = TokenKey::new(settings.jwt_secret.expose()).issue(&license, now.unix(), lifetime);
    Reply::json(
        200,
        &LoginAnswer {
            access_token: token,
            token_type: "Bearer",
            expires_in: lifetime,
        },
    )
}
