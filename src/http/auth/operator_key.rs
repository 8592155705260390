//! An operator key, checked in the Worker against the keys the directory
//! publishes in KV (`store::operator_keys`), never by a call into the
//! directory: a flood of made-up or revoked keys, from one client or from many,
//! reaches no object but for its refusals' tally (`RefusalTally`), told at most
//! once a minute an isolate, and when the log is read.

use std::cell::RefCell;
use std::rc::Rc;

use crate::domain::access::audit::{RefusalTally, Refusals, Stamp};
use crate::domain::access::license::key_digest;
use crate::domain::access::operator::{is_operator_key, Access, Actor, KnownKeys};
use crate::domain::net::address::client_bucket;
use crate::http::context::RequestContext;
use crate::http::error::ApiError;
use crate::objects::directory::client::directory;
use crate::objects::directory::protocol::{PublishKeys, RecordRefusals};
use crate::store::operator_keys;

thread_local! {
    /// The refusals this isolate counted that the directory has not heard of.
    static REFUSED: RefCell<RefusalTally> = RefCell::new(RefusalTally::default());
}

/// The caller a key names, while it stands and its role gives `access`; else
/// the refusal (401, or 403 with why), counted against `client` for the `call`
/// (`METHOD /path`) and answered.
pub async fn check(
    cx: &RequestContext,
    token: Option<&str>,
    access: Access,
    (call, client): (String, Option<String>),
) -> Result<Actor, ApiError> {
    // A token of another shape than a key's was never issued: nothing is read.
    let Some(digest) = token.filter(|token| is_operator_key(token)).map(key_digest) else {
        return Err(refuse(cx, ApiError::AdminUnauthorized, None, (call, client)).await);
    };
    let known = known_keys(cx).await?;
    let (refusal, named) = match known.caller(&digest) {
        Ok(actor) => match actor.may(access) {
            Ok(()) => return Ok(actor),
            Err(denied) => (ApiError::Forbidden(denied.message()), Some(actor)),
        },
        // A revoked key's refusals are recorded under its name.
        Err(revoked) => (
            ApiError::AdminUnauthorized,
            revoked.map(|key| Actor::Key {
                id: key.id.clone(),
                name: key.name.clone(),
                role: key.role,
            }),
        ),
    };
    Err(refuse(cx, refusal, named, (call, client)).await)
}

/// The keys as KV and this isolate's memory say; before the directory first
/// published them (an upgrade's first key check), as it publishes them now.
async fn known_keys(cx: &RequestContext) -> Result<Rc<KnownKeys>, ApiError> {
    let (env, freshness, now) = (&cx.env, cx.settings.objects.freshness, cx.now);
    if let Some(known) = operator_keys::known(env, freshness, now).await? {
        return Ok(known);
    }
    let known = Rc::new(directory(env)?.ask(PublishKeys).await?);
    operator_keys::remember(known.clone(), now);
    Ok(known)
}

/// Counts a refusal, tells the directory what the tally says to tell now, and
/// answers the refusal, whether or not the directory took the tally.
async fn refuse(
    cx: &RequestContext,
    refusal: ApiError,
    named: Option<Actor>,
    (call, client): (String, Option<String>),
) -> ApiError {
    let (actor, key) = match named {
        Some(Actor::Key { id, name, .. }) => (Some(name), Some(id)),
        _ => (None, None),
    };
    let bucket = client_bucket(client.as_deref().unwrap_or_default());
    let refused = Refusals {
        at: cx.now.0,
        call,
        status: refusal.status().to_string(),
        by: Stamp { actor, key, client },
        count: 1,
    };
    let told = REFUSED.with_borrow_mut(|tally| tally.refused(bucket, refused));
    tell(cx, told).await;
    refusal
}

/// Tells the directory every refusal this isolate counted: before the log is
/// read, so that it holds them.
pub async fn tell_counted(cx: &RequestContext) {
    let told = REFUSED.with_borrow_mut(RefusalTally::take);
    tell(cx, told).await;
}

async fn tell(cx: &RequestContext, refusals: Vec<Refusals>) {
    if refusals.is_empty() {
        return;
    }
    let count = refusals.len();
    let told = match directory(&cx.env) {
        Ok(directory) => directory
            .ask(RecordRefusals(refusals))
            .await
            .map_err(|failure| format!("{failure:?}")),
        Err(error) => Err(error.to_string()),
    };
    // The refusals stand; only their rows are lost, and the log says so.
    if let Err(why) = told {
        worker::console_error!("operator refusals: {count} counts not recorded ({why})");
    }
}
