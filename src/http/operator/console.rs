//! The operator's console under `/admin/`: licenses with their labels and their
//! whole picture, named operator keys, the audit log, and the lookup of one
//! address. Every handler here runs only after `auth::caller::operator` has passed
//! for its route, and is handed who acts.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use worker::{Context, Request};

use crate::domain::access::audit::AuditFilter;
use crate::domain::access::license::LicenseId;
use crate::domain::access::operator::{
    is_key_id, text_field, Role, MAX_LABEL_CHARS, MAX_NOTE_CHARS,
};
use crate::domain::net::address::{Listed, PublicIp};
use crate::domain::page::page_size;
use crate::http::auth::caller::OperatorCaller;
use crate::http::auth::operator_key;
use crate::http::context::RequestContext;
use crate::http::error::ApiError;
use crate::http::holder::allow::AllowView;
use crate::http::holder::browse::EntryView;
use crate::http::operator::network::{self, NetworkSetting, StandingView};
use crate::http::wire::body::Body;
use crate::http::wire::reply::{to_json, Reply};
use crate::objects::directory::client::directory;
use crate::objects::directory::protocol::{
    Audit, CreateKey, CreateLicense, Keys, License, Licenses, Relabel, RevokeKey,
};
use crate::objects::holder::client::holder;
use crate::objects::holder::protocol::{self as holder_calls, AddressListing, SetNetwork, Summary};
use crate::objects::operator_lists::client::operator_lists;
use crate::objects::operator_lists::protocol::{self as operator_lists_calls, Covering};
use crate::objects::revocations::client::revocations;
use crate::objects::revocations::protocol::Revoke;
use crate::store::directory::keys::KeyRow;
use crate::store::directory::licenses::LicenseRow;

/// A label and a note, a key's name and role: a few hundred characters of JSON.
const MAX_CONSOLE_BODY_BYTES: usize = 4 * 1024;

/// The query of a request, as pairs.
fn query(req: &Request) -> Vec<(String, String)> {
    let url = req.inner().url();
    form_urlencoded::parse(crate::http::wire::form::query_of(&url).as_bytes())
        .into_owned()
        .collect()
}

fn field<'a>(query: &'a [(String, String)], name: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

/// A JSON body, or `{}` for none.
async fn json_body<T: for<'de> Deserialize<'de> + Default>(
    req: &mut Request,
    ctx: &Context,
    expected: &str,
) -> Result<T, ApiError> {
    let body = Body::read(req, ctx, MAX_CONSOLE_BODY_BYTES).await?;
    if body.text().trim().is_empty() {
        return Ok(T::default());
    }
    body.json::<T>()
        .map_err(|e| ApiError::BadRequest(format!("expected {expected}: {e}")))
}

/// A label and a note as given, each optional.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Naming {
    label: Option<String>,
    note: Option<String>,
}

/// What a `PATCH` may change: the label, the note, the standing in the network.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LicenseChange {
    label: Option<String>,
    note: Option<String>,
    network: Option<NetworkSetting>,
}

impl LicenseChange {
    const SHAPE: &str = "{\"label\": \"...\", \"note\": \"...\", \"network\": \"counting\" or \"suspended\"}, at least one";
}

impl Naming {
    const SHAPE: &str = "{\"label\": \"...\", \"note\": \"...\"}, both optional";

    fn checked(self) -> Result<(Option<String>, Option<String>), ApiError> {
        let label = self
            .label
            .map(|label| text_field("label", &label, MAX_LABEL_CHARS, false))
            .transpose()
            .map_err(ApiError::BadRequest)?;
        let note = self
            .note
            .map(|note| text_field("note", &note, MAX_NOTE_CHARS, true))
            .transpose()
            .map_err(ApiError::BadRequest)?;
        Ok((label, note))
    }
}

/// `POST /admin/licenses`, with an optional `{"label", "note"}`: the license and
/// its key, shown this once.
pub async fn create_license(
    cx: &RequestContext,
    mut req: Request,
    operator: OperatorCaller,
) -> Result<Reply, ApiError> {
    let env = &cx.env;
    let (label, note) = json_body::<Naming>(&mut req, &cx.ctx, Naming::SHAPE)
        .await?
        .checked()?;
    let created = directory(env)?
        .ask(CreateLicense {
            label: label.unwrap_or_default(),
            note: note.unwrap_or_default(),
            by: operator.stamp(),
        })
        .await?;
    if let Some(license) = LicenseId::parse(&created.row.license) {
        cx.log.names(&license);
    }
    shown(&created.row, ("licenseKey", &created.license_key))
}

/// A new license or key as its creator sees it, this once: its row with its secret.
fn shown(row: &impl Serialize, (field, secret): (&str, &str)) -> Result<Reply, ApiError> {
    let mut shown = to_json(row)?;
    shown[field] = secret.into();
    Reply::json(201, &shown)
}

/// `PATCH /admin/licenses/<id>`: a new label, note or both, and a change of its
/// standing in the network (`"network": "suspended"` or `"counting"`), each an
/// audit row. Answered with the license's row and its standing.
pub async fn relabel(
    cx: &RequestContext,
    mut req: Request,
    operator: OperatorCaller,
) -> Result<Reply, ApiError> {
    let env = &cx.env;
    let license = LicenseId::parse(&cx.id).ok_or(ApiError::NotFound("license"))?;
    let change = json_body::<LicenseChange>(&mut req, &cx.ctx, LicenseChange::SHAPE).await?;
    let network = change.network;
    let (label, note) = Naming {
        label: change.label,
        note: change.note,
    }
    .checked()?;
    if label.is_none() && note.is_none() && network.is_none() {
        return Err(ApiError::BadRequest(format!(
            "expected {}",
            LicenseChange::SHAPE
        )));
    }
    let row = match (label, note) {
        (None, None) => directory(env)?.ask(License(license.clone())).await?,
        (label, note) => {
            directory(env)?
                .ask(Relabel {
                    license: license.clone(),
                    label,
                    note,
                    by: operator.stamp(),
                })
                .await?
        }
    };
    let kept = match network {
        None => holder(env, &license)?.ask(Summary).await?.network,
        // Its audit row goes to the directory with the change, from the holder's object.
        Some(setting) => {
            holder(env, &license)?
                .ask(SetNetwork {
                    license: license.clone(),
                    suspended: setting.suspended(),
                    by: operator.stamp(),
                })
                .await?
        }
    };
    let network = StandingView::of(
        kept,
        &row.created_at,
        cx.settings.objects.consensus,
        cx.now.unix(),
    );
    Reply::json(200, &LicenseChanged { row, network })
}

/// A license as a `PATCH` leaves it: its row, and its standing in the network.
#[derive(Serialize)]
struct LicenseChanged {
    #[serde(flatten)]
    row: LicenseRow,
    network: StandingView,
}

/// `GET /admin/licenses?q=&cursor=&limit=`: licenses newest first, those whose
/// label starts with `q` (case-insensitive) if given.
pub async fn licenses(
    cx: &RequestContext,
    req: Request,
    _: OperatorCaller,
) -> Result<Reply, ApiError> {
    let query = query(&req);
    let limit = page_size(field(&query, "limit")).map_err(ApiError::BadRequest)?;
    let prefix = field(&query, "q")
        .map(|q| text_field("q", q, MAX_LABEL_CHARS, false))
        .transpose()
        .map_err(ApiError::BadRequest)?;
    let page = directory(&cx.env)?
        .ask(Licenses {
            prefix,
            cursor: field(&query, "cursor").map(str::to_owned),
            limit,
        })
        .await?;
    Reply::json(200, &page)
}

/// `DELETE /admin/licenses/<id>`.
pub async fn revoke_license(
    cx: &RequestContext,
    _: Request,
    operator: OperatorCaller,
) -> Result<Reply, ApiError> {
    let env = &cx.env;
    let license = LicenseId::parse(&cx.id).ok_or(ApiError::NotFound("license"))?;
    cx.log.names(&license);
    // The revocations' object marks KV's record first, itself: from then on every
    // path refuses the license within the propagation bound, whatever happens
    // next, and no call into the directory comes before. Then the holder's
    // object, which answers logins at once, is told, and the directory files it,
    // each now or by the revocations' retries.
    revocations(env)?
        .ask(Revoke {
            license,
            by: operator.stamp(),
        })
        .await?;
    Ok(Reply::NoContent)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LimitsView {
    daily_additions: u32,
    daily_removals: u32,
    entries: u32,
}

/// `GET /admin/licenses/<id>`: its label, note and times from the directory, and
/// what its holder's object says in one call: live entries, today's usage against
/// the limits, its feed tokens and agents, its last change.
pub async fn license(
    cx: &RequestContext,
    _: Request,
    _: OperatorCaller,
) -> Result<Reply, ApiError> {
    let env = &cx.env;
    let license = LicenseId::parse(&cx.id).ok_or(ApiError::NotFound("license"))?;
    cx.log.names(&license);
    let row = directory(env)?.ask(License(license.clone())).await?;
    let holder = holder(env, &license)?.ask(Summary).await?;
    let standing = StandingView::of(
        holder.network,
        &row.created_at,
        cx.settings.objects.consensus,
        cx.now.unix(),
    );
    let limits = cx.settings.objects.limits;
    // One object of the three parts: the directory's row, the holder's, the limits.
    let mut picture = to_json(&row)?;
    if let (Some(fields), serde_json::Value::Object(holder)) =
        (picture.as_object_mut(), to_json(&holder)?)
    {
        fields.extend(holder);
        let limits = LimitsView {
            daily_additions: limits.additions,
            daily_removals: limits.removals,
            entries: limits.entries,
        };
        fields.insert("limits".to_owned(), to_json(&limits)?);
        fields.insert("network".to_owned(), to_json(&standing)?);
    }
    Reply::json(200, &picture)
}

/// A key's name and role, as given.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyRequest {
    name: Option<String>,
    role: Option<Role>,
}

/// `POST /admin/keys` with `{"name", "role"}`: the key, shown this once.
pub async fn create_key(
    cx: &RequestContext,
    mut req: Request,
    operator: OperatorCaller,
) -> Result<Reply, ApiError> {
    const SHAPE: &str = "{\"name\": \"...\", \"role\": \"read\" or \"admin\"}";
    let asked = json_body::<KeyRequest>(&mut req, &cx.ctx, SHAPE).await?;
    let (Some(name), Some(role)) = (asked.name, asked.role) else {
        return Err(ApiError::BadRequest(format!("expected {SHAPE}")));
    };
    let name = text_field("name", &name, MAX_LABEL_CHARS, false).map_err(ApiError::BadRequest)?;
    if name.is_empty() {
        return Err(ApiError::BadRequest("a key needs a name".to_owned()));
    }
    let created = directory(&cx.env)?
        .ask(CreateKey {
            name,
            role,
            by: operator.stamp(),
        })
        .await?;
    shown(&created.row, ("key", &created.key))
}

#[derive(Serialize)]
struct KeyList {
    keys: Vec<KeyRow>,
}

/// `GET /admin/keys`: every key standing, then the revoked, never a key itself.
pub async fn keys(cx: &RequestContext, _: Request, _: OperatorCaller) -> Result<Reply, ApiError> {
    let keys = directory(&cx.env)?.ask(Keys).await?;
    Reply::json(200, &KeyList { keys })
}

/// `DELETE /admin/keys/<id>`: refused from the next call on.
pub async fn revoke_key(
    cx: &RequestContext,
    _: Request,
    operator: OperatorCaller,
) -> Result<Reply, ApiError> {
    if !is_key_id(&cx.id) {
        return Err(ApiError::NotFound("operator key"));
    }
    directory(&cx.env)?
        .ask(RevokeKey {
            id: cx.id.clone(),
            by: operator.stamp(),
        })
        .await?;
    Ok(Reply::NoContent)
}

/// `GET /admin/audit?kind=&key=&license=&from=&to=&cursor=&limit=`: the log,
/// newest first, the rows every filter given lets through (a kind, a key, a
/// license, a time), with every refusal this isolate counted until now.
pub async fn audit(
    cx: &RequestContext,
    req: Request,
    _: OperatorCaller,
) -> Result<Reply, ApiError> {
    let query = query(&req);
    let limit = page_size(field(&query, "limit")).map_err(ApiError::BadRequest)?;
    let filter = AuditFilter::parse(
        field(&query, "kind"),
        field(&query, "key"),
        field(&query, "license"),
        (field(&query, "from"), field(&query, "to")),
    )
    .map_err(ApiError::BadRequest)?;
    // The refusals this isolate counted go in first, so that the log holds them.
    operator_key::tell_counted(cx).await;
    let asked = Audit {
        filter,
        cursor: field(&query, "cursor").map(str::to_owned),
        limit,
    };
    let page = directory(&cx.env)?.ask(asked).await?;
    Reply::json(200, &page)
}

/// What the lookup answers of one address.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LookupView<'a> {
    ip: IpAddr,
    /// Allow-list entries that cover it: while any does, no feed serves it.
    allow: Vec<Covering>,
    global: Vec<Covering>,
    #[serde(skip_serializing_if = "Option::is_none")]
    license: Option<HolderEntryView<'a>>,
    /// Holders' reports of it, when there are any: how many licenses and
    /// networks count towards the network's consensus against what it needs,
    /// whether it holds, and who reported it from where.
    #[serde(skip_serializing_if = "Option::is_none")]
    reports: Option<network::ReportsView>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HolderEntryView<'a> {
    license: &'a str,
    /// The holder's live entry that lists it, with since when.
    entry: Option<EntryView<'a>>,
    /// The holder's allow-list entry that holds it: this holder is never
    /// challenged for it, whatever the global list holds.
    allowed_by: Option<AllowView<'a>>,
}

/// `GET /admin/lookup?ip=<address>[&license=<id>]`: "why is this address listed?"
/// The allow-list and global-list entries that cover it with the change that
/// added each (when, how, by which key), and whether that holder lists it.
pub async fn lookup(
    cx: &RequestContext,
    req: Request,
    _: OperatorCaller,
) -> Result<Reply, ApiError> {
    let env = &cx.env;
    let query = query(&req);
    let ip: IpAddr = field(&query, "ip")
        .ok_or_else(|| ApiError::BadRequest("ip is required: an IPv4 or IPv6 address".into()))?
        .trim()
        .parse()
        .map_err(|_| ApiError::BadRequest("ip must be an IPv4 or IPv6 address".into()))?;
    let ip = ip.to_canonical();
    let license = field(&query, "license")
        .map(|id| LicenseId::parse(id).ok_or(ApiError::NotFound("license")))
        .transpose()?;
    let lists = operator_lists(env)?
        .ask(operator_lists_calls::WhyListed(ip))
        .await?;
    let reports = match PublicIp::from_ip(ip) {
        // With IPV6_PREFIX 64, an IPv6 address is reported, and counted, as its /64.
        Some(public) => {
            network::reports_of(cx, Listed::keys(public, cx.settings.ipv6_prefix).0).await?
        }
        None => None,
    };
    let mut held = AddressListing {
        entry: None,
        allowed_by: None,
    };
    if let Some(license) = &license {
        cx.log.names(license);
        // A license that was never issued has no object to ask, nor to create by asking.
        directory(env)?.ask(License(license.clone())).await?;
        if let Some(public) = PublicIp::from_ip(ip) {
            held = holder(env, license)?
                .ask(holder_calls::WhyListed(public))
                .await?;
        }
    }
    Reply::json(
        200,
        &LookupView {
            ip,
            allow: lists.allow,
            global: lists.global,
            license: license.as_ref().map(|license| HolderEntryView {
                license: license.as_str(),
                entry: held.entry.as_ref().map(EntryView::of),
                allowed_by: held.allowed_by.as_ref().map(AllowView::of),
            }),
            reports,
        },
    )
}
