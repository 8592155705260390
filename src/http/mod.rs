//! The Worker's HTTP edge: route, authenticate, call the handler, answer, log.
//! The route table is `route`; the handlers are in folders by who calls them
//! (`holder`, `feed`, `machine`, `operator`, and `auth`'s login), beside the wire
//! formats they share (`wire`); `error` is the one error mapping.

pub mod auth;
pub mod context;
pub mod error;
pub mod feed;
pub mod holder;
pub mod log;
pub mod machine;
#[cfg(not(feature = "manage"))]
pub mod manage;
pub mod operator;
pub mod route;
#[cfg(feature = "test-hooks")]
pub mod test_hooks;
pub mod wire;

use worker::{Context, Env, Request, Response};

use crate::platform::{clock, config};
use context::RequestContext;
use error::ApiError;
use log::RequestLog;
use route::{Handler, Miss};
use wire::mode::BodyMode;
use wire::reply::Reply;

pub async fn handle(req: Request, env: Env, ctx: Context) -> worker::Result<Response> {
    #[cfg(feature = "test-hooks")]
    if req.path().starts_with("/__test/") {
        return test_hooks::handle(req, &env).await;
    }
    let resolved = route::resolve(req.method().as_ref(), &req.path());
    let holders = match &resolved {
        Ok(resolved) => resolved.route.is_holders(),
        Err(Miss::MethodNotAllowed(routes)) => routes.iter().any(|route| route.is_holders()),
        // CrowdSec's clients read a JSON `message` from any error of its API's paths.
        Err(Miss::NotFound) => !req.path().trim_start_matches('/').starts_with("v1/"),
    };
    let mode = if holders {
        BodyMode::of_url(&req.inner().url())
    } else {
        BodyMode::Message
    };
    let log = RequestLog::start(resolved.as_ref().map_or("unknown", |r| r.route.name));
    let (result, log) = match resolved {
        Err(Miss::NotFound) => (Err(ApiError::NotFound("endpoint")), log),
        Err(Miss::MethodNotAllowed(routes)) => {
            (Err(ApiError::MethodNotAllowed(Miss::allowed(&routes))), log)
        }
        // A missing or unsafe setting refuses every request, not only those that read it.
        Ok(resolved) => match config::settings(&env) {
            Err(bad) => (Err(bad.into()), log),
            Ok(settings) => {
                let cx = RequestContext {
                    env,
                    ctx,
                    // The request's one reading of the clock.
                    now: clock::now(),
                    log: log.at(settings.request_log),
                    settings,
                    id: resolved.id,
                };
                let result = match resolved.route.handler {
                    // The management Worker answers it, and logs its line.
                    #[cfg(not(feature = "manage"))]
                    Handler::Managed(arrival) => match manage::forward(&cx, req, arrival).await {
                        Ok(response) => return Ok(response),
                        Err(refused) => Err(refused),
                    },
                    handler => run(handler, &cx, req).await,
                };
                (result, cx.log)
            }
        },
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

/// Proves the caller the handler asks for, then hands it the request.
async fn run(handler: Handler, cx: &RequestContext, req: Request) -> Result<Reply, ApiError> {
    match handler {
        Handler::Holder(handler) => {
            let holder = auth::caller::holder(cx, &req).await?;
            handler(cx, req, holder).await
        }
        Handler::Feed(handler) => {
            let reader = auth::caller::feed_reader(cx, &req).await?;
            handler(cx, req, reader).await
        }
        Handler::Bouncer(handler) => {
            let key = auth::caller::bouncer(cx, &req, auth::caller::Poll::ToCount).await?;
            handler(cx, req, key)
                .await
                .map_err(auth::caller::bouncer_refusal)
        }
        Handler::Machine(handler) => {
            let machine = auth::caller::machine(cx, &req, auth::caller::Poll::ToCount).await?;
            handler(cx, req, machine)
                .await
                .map_err(auth::caller::machine_refusal)
        }
        #[cfg(feature = "manage")]
        Handler::Operator(access, handler) => {
            let operator = auth::caller::operator(cx, &req, access).await?;
            handler(cx, req, operator).await
        }
        Handler::Reporter(handler) => {
            let reporter = auth::caller::reporter(&req)?;
            handler(cx, req, reporter).await
        }
        Handler::Open(handler) => handler(cx, req).await,
        #[cfg(not(feature = "manage"))]
        Handler::Managed(_) => Err(ApiError::Internal(
            "a management route was run at the edge, not forwarded".to_owned(),
        )),
        #[cfg(not(feature = "edge"))]
        Handler::Edge => Err(ApiError::Internal(
            "an edge route reached the management Worker".to_owned(),
        )),
    }
}
