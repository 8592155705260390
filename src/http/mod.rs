//! The Worker's HTTP edge: route, authenticate, call the handler, answer, log.

pub mod admin;
pub mod auth;
pub mod body;
pub mod browse;
pub mod error;
pub mod list_api;
pub mod log;
pub mod login;
pub mod reply;

use worker::{Context, Env, Request, Response};

use crate::config;
use crate::domain::route::Route;
use error::ApiError;
use log::RequestLog;
use reply::{BodyMode, Reply};

pub async fn handle(req: Request, env: Env, ctx: Context) -> worker::Result<Response> {
    let route = Route::of_path(&req.path());
    let mode = match &route {
        Some(route) if !route.is_holders() => BodyMode::Message,
        _ => BodyMode::of_url(&req.inner().url()),
    };
    let mut log = RequestLog::start(route.as_ref().map_or("unknown", Route::name));
    let result = match route {
        None => Err(ApiError::NotFound("endpoint")),
        Some(route) if req.method().as_ref() != route.method() => Err(ApiError::MethodNotAllowed(route.method())),
        Some(route) => dispatch(route, req, &env, &ctx, &mut log).await,
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
        Route::ListEntries => browse::list(req, env, ctx, log).await,
        Route::History => browse::history(req, env, ctx, log).await,
        Route::OpenApi => Ok(Reply::Document(include_str!("../openapi.json"))),
        Route::Login => login::handle(req, env, ctx, log).await,
        Route::CreateLicense => admin::create_license(env, log).await,
        Route::RevokeLicense(id) => admin::revoke_license(env, &id, log).await,
        Route::GlobalList => admin::edit_global_list(req, env, ctx).await,
        Route::AllowList => admin::edit_allow_list(req, env, ctx).await,
    }
}
