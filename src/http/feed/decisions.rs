//! CrowdSec's Local API, the part its bouncers read: the decision stream and
//! live mode. Any bouncer becomes a greylist agent with a URL and a feed token:
//! the token's scope says what it reads, its position in the holder's object
//! what it already has.

use std::cell::Cell;
use std::net::IpAddr;

use worker::{Request, Response};

use crate::domain::feed::cap::{max_items, Bound, CursorCut, Cut, Shift};
use crate::domain::feed::decision::{scenario_words, Decision, Filter, OperatorFrom, Pull};
use crate::domain::feed::feed_token::PullClient;
use crate::domain::feed::item::{FeedHead, FeedItem};
use crate::domain::net::address::{Ipv6, Listed, PublicIp};
use crate::http::auth::caller::BouncerCaller;
use crate::http::context::RequestContext;
use crate::http::error::ApiError;
use crate::http::feed::body::{self as feed_body, Content, DeltaCut, Render};
use crate::http::feed::handlers::{
    global_changes, held_apart, operator_changes, operator_lists, user_agent, GlobalChanges,
    OperatorChanges, VersionedLists,
};
use crate::http::feed::items::{read_again, read_whole, Items, ReadWhole};
use crate::http::feed::query::{FeedQuery, Format};
use crate::http::wire::form;
use crate::http::wire::reply::Reply;
use crate::objects::holder::client::holder;
use crate::objects::holder::protocol::{Feed, FeedTokens, HolderProtocol, LiveLookup};
use crate::objects::protocol::Object;
use crate::store::operator_lists::snapshots;

/// How many times a cut token's pull counts its cut while the list changes
/// under the count.
const COUNTS: usize = 3;

/// A pull's answer that changes nothing.
const NOTHING: &str = "{\"deleted\":[],\"new\":[]}";

/// A pull's answer when another pull of its token moved the token's position
/// while it was answered: a position is one bouncer's, and bouncers that share a
/// token each miss what the other was sent (docs/api.md).
const SHARED_TOKEN: &str = "another pull of this feed token moved its position while this one was answered: give each bouncer a feed token of its own";

/// What a pull asks for, from its query string: the Local API's parameters;
/// any other is ignored, as it ignores them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamQuery {
    /// Only the exact `startup=true` asks for everything.
    pub startup: bool,
    pub filter: Filter,
    /// The most decisions the bouncer holds (`maxItems`, as the feed's): a
    /// token's own setting wins over it.
    pub max_items: Option<u64>,
}

/// A comma-joined list, its words trimmed, the empty ones dropped.
fn words(value: &str, lower: bool) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|word| !word.is_empty())
        .map(|word| {
            if lower {
                word.to_ascii_lowercase()
            } else {
                word.to_owned()
            }
        })
        .collect()
}

impl StreamQuery {
    /// The pull's parameters, or why its scenario filters ask too much (a 400).
    pub fn parse(query: &str) -> Result<Self, String> {
        let mut parsed = Self::default();
        for (key, value) in form_urlencoded::parse(query.as_bytes()) {
            let filter = &mut parsed.filter;
            match key.as_ref() {
                "startup" => parsed.startup = value == "true",
                "maxItems" => parsed.max_items = Some(max_items(&value)?),
                "scopes" => filter.scopes = Some(words(&value, true)),
                "origins" => filter.origins = Some(words(&value, false)),
                name @ "scenarios_containing" => {
                    filter.containing = scenario_words(name, words(&value, true))?;
                }
                name @ "scenarios_not_containing" => {
                    filter.not_containing = scenario_words(name, words(&value, true))?;
                }
                _ => {}
            }
        }
        Ok(parsed)
    }
}

/// `GET /v1/decisions/stream`: with `startup=true`, every decision the token's
/// bouncer should enforce; otherwise what changed since the token's previous
/// pull. One call to the holder's object; two on the first pull after the
/// operator's lists changed, when their changes since the token's position are
/// worked out between them. A token that cuts its stream reads the holder's
/// list first to count the cut, and counts again, up to three times, when the
/// list changes under it.
pub async fn stream(
    cx: &RequestContext,
    req: Request,
    bouncer: BouncerCaller,
) -> Result<Reply, ApiError> {
    let (env, now, settings) = (&cx.env, cx.now, &cx.settings);
    let BouncerCaller {
        license,
        token,
        scope: may_read,
        max_items,
    } = bouncer;
    let query =
        StreamQuery::parse(form::query_of(&req.inner().url())).map_err(ApiError::BadRequest)?;
    let max_items = max_items.or(query.max_items);
    let operator_lists = operator_lists(cx, may_read).await?;
    let (global_version, allow_version) =
        (operator_lists.global.version, operator_lists.allow.version);
    let client = PullClient::new(user_agent(&req)?.as_deref(), "decisions");
    let object = holder(env, &license)?;
    let page = settings.objects.page_entries;
    // A token that cuts its stream: how far the cut reaches now, counted
    // before the pull, so that the token's position keeps it; counted again
    // while the list changes under the count (past that, nothing this time,
    // the position where it was: the next pull brings it), or between the
    // count and the pull, which the object tells (`Recount`) without reading
    // anything: a pull at another history number than the count's would send
    // what the count never weighed. The last count's pull is answered
    // whatever changed, so that a busy list still reaches its bouncer.
    let mut counts = 0;
    let (start, records, changes, counted) = loop {
        counts += 1;
        let counted = match max_items {
            Some(keep) => match count(&object, &operator_lists, keep, page).await? {
                Some(counted) => Some(counted),
                None if counts < COUNTS => continue,
                None => return json_body(NOTHING),
            },
            None => None,
        };
        let (cut, left_out) = match &counted {
            Some(counted) => (CursorCut::Bound(counted.to), Some(counted.left_out)),
            None => (CursorCut::Whole, None),
        };
        let ask = |pull, (probe, moves)| Feed {
            token: Some(token.clone()),
            client: Some(client.clone()),
            pull: Some(pull),
            probe,
            moves,
            cut,
            left_out,
            ..Feed::default()
        };
        let mut pull = Pull {
            startup: query.startup,
            global: global_version,
            allow: allow_version,
            from: None,
            counted_at: counted
                .as_ref()
                .filter(|_| counts < COUNTS)
                .map(|counted| counted.at),
        };
        let (mut start, mut records) = object.ask_stream(ask(pull, Default::default())).await?;
        let mut changes = None;
        if let FeedHead::Moved { position, .. } = start.head {
            let since = FeedQuery {
                scope: may_read,
                format: Format::Json,
                list: Default::default(),
                since: Some(position),
                since_cut: CursorCut::Whole,
                aggregate: false,
                max_items: None,
            };
            let lists = operator_lists.lists();
            changes = operator_changes(env, &since, lists, settings.objects.freshness, now).await?;
            pull.from = Some(OperatorFrom {
                position,
                known: changes.is_some(),
            });
            let asked = changes
                .as_ref()
                .map(OperatorChanges::asked)
                .unwrap_or_default();
            (start, records) = object.ask_stream(ask(pull, asked)).await?;
        }
        if !matches!(start.head, FeedHead::Recount { .. }) {
            break (start, records, changes, counted);
        }
    };
    let lists = operator_lists.lists();
    // Past what a delta works out in memory, the pull deletes no global block the
    // holder's allow list took (docs/api.md says so); everything else stands.
    let blocks = global_changes(lists, changes, &start.own_allow).unwrap_or_default();
    // How the cut moved since the bouncer's position: from everything for a
    // position that holds the whole feed.
    let mut cut_move = counted.map(|counted| {
        let from = match start.held_cut {
            CursorCut::Bound(from) => from,
            CursorCut::Whole | CursorCut::Unknown => Bound::Everything,
        };
        CutMove {
            shift: Shift {
                from,
                to: counted.to,
            },
            left_out: counted.left_out,
            whole: counted.whole,
            again: counted.again,
        }
    });
    // A bouncer that held a cut (its pulls asked for one) and pulls without
    // one now: its cut reaches everything, and lets in what it left out.
    if let (None, CursorCut::Bound(from), false) = (&cut_move, start.held_cut, query.startup) {
        cut_move = Some(CutMove {
            shift: Shift {
                from,
                to: Bound::Everything,
            },
            left_out: 0,
            whole: whole_items(&object, &operator_lists, page).await?,
            again: read_again(object.clone()),
        });
    }
    let (content, blocks) = match (start.head, cut_move) {
        (FeedHead::Unchanged { .. }, _) => return json_body(NOTHING),
        (FeedHead::Recount { .. }, _) => {
            return Err(ApiError::Internal(
                "a pull that counted no cut was told to count again".to_owned(),
            ))
        }
        // Another pull of the same token moved its position between the two
        // asks: the bouncers sharing it each miss what the other was sent.
        (FeedHead::Moved { .. }, _) => return Err(ApiError::Conflict(SHARED_TOKEN.to_owned())),
        // A cut token's bouncer that pulled before and is answered whole (its
        // position older than the history) may hold what the cut has pushed
        // out since: everything is deleted, then the cut announced.
        (FeedHead::Whole { .. }, Some(cut_move)) if !query.startup => (
            Content::Renewal(read_again(object), Some(cut_move.shift)),
            GlobalChanges::default(),
        ),
        (FeedHead::Whole { .. }, cut_move) => (
            Content::Whole {
                reset: false,
                merged: false,
                cut: cut_move.map(|cut_move| Cut::upto(cut_move.shift.to, cut_move.left_out)),
            },
            GlobalChanges::default(),
        ),
        (FeedHead::Delta { .. }, None) => {
            (Content::Delta { cut: None }, held_apart(&start, blocks))
        }
        (FeedHead::Delta { .. }, Some(mut cut_move)) => {
            // What the cut pushed out or let in is read once more.
            if cut_move.shift.from != cut_move.shift.to {
                cut_move.whole.restart((cut_move.again)().await?);
            }
            let (shift, whole) = (cut_move.shift, cut_move.whole);
            let cut = Some(Box::new(DeltaCut { shift, whole }));
            (Content::Delta { cut }, held_apart(&start, blocks))
        }
        (FeedHead::Renewal { .. }, cut_move) => (
            Content::Renewal(read_again(object), cut_move.map(|cut_move| cut_move.shift)),
            held_apart(&start, blocks),
        ),
    };
    let (published, promoted) = operator_lists.published();
    let render = Render::Decisions {
        kind: start.decision,
        now: now.unix(),
        filter: query.filter,
    };
    let published = published.and_own_allow(start.own_allow.intervals());
    let items = Items::new(records, published, None, promoted, page);
    let body = feed_body::body(
        items,
        blocks.blocks(),
        render,
        content,
        String::new(),
        settings.objects.page_entries,
    );
    let response = Response::from_stream(body)?;
    response.headers().set("Content-Type", "application/json")?;
    Ok(Reply::Built(response))
}

/// How a cut token's cut moves at this pull: from where the bouncer's
/// position held it to where it reaches now, what it leaves out, and the whole
/// feed's items to move it over.
struct CutMove {
    shift: Shift,
    left_out: u64,
    whole: Items,
    again: ReadWhole,
}

/// A cut token's cut, counted before its pull.
struct Counted {
    /// How far the cut reaches.
    to: Bound,
    left_out: u64,
    /// The history number of the list the cut was last read at: the pull's
    /// must be the same.
    at: u64,
    /// The whole feed's items, to move the cut over, and their reading again.
    whole: Items,
    again: ReadWhole,
}

/// How far the whole feed cut to `keep` reaches now, or `None` when the list
/// changed under the count.
async fn count(
    object: &Object<HolderProtocol>,
    lists: &VersionedLists,
    keep: u64,
    page: usize,
) -> Result<Option<Counted>, ApiError> {
    let mut whole = whole_items(object, lists, page).await?;
    let again = read_again(object.clone());
    let at = Cell::new(0);
    let last = |_| {
        let read = read_whole(object, Feed::default());
        async {
            let (start, records) = read.await?;
            at.set(start.head.changes());
            Ok(records)
        }
    };
    Ok(match whole.bound(keep, &again, last).await? {
        (Some(to), left_out) => Some(Counted {
            to,
            left_out,
            at: at.get(),
            whole,
            again,
        }),
        (None, _) => None,
    })
}

/// The whole feed's items, the holder's allow list weighed, as a cut is
/// counted or moved over them.
async fn whole_items(
    object: &Object<HolderProtocol>,
    lists: &VersionedLists,
    page: usize,
) -> Result<Items, ApiError> {
    let (start, records) = read_whole(object, Feed::default()).await?;
    let published = snapshots::published(lists.global.clone(), lists.allow.clone());
    let own = published.and_own_allow(start.own_allow.intervals());
    Ok(Items::new(records, own, None, lists.promoted.clone(), page))
}

/// `HEAD /v1/decisions/stream`: 200 when the key opens the stream, as the
/// holder's object says at once (the isolate's cache of the token and its
/// license may still show one revoked); nothing of the list is read, and the
/// token's position stays where it is.
pub async fn stream_head(
    cx: &RequestContext,
    _: Request,
    bouncer: BouncerCaller,
) -> Result<Reply, ApiError> {
    // A revoked license's object refuses the call; a revoked token is not among them.
    let tokens = holder(&cx.env, &bouncer.license)?.ask(FeedTokens).await?;
    if !tokens.iter().any(|token| token.id == bouncer.token) {
        return Err(ApiError::Unauthorized("feed_token_revoked"));
    }
    let response = Response::empty()?;
    response.headers().set("Content-Type", "application/json")?;
    Ok(Reply::Built(response))
}

fn json_body(body: &str) -> Result<Reply, ApiError> {
    Ok(Reply::Json(200, body.to_owned()))
}

/// `GET /v1/decisions?ip=<addr>` (live mode): the decisions that cover the
/// address, or the exact body `null` when none does (the Lua bouncer compares
/// the body with that text).
pub async fn live(
    cx: &RequestContext,
    req: Request,
    bouncer: BouncerCaller,
) -> Result<Reply, ApiError> {
    let (env, now, settings) = (&cx.env, cx.now, &cx.settings);
    let BouncerCaller {
        license,
        token,
        scope: may_read,
        ..
    } = bouncer;
    let url = req.inner().url();
    let asked = form_urlencoded::parse(form::query_of(&url).as_bytes())
        .find(|(key, _)| key == "ip")
        .map(|(_, value)| value.trim().to_owned())
        .ok_or_else(|| ApiError::BadRequest("ip is required".to_owned()))?;
    let addr: IpAddr = asked
        .parse()
        .map_err(|_| ApiError::BadRequest(format!("ip {asked:?} is not an IP address")))?;
    // A private address: nothing covers it. With IPv6 off, an IPv6 address is
    // answered as before, null, without asking the holder's object.
    let Some(ip) =
        PublicIp::from_ip(addr).filter(|ip| settings.ipv6 == Ipv6::On || ip.v4().is_some())
    else {
        return json_body("null");
    };
    let (published, promoted) = operator_lists(cx, may_read).await?.published();
    if !published.challenges_entry(Listed::Ip(ip)) {
        return json_body("null");
    }
    let client = PullClient::new(user_agent(&req)?.as_deref(), "live");
    let (kind, entry, own_allow) = holder(env, &license)?
        .ask(LiveLookup {
            token,
            client,
            ip,
            prefix: settings.ipv6_prefix,
        })
        .await?;
    // The holder's own allow list, which only its object knows, is weighed too.
    let published = published.and_own_allow(own_allow.intervals());
    if !published.challenges_entry(Listed::Ip(ip)) {
        return json_body("null");
    }
    // The holder's /64 is left out when the allow list holds any address of it.
    let mut items: Vec<FeedItem> = entry
        .filter(|entry| published.challenges_entry(entry.ip))
        .map(FeedItem::personal)
        .into_iter()
        .collect();
    if let Some(block) = published.block_holding(ip) {
        // A global block that is the holder's entry itself is sent once.
        if items.iter().all(|item| item.block.place() != block.place()) {
            let mut item = crate::domain::feed::item::global_item(block);
            if let Some(promoted) = &promoted {
                promoted.label(&mut item).await?;
            }
            items.push(item);
        }
    }
    if items.is_empty() {
        return json_body("null");
    }
    let decisions: Vec<Decision> = items
        .iter()
        .map(|item| Decision::of(item, kind, now.unix(), false))
        .collect();
    let body =
        serde_json::to_string(&decisions).map_err(|e| ApiError::Internal(format!("JSON: {e}")))?;
    json_body(&body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pull_reads_the_local_apis_parameters_and_ignores_the_rest() {
        assert_eq!(StreamQuery::parse(""), Ok(StreamQuery::default()));
        assert!(StreamQuery::parse("startup=true").unwrap().startup);
        assert_eq!(StreamQuery::parse("maxItems=5").unwrap().max_items, Some(5));
        assert_eq!(
            StreamQuery::parse("maxItems=0"),
            Err(r#"maxItems is a whole number from 1 to 10000000, not "0""#.to_owned())
        );
        for not in ["startup=false", "startup=TRUE", "startup=1", "startup="] {
            assert!(!StreamQuery::parse(not).unwrap().startup, "{not}");
        }
        let query = StreamQuery::parse(
            "scopes=Ip,%20range&origins=greylist,CAPI&scenarios_containing=SSH,,http&scenarios_not_containing=bf&community_pull=false",
        )
        .unwrap();
        assert_eq!(
            query.filter,
            Filter {
                scopes: Some(vec!["ip".into(), "range".into()]),
                origins: Some(vec!["greylist".into(), "CAPI".into()]),
                containing: vec!["ssh".into(), "http".into()],
                not_containing: vec!["bf".into()],
            }
        );
    }

    #[test]
    fn a_scenario_filter_takes_at_most_32_words_of_at_most_64_bytes() {
        let asked = |parameter: &str, words: &[String]| {
            StreamQuery::parse(&format!("{parameter}={}", words.join(",")))
        };
        for parameter in ["scenarios_containing", "scenarios_not_containing"] {
            let words: Vec<String> = (0..32).map(|n| format!("w{n}")).collect();
            assert!(asked(parameter, &words).is_ok(), "{parameter}");
            let more: Vec<String> = (0..33).map(|n| format!("w{n}")).collect();
            assert_eq!(
                asked(parameter, &more),
                Err(format!("{parameter} takes at most 32 words, not 33")),
                "a 33rd word is refused"
            );
            assert!(asked(parameter, &["x".repeat(64)]).is_ok());
            assert_eq!(
                asked(parameter, &["ssh".to_owned(), "x".repeat(65)]),
                Err(format!(
                    "a word of {parameter} has at most 64 bytes, not 65"
                ))
            );
        }
        assert!(
            StreamQuery::parse(&format!("scopes={}", ",ip".repeat(100))).is_ok(),
            "the other parameters are as they were"
        );
    }
}
