//! The Worker's HTTP edge: route, authenticate, call the handler, answer, log.

pub mod admin;
pub mod auth;
pub mod body;
pub mod browse;
pub mod error;
pub mod feed;
pub mod list_api;
pub mod log;
pub mod login;
pub mod reply;

use worker::{Context, Env, Request, Response};

use crate::config;
use crate::domain::route::{Miss, Route};
use error::ApiError;
use log::RequestLog;
use reply::{BodyMode, Reply};

pub async fn handle(req: Request, env: Env, ctx: Context) -> worker::Result<Response> {
    let route = Route::resolve(req.method().as_ref(), &req.path());
    let holders = match &route {
        Ok(route) => route.is_holders(),
        Err(Miss::MethodNotAllowed(routes)) => routes.iter().any(Route::is_holders),
        Err(Miss::NotFound) => true,
    };
    let mode = if holders { BodyMode::of_url(&req.inner().url()) } else { BodyMode::Message };
    let mut log = RequestLog::start(route.as_ref().map_or("unknown", Route::name));
    let result = match route {
        Err(Miss::NotFound) => Err(ApiError::NotFound("endpoint")),
        Err(Miss::MethodNotAllowed(routes)) => Err(ApiError::MethodNotAllowed(Miss::allowed(&routes))),
        Ok(route) => dispatch(route, req, &env, &ctx, &mut log).await,
    };
    let response = match result {
        Ok(reply) => {
            let code = reply.code();
            let response = reply.into_response(mode)?;
            log.finish(response.status_code(), code, None);
            response
        }
        Err(error) => {
            log.finish(error.status(), error.code(), error.detail());
            error.into_response(mode)?
        }
    };
    // Answers carry tokens, keys and a holder's own list: no cache may keep them
    // (RFC 6749 §5.1), and no client may guess another content type than the one named.
    response.headers().set("Cache-Control", "no-store")?;
    response.headers().set("X-Content-Type-Options", "nosniff")?;
    Ok(response)
}

async fn dispatch(route: Route, req: Request, env: &Env, ctx: &Context, log: &mut RequestLog) -> Result<Reply, ApiError> {
    // A missing or unsafe setting refuses every request, not only those that read it.
    config::settings(env)?;
    if route.is_operator() {
        auth::operator(&req, env)?;
    }
    match route {
        Route::List(operation) => list_api::handle(operation, req, env, ctx, log).await,
        Route::Bulk(operation) => list_api::bulk(operation, req, env, ctx, log).await,
        Route::Feed => feed::feed(req, env, log).await,
        Route::CreateFeedToken => feed::create_token(req, env, log).await,
        Route::FeedTokens => feed::list_tokens(req, env, log).await,
        Route::RevokeFeedToken(id) => feed::revoke_token(req, env, &id, log).await,
        Route::ListEntries => browse::list(req, env, ctx, log).await,
        Route::History => browse::history(req, env, ctx, log).await,
        Route::Quota => browse::quota(req, env, log).await,
        Route::OpenApi => Ok(Reply::Document(include_str!(concat!(env!("OUT_DIR"), "/openapi.min.json")))),
        Route::Login => login::handle(req, env, ctx, log).await,
        Route::CreateLicense => admin::create_license(env, log).await,
        Route::Licenses => admin::licenses(req, env).await,
        Route::RevokeLicense(id) => admin::revoke_license(env, &id, log).await,
        Route::EditList(kind) => admin::edit_list(kind, req, env, ctx).await,
        Route::ReplaceList(kind) => admin::replace_list(kind, req, env).await,
        Route::ExportList(kind) => admin::export_list(kind, req, env).await,
        Route::Status => admin::status(env).await,
    }
}
