//! Who is calling, one `…Caller` for each kind of route (`route::Handler`): a
//! license holder with an access token (`HolderCaller`), a feed's reader with
//! an access token or a feed token (`FeedCaller`), a CrowdSec bouncer with its
//! feed token as its key (`BouncerCaller`), a CrowdSec engine with its machine
//! token (`MachineCaller`), a usage report's bouncer or engine as its headers
//! name it (`ReporterCaller`), and the operator (`OperatorCaller`). The edge
//! asks here once per request, before the route's handler, which gets the
//! caller and never reads the header itself (a usage report's handler proves
//! its reporter after the body, and a network lookup's count proves its holder
//! where it arrives: `arrival`). The rate-limiting bindings' counts are here
//! too.

use std::cell::RefCell;

use worker::{Env, Request};

use crate::domain::access::audit::Stamp;
use crate::domain::access::license::LicenseId;
use crate::domain::access::operator::{Access, Actor};
use crate::domain::access::token::{MachineBearer, MachineTokenKey, VerifiedTokens};
use crate::domain::code::Coded;
use crate::domain::feed::feed_token::{self, FeedTokenOwner, Scope};
use crate::domain::net::address::client_bucket;
use crate::domain::usage_metrics::Reporter;
use crate::http::auth::credentials::{bearer, feed_token};
use crate::http::auth::operator_key;
use crate::http::context::RequestContext;
use crate::http::error::ApiError;
use crate::store::licenses::{self, LicenseStatus};
use crate::store::machines;

thread_local! {
    static TOKENS: RefCell<VerifiedTokens> = RefCell::new(VerifiedTokens::default());
}

fn bearer_token(req: &Request) -> Result<Option<String>, ApiError> {
    Ok(req
        .headers()
        .get("Authorization")?
        .as_deref()
        .and_then(bearer)
        .map(str::to_owned))
}

/// A license holder, by an access token.
pub struct HolderCaller {
    pub license: LicenseId,
    /// The license as the isolate remembers it, read once to prove the caller:
    /// what the handler weighs the holder's addresses by.
    pub status: LicenseStatus,
}

/// A license holder with a valid access token whose license is still active;
/// the request's log line names it from here on.
pub async fn holder(cx: &RequestContext, req: &Request) -> Result<HolderCaller, ApiError> {
    let token = bearer_token(req)?.ok_or(ApiError::Unauthorized("token_missing"))?;
    let (settings, now) = (&cx.settings, cx.now);
    let license = TOKENS
        .with_borrow_mut(|tokens| tokens.verify(settings.jwt_secret.expose(), &token, now.unix()))
        .map_err(|e| ApiError::Unauthorized(e.code()))?;
    cx.log.names(&license);
    let status = licenses::status(&cx.env, &license, settings.objects.freshness, now).await?;
    if status.active {
        Ok(HolderCaller { license, status })
    } else {
        Err(ApiError::Unauthorized("license_revoked"))
    }
}

/// Who reads a feed, and what it may read.
pub struct FeedCaller {
    pub license: LicenseId,
    /// The feed token's id, for the holder's object to check it still exists;
    /// `None` for an access token.
    pub token: Option<String>,
    /// An access token reads everything; a feed token what its scope says.
    pub may_read: Scope,
    /// Whether the feed token merges its feeds, whatever a pull asks.
    pub merged: bool,
    /// The most items the feed token's feeds carry, whatever a pull asks.
    pub max_items: Option<u64>,
}

/// Who may read a feed: a holder with an access token, or with one of its feed tokens.
pub async fn feed_reader(cx: &RequestContext, req: &Request) -> Result<FeedCaller, ApiError> {
    let header = req.headers().get("Authorization")?.unwrap_or_default();
    let Some(token) = feed_token(&header) else {
        let license = holder(cx, req).await?.license;
        limit_polls(&cx.env, &format!("license:{}", license.as_str())).await?;
        return Ok(FeedCaller {
            license,
            token: None,
            may_read: Scope::All,
            merged: false,
            max_items: None,
        });
    };
    let (license, owner) = by_feed_token(cx, req, &token, Poll::ToCount).await?;
    Ok(FeedCaller {
        license,
        may_read: owner.scope,
        merged: owner.aggregate,
        max_items: owner.max_items,
        token: Some(owner.id),
    })
}

/// A CrowdSec bouncer, by the feed token it sends as its key.
pub struct BouncerCaller {
    pub license: LicenseId,
    /// The token's id: its position and its record are the holder's object's.
    pub token: String,
    /// What the token reads.
    pub scope: Scope,
    /// The most items its stream carries.
    pub max_items: Option<u64>,
}

/// Whether a credential's poll is counted as it is proved, or was as its
/// request arrived (a usage report's: `Arrival::Report`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Poll {
    ToCount,
    Counted,
}

/// Who a CrowdSec bouncer reads for: the feed token in its `X-Api-Key`. A key
/// missing, unknown or revoked is the Local API's 403, whatever the reason.
pub async fn bouncer(
    cx: &RequestContext,
    req: &Request,
    poll: Poll,
) -> Result<BouncerCaller, ApiError> {
    let key = req.headers().get("X-Api-Key")?.unwrap_or_default();
    let key = key.trim();
    if !feed_token::is_token(key) {
        return Err(ApiError::AccessForbidden("api_key_missing"));
    }
    let (license, owner) = by_feed_token(cx, req, key, poll)
        .await
        .map_err(bouncer_refusal)?;
    Ok(BouncerCaller {
        license,
        token: owner.id,
        scope: owner.scope,
        max_items: owner.max_items,
    })
}

/// A refusal as a bouncer is told it: every "who are you" refusal is its 403.
pub fn bouncer_refusal(error: ApiError) -> ApiError {
    match error {
        ApiError::Unauthorized(reason) => ApiError::AccessForbidden(reason),
        other => other,
    }
}

/// A CrowdSec engine, by the machine token it logged in for.
pub struct MachineCaller {
    /// The license it acts for, from its login record: never from what it sends.
    pub license: LicenseId,
    /// The machine's id at its holder's: its row in the holder's object (not
    /// the name it logs in with, CrowdSec's `machine_id`).
    pub machine: String,
    /// The license as the isolate remembers it, read once to prove the caller.
    pub status: LicenseStatus,
}

/// Who calls a machine route: a machine's token (a holder's fails its
/// signature, being signed under another key), whose license and machine still
/// stand as KV says within `CACHE_SECONDS`. The holder's object, where alerts
/// go, refuses a revoked machine at once. Counted per machine, as a feed
/// token's polls are, before anything is read (unless its arrival counted it:
/// `Poll::Counted`).
pub async fn machine(
    cx: &RequestContext,
    req: &Request,
    poll: Poll,
) -> Result<MachineCaller, ApiError> {
    let (env, settings, now) = (&cx.env, &cx.settings, cx.now);
    let bearer = machine_bearer(cx, req)?;
    cx.log.names(&bearer.license);
    if poll == Poll::ToCount {
        count_machine_poll(env, &bearer).await?;
    }
    let freshness = settings.objects.freshness;
    let status = licenses::status(env, &bearer.license, freshness, now).await?;
    if !status.active {
        return Err(ApiError::MachineUnauthorized("license_revoked"));
    }
    match machines::login(env, &bearer.machine_id, freshness, now).await? {
        Some(login) if login.license == bearer.license && login.id == bearer.id => {}
        _ => return Err(ApiError::MachineUnauthorized("machine_revoked")),
    }
    Ok(MachineCaller {
        license: bearer.license,
        machine: bearer.id,
        status,
    })
}

/// A machine's token, verified.
fn machine_bearer(cx: &RequestContext, req: &Request) -> Result<MachineBearer, ApiError> {
    let token = bearer_token(req)?.ok_or(ApiError::MachineUnauthorized("token_missing"))?;
    MachineTokenKey::new(cx.settings.jwt_secret.expose())
        .verify(&token, cx.now.unix())
        .map_err(|e| ApiError::MachineUnauthorized(e.code()))
}

async fn count_machine_poll(env: &Env, bearer: &MachineBearer) -> Result<(), ApiError> {
    limit_polls(env, &format!("machine:{}", bearer.machine_id.as_str())).await
}

/// Who a usage report says it comes from, from its headers alone: a bouncer
/// sends its feed token in `X-Api-Key`, an engine its machine token as a
/// bearer. It is counted as the report arrives (`count_report`) and proved by
/// the handler (`bouncer`, `machine`) once the report's body parses, so that a
/// body that does not is refused before anything is read; a key of a shape
/// never issued, or no credentials, is the Local API's 403 at once.
pub struct ReporterCaller(pub Reporter);

pub fn reporter(req: &Request) -> Result<ReporterCaller, ApiError> {
    let headers = req.headers();
    if let Some(key) = headers.get("X-Api-Key")? {
        // A key of a shape never issued costs nothing more than its refusal.
        if !feed_token::is_well_formed(key.trim()) {
            return Err(ApiError::AccessForbidden("feed_token_malformed"));
        }
        return Ok(ReporterCaller(Reporter::Bouncer));
    }
    match headers.get("Authorization")? {
        Some(_) => Ok(ReporterCaller(Reporter::Engine)),
        None => Err(ApiError::AccessForbidden("api_key_missing")),
    }
}

/// A refusal as an engine is told it: a holder object's refusal of a revoked
/// license is the machine's 401, as a revoked machine's is.
pub fn machine_refusal(error: ApiError) -> ApiError {
    match error {
        ApiError::Unauthorized(reason) => ApiError::MachineUnauthorized(reason),
        other => other,
    }
}

/// The license and record of a feed token, while both stand; its poll and its
/// client counted first unless the request's arrival counted them (`poll`).
async fn by_feed_token(
    cx: &RequestContext,
    req: &Request,
    token: &str,
    poll: Poll,
) -> Result<(LicenseId, FeedTokenOwner), ApiError> {
    let (env, now, freshness) = (&cx.env, cx.now, cx.settings.objects.freshness);
    // A token of a shape never issued costs nothing more than its refusal.
    if !feed_token::is_well_formed(token) {
        return Err(ApiError::Unauthorized("feed_token_malformed"));
    }
    let digest = feed_token::digest(token);
    if poll == Poll::ToCount {
        // Before anything is read: a flood of polls, or of made-up tokens, costs only the refusal.
        count_token_poll(env, &digest).await?;
        // A token this isolate does not remember costs a KV read: each made-up one
        // has a poll budget of its own, so its client is counted first.
        if licenses::remembered_feed_token_owner(&digest, freshness, now).is_none() {
            count_client(env, req).await?;
        }
    }
    let owner = licenses::feed_token_owner(env, &digest, freshness, now)
        .await?
        .ok_or(ApiError::Unauthorized("feed_token_unknown"))?;
    let license = owner
        .license()
        .ok_or_else(|| ApiError::Internal(format!("feed token {} names no license", owner.id)))?;
    cx.log.names(&license);
    // The license's standing, as for an access token: a revocation refuses its feed
    // tokens within the same bound, even before its holder's object is told.
    if !licenses::status(env, &license, freshness, now)
        .await?
        .active
    {
        return Err(ApiError::Unauthorized("license_revoked"));
    }
    Ok((license, owner))
}

/// The period of every rate-limiting binding (`wrangler.toml`), which the
/// binding cannot say: what a 429 tells the client to wait.
const LIMIT_PERIOD_SECONDS: u32 = 60;

/// One call counted against `key`'s budget in the rate-limiting binding
/// `binding`; 429 past it.
pub async fn count_in(env: &Env, binding: &str, key: String) -> Result<(), ApiError> {
    match env.rate_limiter(binding)?.limit(key).await?.success {
        true => Ok(()),
        false => Err(ApiError::TooManyRequests(LIMIT_PERIOD_SECONDS)),
    }
}

/// The rate-limiting binding that counts feed polls per token: 120 polls a
/// minute leave room for a poll every second, which CrowdSec's bouncers may be
/// set to (they give up for good when their first pull fails).
const FEED_LIMITER: &str = "FEED_LIMITER";

/// A usage report as it arrives, before its body is read: the credential its
/// headers name checked for its shape, its client counted, then the
/// credential, in the budget its pulls or alerts share: a bouncer's feed token
/// by its digest, an engine's machine once its token verifies (one that does
/// not is counted per client only, and refused once the body parses, as every
/// report's credential is).
pub async fn count_report(cx: &RequestContext, req: &Request) -> Result<(), ApiError> {
    // The headers' shape first, which costs nothing: a report without a
    // credential, or with a key of a shape never issued, is refused uncounted.
    let ReporterCaller(reporter) = reporter(req)?;
    count_client(&cx.env, req).await?;
    match reporter {
        Reporter::Bouncer => {
            let key = req.headers().get("X-Api-Key")?.unwrap_or_default();
            count_token_poll(&cx.env, &feed_token::digest(key.trim())).await
        }
        Reporter::Engine => match machine_bearer(cx, req) {
            Ok(bearer) => count_machine_poll(&cx.env, &bearer).await,
            Err(_) => Ok(()),
        },
    }
}

async fn count_token_poll(env: &Env, digest: &str) -> Result<(), ApiError> {
    limit_polls(env, &format!("token:{digest}")).await
}

/// A holder's lookup of what the network says of an address, counted per
/// license with the feeds' polls: each is a call to a report shard that every
/// holder's reports share, so one holder's loop must not hold it up.
pub async fn count_network_lookup(env: &Env, license: &LicenseId) -> Result<(), ApiError> {
    limit_polls(env, &format!("network:{}", license.as_str())).await
}

async fn limit_polls(env: &Env, key: &str) -> Result<(), ApiError> {
    count_in(env, FEED_LIMITER, key.to_owned()).await
}

/// The rate-limiting binding that counts logins, holders' and machines' alike.
const LOGIN_LIMITER: &str = "LOGIN_LIMITER";

/// One login counted against its client's budget, holders' and machines' alike:
/// the client's address, an IPv6 one by its /64, whose 2^64 addresses it may
/// rotate (`client_bucket`); 429 past it. A login is counted per client only:
/// a name or a key is not counted, so no one who lacks its secret can lock
/// its holder or machine out.
pub async fn count_client_login(env: &Env, req: &Request) -> Result<(), ApiError> {
    let client = req.headers().get("CF-Connecting-IP")?.unwrap_or_default();
    count_in(env, LOGIN_LIMITER, client_bucket(&client)).await
}

/// The rate-limiting binding that counts, per client address (an IPv6 one by
/// its /64), the requests whose credential costs a read to prove (a feed token
/// the isolate does not remember) or whose body is read before it is proved (a
/// usage report).
const CLIENT_LIMITER: &str = "CLIENT_LIMITER";

/// One such request counted against its client's budget, before anything is
/// read; 429 past it.
pub async fn count_client(env: &Env, req: &Request) -> Result<(), ApiError> {
    let client = req.headers().get("CF-Connecting-IP")?.unwrap_or_default();
    count_in(env, CLIENT_LIMITER, client_bucket(&client)).await
}

/// An operator who may call the route asked for, and from where.
pub struct OperatorCaller {
    pub actor: Actor,
    pub client: Option<String>,
}

impl OperatorCaller {
    /// Who acts and from where, as the audit log records it.
    pub fn stamp(&self) -> Stamp {
        Stamp {
            actor: Some(self.actor.name().to_owned()),
            key: match &self.actor {
                Actor::Key { id, .. } => Some(id.clone()),
                Actor::AdminToken => None,
            },
            client: self.client.clone(),
        }
    }
}

/// The longest path an audit row keeps of a refused call.
const LOGGED_PATH_CHARS: usize = 200;
/// The rate-limiting binding that counts operator calls made without
/// `ADMIN_TOKEN`, per client address.
const OPERATOR_LIMITER: &str = "OPERATOR_LIMITER";

/// Counts an operator call made without `ADMIN_TOKEN` against its client
/// (an IPv6 one by its /64), before anything is read: a flood of made-up keys
/// costs only the refusal, 429 past `OPERATOR_LIMITER`'s 600 a minute.
pub async fn count_operator_client(cx: &RequestContext, req: &Request) -> Result<(), ApiError> {
    let token = bearer_token(req)?;
    if token
        .as_deref()
        .is_some_and(|token| cx.settings.admits_operator(token))
    {
        return Ok(());
    }
    count_operator_call(cx, req.headers().get("CF-Connecting-IP")?.as_deref()).await
}

/// Counts an operator call already known to come without `ADMIN_TOKEN`.
async fn count_operator_call(cx: &RequestContext, client: Option<&str>) -> Result<(), ApiError> {
    let bucket = client_bucket(client.unwrap_or_default());
    count_in(&cx.env, OPERATOR_LIMITER, bucket).await
}

/// The operator, proven by `ADMIN_TOKEN` (or `ADMIN_TOKEN_NEXT` while it is
/// rotated), which opens every route without a lookup; or by a named operator
/// key whose role gives `access`, checked against the keys the directory
/// publishes in KV, so that a key revoked is refused within `CACHE_SECONDS`
/// without a call into the directory (`operator_key`). Past `OPERATOR_LIMITER`'s
/// 600 calls a minute from one client (an IPv6 one counted by its /64), a call
/// without `ADMIN_TOKEN` is refused with 429 before anything is read.
pub async fn operator(
    cx: &RequestContext,
    req: &Request,
    access: Access,
) -> Result<OperatorCaller, ApiError> {
    let client = req.headers().get("CF-Connecting-IP")?;
    let token = bearer_token(req)?;
    if token
        .as_deref()
        .is_some_and(|token| cx.settings.admits_operator(token))
    {
        return Ok(OperatorCaller {
            actor: Actor::AdminToken,
            client,
        });
    }
    // The Worker the client's request reached first counts it: a management
    // Worker's request was counted by the edge that forwarded it.
    if cfg!(feature = "edge") {
        count_operator_call(cx, client.as_deref()).await?;
    }
    let path: String = req.path().chars().take(LOGGED_PATH_CHARS).collect();
    let call = format!("{} {path}", req.method().as_ref());
    let actor = operator_key::check(cx, token.as_deref(), access, (call, client.clone())).await?;
    Ok(OperatorCaller { actor, client })
}
