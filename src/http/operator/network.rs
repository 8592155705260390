//! The operator's side of the network under `/admin/`: for any address, which
//! licenses and networks count towards its consensus and why it is or is not
//! promoted (the lookup's `reports`); the canaries; the promotions waiting for
//! review; a license's standing. Every handler here runs only after
//! `auth::caller::operator` has passed for its route.

use crate::domain::access::license::LicenseId;
use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use worker::{Request, Response};

use crate::domain::net::address::Listed;
use crate::domain::network::consensus::{shard_of, Consensus, Review};
use crate::domain::network::report::Category;
use crate::domain::network::standing::{Kept, Standing};
use crate::domain::time::UnixTime;
use crate::http::auth::caller::OperatorCaller;
use crate::http::context::RequestContext;
use crate::http::error::ApiError;
use crate::http::wire::body::Body;
use crate::http::wire::reply::Reply;
use crate::http::wire::{etag, form};
use crate::objects::directory::client::directory;
use crate::objects::directory::protocol::{Canaries, EditCanaries, Labels, MAX_LABELS};
use crate::objects::operator_lists::client::operator_lists;
use crate::objects::operator_lists::protocol::{PendingPromotions, Review as ReviewCall};
use crate::objects::protocol::Failure;
use crate::objects::report_shard::client::{report_shard, report_shard_for};
use crate::objects::report_shard::protocol::{Dismiss, Tallies, TallyOf, MOST_REPORTERS};
use crate::store::report_shard::lookup::AddressTally;

/// An edit of the canaries, or a review: at most 10 000 entries, with room for
/// long ranges.
const MAX_EDIT_BYTES: usize = 1024 * 1024;
/// Addresses one review names at most.
const MAX_REVIEWED: usize = 10_000;
/// Promotions a page of the review queue shows at most, and reporters of each:
/// a page is one call per shard its addresses are in, and one for their labels.
const MOST_PENDING: u32 = 50;
const REPORTERS_PENDING: u64 = 20;

/// What the consensus needs.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Needed {
    licenses: u32,
    networks: u32,
}

/// An address's reports as the operator sees them: how many licenses and
/// networks count now against what the consensus needs, since when it holds if
/// it does, and each reporter with its label, network and standing.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportsView {
    licenses: u64,
    networks: u64,
    needed: Needed,
    /// What the reports within the window lack for a new consensus; both 0
    /// while one holds (a promotion that stands is kept by the reports of the
    /// longer of the window and the delay).
    missing: Needed,
    consensus_since: Option<String>,
    reporters: Vec<ReporterView>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReporterView {
    license: String,
    label: Option<String>,
    /// The network of its latest report; none for reports kept before networks were.
    network: Option<String>,
    standing: Standing,
    /// It named a canary: it never counts.
    planted: bool,
    categories: Vec<Category>,
    reports: u64,
    first_at: String,
    last_at: String,
}

impl ReportsView {
    fn of(tally: AddressTally, labels: &HashMap<String, String>) -> Self {
        let (licenses, networks) = tally.needed;
        let short = |needed: u32, counted: u64| {
            needed.saturating_sub(counted.min(u64::from(u32::MAX)) as u32)
        };
        Self {
            licenses: tally.licenses,
            networks: tally.networks,
            needed: Needed { licenses, networks },
            missing: match tally.reached_at {
                Some(_) => Needed {
                    licenses: 0,
                    networks: 0,
                },
                None => Needed {
                    licenses: short(licenses, tally.licenses),
                    networks: short(networks.max(1), tally.networks),
                },
            },
            consensus_since: tally.reached_at.map(UnixTime::to_rfc3339),
            reporters: tally
                .reporters
                .into_iter()
                .map(|r| ReporterView {
                    label: labels.get(&r.license).cloned(),
                    license: r.license,
                    network: r.network.map(|network| network.to_string()),
                    standing: r.standing,
                    planted: r.planted,
                    categories: r.categories.iter().collect(),
                    reports: r.count,
                    first_at: r.first_at.to_rfc3339(),
                    last_at: r.last_at.to_rfc3339(),
                })
                .collect(),
        }
    }
}

/// The labels of the licenses these tallies name, in one call to the directory.
async fn labels_of(
    cx: &RequestContext,
    tallies: &[AddressTally],
) -> Result<HashMap<String, String>, ApiError> {
    let mut ids: Vec<LicenseId> = tallies
        .iter()
        .flat_map(|tally| tally.reporters.iter())
        .filter_map(|reporter| LicenseId::parse(&reporter.license))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids.truncate(MAX_LABELS);
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    Ok(directory(&cx.env)?
        .ask(Labels(ids))
        .await?
        .into_iter()
        .filter(|(_, label)| !label.is_empty())
        .map(|(license, label)| (license.into(), label))
        .collect())
}

/// The lookup's `reports` for `subject`: none while no report of it is kept.
pub async fn reports_of(
    cx: &RequestContext,
    subject: Listed,
) -> Result<Option<ReportsView>, ApiError> {
    let tally = report_shard_for(&cx.env, subject)?
        .ask(TallyOf(subject, MOST_REPORTERS))
        .await
        .map_err(Failure::into_fault)?;
    if tally.reporters.is_empty() {
        return Ok(None);
    }
    let labels = labels_of(cx, std::slice::from_ref(&tally)).await?;
    Ok(Some(ReportsView::of(tally, &labels)))
}

/// A license's standing in the network as its picture shows it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StandingView {
    standing: Standing,
    since: Option<String>,
    /// When a license on probation starts to count.
    #[serde(skip_serializing_if = "Option::is_none")]
    until: Option<String>,
    canary: Option<String>,
}

impl StandingView {
    /// `kept` for a license issued at `created_at` (RFC 3339, as the directory
    /// answers it).
    pub fn of(kept: Kept, created_at: &str, consensus: Consensus, now: UnixTime) -> Self {
        let licensed_at = UnixTime::parse_rfc3339(created_at).unwrap_or_default();
        let shown = kept.shown((licensed_at, consensus.counts_from(licensed_at)), now);
        Self {
            standing: shown.standing,
            since: shown.since.map(UnixTime::to_rfc3339),
            until: shown.until.map(UnixTime::to_rfc3339),
            canary: shown.canary.map(|ip| ip.to_string()),
        }
    }
}

/// What `PATCH /admin/licenses/<id>` may set of a license's standing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkSetting {
    Counting,
    Suspended,
}

impl NetworkSetting {
    pub fn suspended(self) -> bool {
        self == Self::Suspended
    }
}

/// `GET /admin/canaries`: the canaries in the import format, `# canaries,
/// version <v>, <n> entries` first, with their version as `ETag`.
pub async fn canaries(
    cx: &RequestContext,
    req: Request,
    _: OperatorCaller,
) -> Result<Reply, ApiError> {
    let published = directory(&cx.env)?.ask(Canaries).await?;
    let tag = format!("\"{}\"", published.version);
    let headers = worker::Headers::new();
    headers.set("ETag", &tag)?;
    let if_none_match = req.headers().get("If-None-Match")?.unwrap_or_default();
    if etag::held(&if_none_match, &tag) {
        return Ok(Reply::Built(
            Response::empty()?.with_status(304).with_headers(headers),
        ));
    }
    let text = published.text();
    headers.set("Content-Type", "text/plain; charset=utf-8")?;
    Ok(Reply::Built(Response::ok(text)?.with_headers(headers)))
}

/// An edit of the canaries as given.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CanaryEdit {
    #[serde(default)]
    add: Vec<String>,
    #[serde(default)]
    remove: Vec<String>,
}

/// `POST /admin/canaries` with `{"add": [...], "remove": [...]}`: removals, then
/// additions, every entry or none, the list at most 10 000 entries.
pub async fn edit_canaries(
    cx: &RequestContext,
    mut req: Request,
    operator: OperatorCaller,
) -> Result<Reply, ApiError> {
    const SHAPE: &str = r#"{"add": [...], "remove": [...]}"#;
    let body = Body::read(&mut req, &cx.ctx, MAX_EDIT_BYTES).await?;
    let edit = body
        .json::<CanaryEdit>()
        .map_err(|e| ApiError::BadRequest(format!("expected {SHAPE}: {e}")))?;
    let edited = directory(&cx.env)?
        .ask(EditCanaries {
            add: edit.add,
            remove: edit.remove,
            ipv6: cx.settings.ipv6,
            by: operator.stamp(),
        })
        .await?;
    Reply::json(200, &edited)
}

/// One promotion waiting for review, with what its reports say.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PendingView {
    ip: String,
    queued_at: String,
    reports: ReportsView,
}

#[derive(Serialize)]
struct PendingList {
    review: Review,
    promotions: Vec<PendingView>,
    cursor: Option<String>,
}

/// `GET /admin/promotions?state=pending&cursor=&limit=`: the promotions waiting
/// for review, in address order, each with its reporters (licenses, labels,
/// networks, categories, counts, first and last report).
pub async fn promotions(
    cx: &RequestContext,
    req: Request,
    _: OperatorCaller,
) -> Result<Reply, ApiError> {
    let url = req.inner().url();
    let query: Vec<(String, String)> = form_urlencoded::parse(form::query_of(&url).as_bytes())
        .into_owned()
        .collect();
    let field = |name: &str| {
        query
            .iter()
            .find(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| v.as_str())
    };
    if let Some(state) = field("state").filter(|&state| state != "pending") {
        return Err(ApiError::BadRequest(format!(
            "state is pending, the only state a promotion waits in, not {state:?}"
        )));
    }
    let limit = match field("limit") {
        None => MOST_PENDING,
        Some(text) => text
            .trim()
            .parse()
            .ok()
            .filter(|limit| (1..=MOST_PENDING).contains(limit))
            .ok_or_else(|| ApiError::BadRequest(format!("limit must be 1 to {MOST_PENDING}")))?,
    };
    let after = field("cursor")
        .map(|text| {
            text.parse::<Listed>()
                .map_err(|_| ApiError::from(crate::store::StoreError::UnknownCursor))
        })
        .transpose()?;
    let page = operator_lists(&cx.env)?
        .ask(PendingPromotions { after, limit })
        .await?;
    let mut tallies: HashMap<Listed, AddressTally> = HashMap::new();
    for (index, ips) in by_shard(page.pending.iter().map(|queued| queued.ip)) {
        let answered = report_shard(&cx.env, index)?
            .ask(Tallies(ips.clone(), REPORTERS_PENDING))
            .await
            .map_err(Failure::into_fault)?;
        tallies.extend(ips.into_iter().zip(answered));
    }
    let all: Vec<AddressTally> = tallies.values().cloned().collect();
    let labels = labels_of(cx, &all).await?;
    let promotions = page
        .pending
        .iter()
        .filter_map(|queued| {
            let tally = tallies.remove(&queued.ip)?;
            Some(PendingView {
                ip: queued.ip.to_string(),
                queued_at: queued.queued_at.to_rfc3339(),
                reports: ReportsView::of(tally, &labels),
            })
        })
        .collect();
    Reply::json(
        200,
        &PendingList {
            review: cx.settings.objects.consensus.review,
            promotions,
            cursor: page.cursor.map(|ip| ip.to_string()),
        },
    )
}

/// A review as given.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReviewRequest {
    #[serde(default)]
    approve: Vec<String>,
    #[serde(default)]
    reject: Vec<String>,
}

/// `POST /admin/promotions` with `{"approve": [...], "reject": [...]}`: the
/// approved join the global list as any promotion does, the rejected leave the
/// queue and their shards forget the reports made until now, as for
/// `removePromoted`. An address that is not waiting refuses the whole review.
pub async fn review(
    cx: &RequestContext,
    mut req: Request,
    operator: OperatorCaller,
) -> Result<Reply, ApiError> {
    const SHAPE: &str = r#"{"approve": [...], "reject": [...]}"#;
    let body = Body::read(&mut req, &cx.ctx, MAX_EDIT_BYTES).await?;
    let asked = body
        .json::<ReviewRequest>()
        .map_err(|e| ApiError::BadRequest(format!("expected {SHAPE}: {e}")))?;
    match asked.approve.len() + asked.reject.len() {
        0 => {
            return Err(ApiError::BadRequest(format!(
                "expected {SHAPE}, naming at least one address"
            )))
        }
        1..=MAX_REVIEWED => {}
        _ => {
            return Err(ApiError::BadRequest(format!(
                "at most {MAX_REVIEWED} addresses per review"
            )))
        }
    }
    let rejected: Vec<Listed> = asked
        .reject
        .iter()
        .filter_map(|text| text.trim().parse().ok())
        .collect();
    let reviewed = operator_lists(&cx.env)?
        .ask(ReviewCall {
            approve: asked.approve,
            reject: asked.reject,
            stamp: operator.stamp(),
        })
        .await?;
    dismiss(cx, rejected).await?;
    Reply::json(200, &reviewed)
}

/// Addresses by the report shard that counts each.
fn by_shard(ips: impl IntoIterator<Item = Listed>) -> BTreeMap<u32, Vec<Listed>> {
    let mut by_shard: BTreeMap<u32, Vec<Listed>> = BTreeMap::new();
    for ip in ips {
        by_shard.entry(shard_of(&ip.key())).or_default().push(ip);
    }
    by_shard
}

/// Tells the shards of these addresses that the operator took their
/// promotions off, or would not have them: only reports made from now on
/// promote them again.
pub async fn dismiss(cx: &RequestContext, ips: Vec<Listed>) -> Result<(), ApiError> {
    for (index, ips) in by_shard(ips) {
        report_shard(&cx.env, index)?
            .ask(Dismiss(ips))
            .await
            .map_err(Failure::into_fault)?;
    }
    Ok(())
}
