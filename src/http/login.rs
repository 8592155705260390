//! `POST /v2/authentication/login/license`: a license key for an access token.

use serde::Deserialize;
use serde_json::json;
use worker::{Env, Request};

use super::body::Body;
use super::error::ApiError;
use super::log::RequestLog;
use super::reply::Reply;
use crate::{clock, config};
use crate::domain::token::TokenKey;
use crate::store::licenses;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LoginRequest {
    license_key: String,
}

pub async fn handle(mut req: Request, env: &Env, log: &mut RequestLog) -> Result<Reply, ApiError> {
    let body = Body::read(&mut req).await?;
    let key = if body.is_json() { body.json::<LoginRequest>().ok().map(|login| login.license_key) } else { body.field("licenseKey") };
    let key = key
        .filter(|key| !key.trim().is_empty())
        .ok_or_else(|| ApiError::BadRequest("send the license key as {\"licenseKey\": \"<LICENSE_KEY>\"}".to_owned()))?;

    let license = licenses::find_by_key(env, key.trim()).await?.ok_or(ApiError::LoginRefused)?;
    log.license = Some(license.clone());
    let lifetime = config::token_lifetime_seconds(env);
    let token = TokenKey::new(&config::secret(env, "JWT_SECRET")?).issue(&license, clock::now(), lifetime);
    Ok(Reply::Json(200, json!({ "accessToken": token, "tokenType": "Bearer", "expiresIn": lifetime })))
}
