//! The operator API under `/admin/`: licenses, the global list, the allow list.
//! Every handler here runs only after `auth::operator` has passed.

use serde_json::json;
use worker::{Context, Env, Request};

use super::body::Body;
use super::error::ApiError;
use super::log::RequestLog;
use super::reply::Reply;
use crate::clock;
use crate::domain::ipv4::PublicIpv4;
use crate::domain::license::LicenseId;
use crate::domain::list_edit::EditRequest;
use crate::domain::range::Ipv4Range;
use crate::store::{allow_list, global_list, holders, licenses};

pub async fn create_license(env: &Env, log: &mut RequestLog) -> Result<Reply, ApiError> {
    let (license, key) = licenses::create(env, clock::now()).await?;
    log.license = Some(license.clone());
    Ok(Reply::Json(201, json!({ "license": license.as_str(), "licenseKey": key.reveal() })))
}

pub async fn revoke_license(env: &Env, id: &str, log: &mut RequestLog) -> Result<Reply, ApiError> {
    let license = LicenseId::parse(id).ok_or(ApiError::NotFound("license"))?;
    log.license = Some(license.clone());
    if licenses::revoke(env, &license, clock::now()).await? {
        holders::revoke(env, &license).await?;
        Ok(Reply::NoContent)
    } else {
        Err(ApiError::NotFound("license"))
    }
}

pub async fn edit_global_list(mut req: Request, env: &Env, ctx: &Context) -> Result<Reply, ApiError> {
    let edit = edit_request(&mut req, ctx).await?.parse("a public IPv4 address", |s| PublicIpv4::parse(s).ok());
    let (added, removed) = global_list::apply(env, edit.map_err(ApiError::BadRequest)?).await?;
    Ok(Reply::Json(200, json!({ "added": added, "removed": removed })))
}

pub async fn edit_allow_list(mut req: Request, env: &Env, ctx: &Context) -> Result<Reply, ApiError> {
    let edit = edit_request(&mut req, ctx).await?.parse("an IPv4 address or CIDR range", Ipv4Range::parse);
    let (added, removed) = allow_list::apply(env, edit.map_err(ApiError::BadRequest)?).await?;
    Ok(Reply::Json(200, json!({ "added": added, "removed": removed })))
}

async fn edit_request(req: &mut Request, ctx: &Context) -> Result<EditRequest, ApiError> {
    Body::read(req, ctx)
        .await?
        .json()
        .map_err(|e| ApiError::BadRequest(format!("expected {{\"add\": [...], \"remove\": [...]}}: {e}")))
}
