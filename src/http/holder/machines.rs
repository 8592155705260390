//! A holder's CrowdSec engines ("machines"): make one (its login name and
//! password, the password shown this once), list them with their last login,
//! last alert and counts, change a label or what their alerts do, revoke one.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use worker::Request;

use crate::domain::machines::credentials::{
    self, password_digest, MachineChange, MachineInfo, MachineLogin, MachineSettings, NewMachine,
    NewMachineRecord,
};
use crate::http::auth::caller::HolderCaller;
use crate::http::context::RequestContext;
use crate::http::error::ApiError;
use crate::http::wire::body::{Body, MAX_BODY_BYTES};
use crate::http::wire::reply::Reply;
use crate::objects::holder::client::holder;
use crate::objects::holder::protocol::{ChangeMachine, CreateMachine, Machines, RevokeMachine};
use crate::store::{machines, StoreError};

/// A new machine: the only time its password is shown.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Created<'a> {
    id: &'a str,
    machine_id: &'a str,
    password: &'a str,
    name: Option<&'a str>,
    ttl: u64,
    adds: bool,
}

#[derive(Serialize)]
struct MachineList {
    machines: Vec<MachineInfo>,
}

/// The fields a machine's request may carry as JSON: a number or a boolean as
/// such, or as text, as a form gives them.
#[derive(Default, Deserialize)]
struct MachineFields {
    name: Option<String>,
    ttl: Option<Value>,
    adds: Option<Value>,
}

/// A field's value as text, as a form would give it.
fn text(value: Option<Value>, what: &str) -> Result<Option<String>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(Value::Number(number)) => Ok(Some(number.to_string())),
        Some(Value::Bool(flag)) => Ok(Some(flag.to_string())),
        Some(_) => Err(ApiError::BadRequest(format!("{what} is not a value"))),
    }
}

fn not_fields(error: serde_json::Error) -> ApiError {
    ApiError::BadRequest(format!("the body is not a machine's fields: {error}"))
}

/// A machine's `name`, `ttl` and `adds`, each as text when given.
type Fields = (Option<String>, Option<String>, Option<String>);

/// `name`, `ttl` and `adds` as form fields or in JSON; an empty body gives none.
fn fields(body: &Body) -> Result<Fields, ApiError> {
    if !body.is_json() {
        return Ok((body.field("name"), body.field("ttl"), body.field("adds")));
    }
    let fields: MachineFields = if body.is_empty() {
        MachineFields::default()
    } else {
        body.json().map_err(not_fields)?
    };
    Ok((
        fields.name,
        text(fields.ttl, "ttl")?,
        text(fields.adds, "adds")?,
    ))
}

/// `POST /api/machines`: a new machine with an optional `name`, its login name
/// and password made by the service, at most 20 per holder. The holder's
/// object takes its slot first, so a holder at the twenty is refused without a
/// KV write; its login record goes to KV next, and a write that fails gives the
/// slot back (a machine kept without its record would take one of the twenty
/// with a password nobody has). A record whose machine the holder's object
/// does not keep admits nothing (`RecordMachineLogin` refuses it).
pub async fn create(
    cx: &RequestContext,
    mut req: Request,
    HolderCaller { license, .. }: HolderCaller,
) -> Result<Reply, ApiError> {
    let env = &cx.env;
    let body = Body::read(&mut req, &cx.ctx, MAX_BODY_BYTES).await?;
    let (name, _, _) = fields(&body)?;
    let name = credentials::name(name.as_deref()).map_err(ApiError::BadRequest)?;
    let new = NewMachine::generate().map_err(StoreError::Randomness)?;
    let record = NewMachineRecord {
        id: new.id.clone(),
        machine_id: new.machine_id.clone(),
        name: name.clone(),
    };
    let login = MachineLogin {
        license: license.clone(),
        id: new.id.clone(),
        digest: password_digest(&new.password),
    };
    let object = holder(env, &license)?;
    object.ask(CreateMachine(record)).await?;
    if let Err(fault) = machines::save(env, &new.machine_id, &login).await {
        object.ask(RevokeMachine(new.id.clone())).await?;
        return Err(fault.into());
    }
    let settings = MachineSettings::default();
    Reply::json(
        201,
        &Created {
            id: &new.id,
            machine_id: new.machine_id.as_str(),
            password: &new.password,
            name: name.as_deref(),
            ttl: settings.ttl,
            adds: settings.adds,
        },
    )
}

/// `GET /api/machines`: every machine with its last login and alert, the
/// scenarios it last named, its counts and settings; never a password.
pub async fn list(
    cx: &RequestContext,
    _: Request,
    HolderCaller { license, .. }: HolderCaller,
) -> Result<Reply, ApiError> {
    Reply::json(
        200,
        &MachineList {
            machines: holder(&cx.env, &license)?.ask(Machines).await?,
        },
    )
}

/// `PATCH /api/machines/<id>`: its `name`, `ttl` (seconds) or `adds` (true or
/// false), each as given; answers the machine as it is now.
pub async fn change(
    cx: &RequestContext,
    mut req: Request,
    HolderCaller { license, .. }: HolderCaller,
) -> Result<Reply, ApiError> {
    let id = cx.id.as_str();
    if !credentials::is_id(id) {
        return Err(ApiError::NotFound("machine"));
    }
    let body = Body::read(&mut req, &cx.ctx, MAX_BODY_BYTES).await?;
    let (name, ttl, adds) = fields(&body)?;
    let change = MachineChange::parse(name.as_deref(), ttl.as_deref(), adds.as_deref())
        .map_err(ApiError::BadRequest)?;
    if change == MachineChange::default() {
        return Err(ApiError::BadRequest(
            "give a name, a ttl or adds to change".to_owned(),
        ));
    }
    let call = ChangeMachine {
        id: id.to_owned(),
        change,
    };
    let machine = holder(&cx.env, &license)?
        .ask(call)
        .await?
        .ok_or(ApiError::NotFound("machine"))?;
    Reply::json(200, &machine)
}

/// `DELETE /api/machines/<id>`: the machine logs in no more, and its tokens
/// are refused by its holder's object at once, everywhere within
/// `CACHE_SECONDS`.
pub async fn revoke(
    cx: &RequestContext,
    _: Request,
    HolderCaller { license, .. }: HolderCaller,
) -> Result<Reply, ApiError> {
    let (env, id) = (&cx.env, cx.id.as_str());
    if !credentials::is_id(id) {
        return Err(ApiError::NotFound("machine"));
    }
    let machine_id = holder(env, &license)?
        .ask(RevokeMachine(id.to_owned()))
        .await?
        .ok_or(ApiError::NotFound("machine"))?;
    machines::forget(env, &machine_id).await?;
    Ok(Reply::NoContent)
}
