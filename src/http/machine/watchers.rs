//! `POST /v1/watchers/login`: a CrowdSec engine's machine name and password
//! for a machine token, answered as the Local API answers it; and `POST
//! /v1/watchers`, the engine's self-registration, which this service refuses:
//! a machine is made by its holder.

use serde::{Deserialize, Serialize};
use worker::Request;

use crate::domain::access::token::{MachineBearer, MachineTokenKey};
use crate::domain::machines::credentials::{kept_scenarios, password_matches, MachineId};
use crate::http::auth::arrival::Arrival;
use crate::http::context::RequestContext;
use crate::http::error::ApiError;
use crate::http::wire::body::Body;
use crate::http::wire::reply::Reply;
use crate::objects::holder::client::holder;
use crate::objects::holder::protocol::HolderRefusal::{LicenseRevoked, MachineRevoked};
use crate::objects::holder::protocol::RecordMachineLogin;
use crate::objects::protocol::Failure;
use crate::store::{licenses, machines};

/// What an engine sends (`WatcherAuthRequest`); anything else is a refused login.
#[derive(Default, Deserialize)]
struct WatcherLogin {
    machine_id: Option<String>,
    password: Option<String>,
    scenarios: Option<Vec<String>>,
}

/// What the Local API answers (`WatcherAuthResponse`): `expire` is the
/// token's own `exp`, which the engine renews a minute before.
#[derive(Serialize)]
struct WatcherToken {
    code: u16,
    expire: String,
    token: String,
}

/// A login's body at most: the scenarios of a hub installed whole, with room
/// to spare (those past `MAX_SCENARIOS` are not kept).
const MAX_LOGIN_BYTES: usize = 64 * 1024;
/// A login, in the order that makes a refusal cheapest: counted per client
/// first (only: a name is never counted, so no one who lacks the password can
/// lock the machine out), then the name's shape (no read for a name the
/// service never made), the login record (KV, remembered by the isolate; none
/// read at all for a machine the isolate saw revoked), the password against
/// its digest, the license's standing, and last the holder's object, which
/// refuses a revoked machine at once and records the login and its scenarios.
/// Every refusal is the Local API's 401, whatever its reason.
pub async fn login(cx: &RequestContext, mut req: Request) -> Result<Reply, ApiError> {
    let (env, now, freshness) = (&cx.env, cx.now, cx.settings.objects.freshness);
    Arrival::Login.count(cx, &req).await?;
    // CrowdSec's engines from 1.7 gzip a body over 5 KB, and a login lists every
    // scenario installed.
    let body = Body::read_decoded(&mut req, &cx.ctx, MAX_LOGIN_BYTES).await?;
    let asked = body.json::<WatcherLogin>().unwrap_or_default();
    let machine_id = asked
        .machine_id
        .as_deref()
        .map(str::trim)
        .and_then(MachineId::parse)
        .ok_or(ApiError::MachineLoginRefused)?;
    let record = machines::login(env, &machine_id, freshness, now)
        .await?
        .ok_or(ApiError::MachineLoginRefused)?;
    let password = asked.password.unwrap_or_default();
    if !password_matches(&password, &record.digest) {
        return Err(ApiError::MachineLoginRefused);
    }
    cx.log.names(&record.license);
    if !licenses::status(env, &record.license, freshness, now)
        .await?
        .active
    {
        return Err(ApiError::MachineLoginRefused);
    }
    let admit = RecordMachineLogin {
        id: record.id.clone(),
        scenarios: kept_scenarios(&asked.scenarios.unwrap_or_default()),
    };
    match holder(env, &record.license)?.ask(admit).await {
        Ok(()) => {}
        Err(Failure::Refused(MachineRevoked | LicenseRevoked)) => {
            machines::remember_revoked(&machine_id);
            return Err(ApiError::MachineLoginRefused);
        }
        Err(failure) => return Err(failure.into()),
    }
    let bearer = MachineBearer {
        license: record.license,
        id: record.id,
        machine_id,
    };
    let key = MachineTokenKey::new(cx.settings.jwt_secret.expose());
    let (token, expires_at) = key.issue(&bearer, now.unix());
    Reply::json(
        200,
        &WatcherToken {
            code: 200,
            expire: expires_at.to_rfc3339(),
            token,
        },
    )
}

/// `POST /v1/watchers`: an engine registering itself (`cscli lapi register`),
/// which this service never lets it: a machine is made by its holder.
pub async fn register(_: &RequestContext, _: Request) -> Result<Reply, ApiError> {
    Err(ApiError::Forbidden(
        "machines are made by their license holder (POST /api/machines)".to_owned(),
    ))
}
