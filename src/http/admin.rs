//! The operator API under `/admin/`: licenses, the global list, the allow list.
//! Every handler here runs only after `auth::operator` has passed.

use serde::Serialize;
use serde_json::Value;
use worker::{Context, Env, Method, Request, Response};

use super::body::{declared_within, Body};
use super::error::ApiError;
use super::log::RequestLog;
use super::reply::Reply;
use crate::domain::form;
use crate::domain::ip_list::ListKind;
use crate::domain::license::LicenseId;
use crate::domain::page::page_size;
use crate::domain::time::Millis;
use crate::lists_object::MAX_IMPORT_BYTES;
use crate::store::licenses::LicenseSummary;
use crate::store::{holders, licenses, lists};

/// An edit of at most 10 000 entries, with room for spaces and long ranges.
pub const MAX_EDIT_BYTES: usize = 1024 * 1024;

/// A license as created: the only time its key is shown.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NewLicense<'a> {
    license: &'a str,
    license_key: &'a str,
}

#[derive(Serialize)]
struct LicensePage {
    licenses: Vec<LicenseSummary>,
    cursor: Option<String>,
}

pub async fn create_license(
    env: &Env,
    now: Millis,
    log: &mut RequestLog,
) -> Result<Reply, ApiError> {
    let (license, key) = licenses::create(env, now.unix()).await?;
    log.license = Some(license.clone());
    Reply::json(
        201,
        &NewLicense {
            license: license.as_str(),
            license_key: key.reveal(),
        },
    )
}

/// `GET /admin/licenses?cursor=&limit=`: a page of licenses with when each was created and revoked.
pub async fn licenses(req: Request, env: &Env) -> Result<Reply, ApiError> {
    let url = req.inner().url();
    let query: Vec<(String, String)> = form_urlencoded::parse(form::query_of(&url).as_bytes())
        .into_owned()
        .collect();
    let field = |name| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let limit = page_size(field("limit")).map_err(ApiError::BadRequest)?;
    let (licenses, cursor) =
        licenses::page(env, field("cursor").filter(|c| !c.is_empty()), limit).await?;
    Reply::json(200, &LicensePage { licenses, cursor })
}

pub async fn revoke_license(
    env: &Env,
    id: &str,
    now: Millis,
    log: &mut RequestLog,
) -> Result<Reply, ApiError> {
    let license = LicenseId::parse(id).ok_or(ApiError::NotFound("license"))?;
    log.license = Some(license.clone());
    if licenses::revoke(env, &license, now.unix()).await? {
        holders::revoke(env, &license).await?;
        Ok(Reply::NoContent)
    } else {
        Err(ApiError::NotFound("license"))
    }
}

/// `POST`: `{"add": [...], "remove": [...]}`, checked and applied by the lists' writer.
pub async fn edit_list(
    kind: ListKind,
    mut req: Request,
    env: &Env,
    ctx: &Context,
) -> Result<Reply, ApiError> {
    let body = Body::read(&mut req, ctx, MAX_EDIT_BYTES).await?;
    let response = lists::call(
        env,
        Method::Post,
        "edit",
        Some(kind),
        &[],
        Some(body.text().into()),
    )
    .await?;
    Ok(Reply::Json(200, writer_json(response).await?))
}

/// `PUT`: the whole list as text, streamed to the writer, which parses it as it arrives.
pub async fn replace_list(kind: ListKind, req: Request, env: &Env) -> Result<Reply, ApiError> {
    declared_within(&req, MAX_IMPORT_BYTES)?;
    let body = req.inner().body().map(Into::into);
    let response = lists::call(env, Method::Put, "replace", Some(kind), &[], body).await?;
    Ok(Reply::Json(200, writer_json(response).await?))
}

/// `GET`: the list in the import format, streamed from the writer, with its version as `ETag`.
pub async fn export_list(kind: ListKind, req: Request, env: &Env) -> Result<Reply, ApiError> {
    let if_none_match = req.headers().get("If-None-Match")?.unwrap_or_default();
    let mut response = lists::call(
        env,
        Method::Get,
        "export",
        Some(kind),
        &[("If-None-Match", &if_none_match)],
        None,
    )
    .await?;
    match response.status_code() {
        200 | 304 => Ok(Reply::Passed(response)),
        status => Err(writer_error(status, &response.text().await?)),
    }
}

/// `GET /admin/status`: both lists' sizes and published versions, and the number of licenses.
pub async fn status(env: &Env) -> Result<Reply, ApiError> {
    let mut status =
        writer_json(lists::call(env, Method::Get, "status", None, &[], None).await?).await?;
    status["licenses"] = licenses::count(env).await?.into();
    Ok(Reply::Json(200, status))
}

/// The writer's answer: its JSON, or its refusal as this API's error.
async fn writer_json(mut response: Response) -> Result<Value, ApiError> {
    let status = response.status_code();
    let text = response.text().await?;
    match status {
        200 => serde_json::from_str(&text)
            .map_err(|e| ApiError::Internal(format!("lists object answered {text:?}: {e}"))),
        status => Err(writer_error(status, &text)),
    }
}

/// A refusal of the writer as this API's error; anything else it answers is a fault.
fn writer_error(status: u16, text: &str) -> ApiError {
    let message = || {
        serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|v| v["message"].as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    match status {
        400 => ApiError::BadRequest(message()),
        413 => ApiError::PayloadTooLarge(MAX_IMPORT_BYTES),
        _ => ApiError::Internal(format!("lists object answered {status}: {text}")),
    }
}
