//! The Worker's HTTP edge: route, authenticate, call the handler, answer, log.
//! Wire formats (forms, bulk bodies, feed queries, credentials, ETags, RateLimit
//! headers) live here, beside the handlers; `error.rs` is the one error mapping.

pub mod admin;
pub mod appliance;
pub mod auth;
pub mod body;
pub mod browse;
pub mod bulk;
pub mod console;
pub mod credentials;
pub mod decisions;
pub mod error;
pub mod etag;
pub mod feed;
pub mod feed_body;
pub mod feed_query;
pub mod form;
pub mod list_api;
pub mod log;
pub mod login;
pub mod rate_limit;
pub mod reply;
pub mod route;
#[cfg(feature = "test-hooks")]
pub mod test_hooks;

use worker::{Context, Env, Request, Response};

use crate::domain::license::LicenseId;
use crate::domain::time::Millis;
use crate::platform::{clock, config};
use auth::Operator;
use error::ApiError;
use log::RequestLog;
use reply::{BodyMode, Reply};
use route::{BouncerRoute, HolderRoute, Miss, OperatorRoute, Route};

pub async fn handle(req: Request, env: Env, ctx: Context) -> worker::Result<Response> {
    #[cfg(feature = "test-hooks")]
    if req.path().starts_with("/__test/") {
        return test_hooks::handle(req, &env).await;
    }
    let route = Route::resolve(req.method().as_ref(), &req.path());
    let holders = match &route {
        Ok(route) => route.is_holders(),
        Err(Miss::MethodNotAllowed(routes)) => routes.iter().any(Route::is_holders),
        // CrowdSec's clients read a JSON `message` from any error of its API's paths.
        Err(Miss::NotFound) => !req.path().trim_start_matches('/').starts_with("v1/"),
    };
    let mode = if holders {
        BodyMode::of_url(&req.inner().url())
    } else {
        BodyMode::Message
    };
    let mut log = RequestLog::start(route.as_ref().map_or("unknown", Route::name));
    let result = match route {
        Err(Miss::NotFound) => Err(ApiError::NotFound("endpoint")),
        Err(Miss::MethodNotAllowed(routes)) => {
            Err(ApiError::MethodNotAllowed(Miss::allowed(&routes)))
        }
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
    response
        .headers()
        .set("X-Content-Type-Options", "nosniff")?;
    Ok(response)
}

async fn dispatch(
    route: Route,
    req: Request,
    env: &Env,
    ctx: &Context,
    log: &mut RequestLog,
) -> Result<Reply, ApiError> {
    // A missing or unsafe setting refuses every request, not only those that read it.
    config::settings(env)?;
    // The request's one reading of the clock: every rule and cache it meets sees the same moment.
    let now = clock::now();
    match route {
        Route::Holder(route) => {
            let license = auth::license_holder(&req, env, now, log).await?;
            holder(route, &license, req, env, ctx, now).await
        }
        Route::Feed => {
            let reader = auth::feed_reader(&req, env, now, log).await?;
            feed::feed(reader, req, env, now).await
        }
        Route::Bouncer(route) => {
            let reader = auth::bouncer(&req, env, now, log).await?;
            let answer = match route {
                BouncerRoute::Stream => decisions::stream(reader, req, env, now).await,
                BouncerRoute::StreamHead => decisions::stream_head(),
                BouncerRoute::Decisions => decisions::live(reader, req, env, now).await,
            };
            answer.map_err(auth::bouncer_refusal)
        }
        Route::Operator(route) => {
            let operator = auth::operator(&req, env, &route).await?;
            operator_route(route, req, env, ctx, (&operator, log)).await
        }
        Route::Login => login::handle(req, env, ctx, now, log).await,
    }
}

/// A holder's routes, reached only with the license its access token proved.
async fn holder(
    route: HolderRoute,
    license: &LicenseId,
    req: Request,
    env: &Env,
    ctx: &Context,
    now: Millis,
) -> Result<Reply, ApiError> {
    match route {
        HolderRoute::Single(operation) => {
            list_api::single(operation, license, req, env, ctx, now).await
        }
        HolderRoute::Bulk(operation) => {
            list_api::bulk(operation, license, req, env, ctx, now).await
        }
        HolderRoute::ListEntries => browse::list(license, req, env, ctx).await,
        HolderRoute::History => browse::history(license, req, env, ctx).await,
        HolderRoute::Quota => browse::quota(license, env, now).await,
        HolderRoute::Activity => browse::activity(license, env).await,
        HolderRoute::CreateFeedToken => feed::create_token(license, req, env, ctx).await,
        HolderRoute::FeedTokens => feed::list_tokens(license, env).await,
        HolderRoute::RevokeFeedToken(id) => feed::revoke_token(license, env, &id).await,
    }
}

/// The operator's routes, reached only by a caller whose role allows each.
async fn operator_route(
    route: OperatorRoute,
    req: Request,
    env: &Env,
    ctx: &Context,
    (operator, log): (&Operator, &mut RequestLog),
) -> Result<Reply, ApiError> {
    use OperatorRoute as O;
    match route {
        O::CreateLicense => console::create_license(req, env, ctx, (operator, log)).await,
        O::Licenses => console::licenses(req, env).await,
        O::License(id) => console::license(&id, env, log).await,
        O::Relabel(id) => console::relabel(&id, req, env, ctx, operator).await,
        O::RevokeLicense(id) => console::revoke_license(&id, env, (operator, log)).await,
        O::EditList(kind) => admin::edit_list(kind, req, env, ctx, operator).await,
        O::ReplaceList(kind) => admin::replace_list(kind, req, env, operator).await,
        O::ExportList(kind) => admin::export_list(kind, req, env).await,
        O::Status => admin::status(env).await,
        O::CreateKey => console::create_key(req, env, ctx, operator).await,
        O::Keys => console::keys(env).await,
        O::RevokeKey(id) => console::revoke_key(&id, env, operator).await,
        O::Audit => console::audit(req, env).await,
        O::Lookup => console::lookup(req, env, log).await,
    }
}
