//! `POST /v2/authentication/login/license`: a license key for an access token.

use serde::Deserialize;
use serde_json::json;
use worker::{Date, Env, Request};

use super::body;
use super::error::ApiError;
use super::log::RequestLog;
use super::reply::Reply;
use crate::config;
use crate::domain::form;
use crate::domain::holder::UnixTime;
use crate::domain::token::TokenKey;
use crate::store::licenses;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LoginRequest {
    license_key: String,
}

pub async fn handle(mut req: Request, env: &Env, log: &mut RequestLog) -> Result<Reply, ApiError> {
    let content_type = req.headers().get("Content-Type")?.unwrap_or_default();
    let body = body::read_limited(&mut req).await?;
    let key = if form::media_type(&content_type).eq_ignore_ascii_case("application/json") {
        serde_json::from_slice::<LoginRequest>(&body).ok().map(|login| login.license_key)
    } else {
        form::first_field(&content_type, &body, "licenseKey")
    };
    let key = key
        .filter(|key| !key.trim().is_empty())
        .ok_or_else(|| ApiError::BadRequest("send the license key as {\"licenseKey\": \"<LICENSE_KEY>\"}".to_owned()))?;

    let license = licenses::find_by_key(env, key.trim()).await?.ok_or(ApiError::LoginRefused)?;
    log.license = Some(license.clone());
    let lifetime = config::token_lifetime_seconds(env);
    let now = UnixTime(Date::now().as_millis() / 1000);
    let token = TokenKey::new(&config::secret(env, "JWT_SECRET")?).issue(&license, now, lifetime);
    Ok(Reply::Json(200, json!({ "accessToken": token, "tokenType": "Bearer", "expiresIn": lifetime })))
}
