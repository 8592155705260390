//! The one table of routes: each row a path, its method, the name the log line
//! carries, who may call it and its handler. Adding a route is one row here and
//! one handler beside its kind. Matching is pure, so the table is tested natively
//! and answers 404 and 405 without touching storage; the edge authenticates the
//! caller the row's handler asks for before the handler runs.

use futures_util::future::LocalBoxFuture;
use worker::Request;

#[cfg(not(feature = "manage"))]
use super::auth::arrival::Arrival;
#[cfg(feature = "manage")]
use super::auth::caller::OperatorCaller;
use super::auth::caller::{BouncerCaller, FeedCaller, HolderCaller, MachineCaller, ReporterCaller};
#[cfg(feature = "manage")]
use super::auth::login;
use super::context::RequestContext;
use super::error::ApiError;
#[cfg(feature = "edge")]
use super::feed::decisions;
use super::feed::handlers as feed;
#[cfg(feature = "manage")]
use super::holder::{allow, browse, cloudflare, machines, network};
#[cfg(feature = "edge")]
use super::holder::{operations, report};
#[cfg(feature = "manage")]
use super::machine::usage_metrics;
use super::machine::watchers;
#[cfg(feature = "edge")]
use super::machine::{alerts, heartbeat};
#[cfg(feature = "manage")]
use super::operator::{console, lists, network as operator_network};
use super::wire::reply::Reply;
#[cfg(feature = "manage")]
use crate::domain::access::operator::Access;
use crate::domain::code::Coded;
#[cfg(any(feature = "edge", feature = "manage"))]
use crate::domain::holder::list::Operation;
#[cfg(feature = "manage")]
use crate::domain::operator_lists::list::ListKind;

/// What a handler gives back: a future that borrows the request's context.
pub type Answer<'a> = LocalBoxFuture<'a, Result<Reply, ApiError>>;

/// A route's handler, by who may call it: the variant names the proof the edge
/// asks for, and the caller it proved is the handler's last argument.
#[derive(Clone, Copy)]
pub enum Handler {
    /// A license holder, by an access token.
    Holder(for<'a> fn(&'a RequestContext, Request, HolderCaller) -> Answer<'a>),
    /// A holder's feed: an access token or one of the holder's feed tokens.
    Feed(for<'a> fn(&'a RequestContext, Request, FeedCaller) -> Answer<'a>),
    /// CrowdSec's Local API, as its bouncers call it: a feed token in `X-Api-Key`.
    Bouncer(for<'a> fn(&'a RequestContext, Request, BouncerCaller) -> Answer<'a>),
    /// CrowdSec's Local API, as its engines call it: a machine's token.
    Machine(for<'a> fn(&'a RequestContext, Request, MachineCaller) -> Answer<'a>),
    /// `ADMIN_TOKEN`, or an operator key whose role gives the access named:
    /// the management Worker's routes only, so that an edge built without
    /// them carries none of the operator's proof (an edge forwards them as
    /// `Managed`).
    #[cfg(feature = "manage")]
    Operator(
        Access,
        for<'a> fn(&'a RequestContext, Request, OperatorCaller) -> Answer<'a>,
    ),
    /// CrowdSec's usage metrics: a bouncer's feed token in `X-Api-Key` or an
    /// engine's machine token, as its headers name it, proved by the handler
    /// once the report's body parses.
    Reporter(for<'a> fn(&'a RequestContext, Request, ReporterCaller) -> Answer<'a>),
    /// Anyone: a login proves its key or password itself.
    Open(for<'a> fn(&'a RequestContext, Request) -> Answer<'a>),
    /// A management route, in an edge built without them: the management
    /// Worker answers it, and the edge forwards the request as it came, once
    /// it has counted it for what it arrived as (`Arrival`), which the
    /// management Worker, without rate-limiting bindings, cannot.
    #[cfg(not(feature = "manage"))]
    Managed(Option<Arrival>),
    /// A route the edge answers, in a management Worker built without them:
    /// the edge never forwards it.
    #[cfg(not(feature = "edge"))]
    Edge,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    Post,
    Put,
    Patch,
    Delete,
}

impl Coded for Method {
    const ALL: &'static [Self] = &[
        Self::Get,
        Self::Head,
        Self::Post,
        Self::Put,
        Self::Patch,
        Self::Delete,
    ];

    fn code(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Head => "HEAD",
            Self::Post => "POST",
            Self::Put => "PUT",
            Self::Patch => "PATCH",
            Self::Delete => "DELETE",
        }
    }
}

pub struct Route {
    /// The path as the specification and its clients spell it; a last segment
    /// `{id}` stands for any one non-empty segment.
    pub path: &'static str,
    pub method: Method,
    /// The name the request's log line carries.
    pub name: &'static str,
    pub handler: Handler,
}

impl Route {
    /// The license holder's routes, which answer in the mode `result_mode` selects;
    /// login and the operator API answer in their own JSON shape.
    pub fn is_holders(&self) -> bool {
        match self.handler {
            Handler::Holder(_) | Handler::Feed(_) => true,
            #[cfg(not(feature = "manage"))]
            Handler::Managed(arrival) => arrival.is_none_or(Arrival::is_holders),
            _ => false,
        }
    }

    /// The id `path` gives this route's `{id}`, or `""` when the route has none;
    /// `None` when the route does not answer on `path`.
    fn matches(&self, path: &str) -> Option<String> {
        match self.path.strip_suffix("{id}") {
            None => (self.path == path).then(String::new),
            Some(prefix) => path
                .strip_prefix(prefix)
                .filter(|id| !id.is_empty() && !id.contains('/'))
                .map(str::to_owned),
        }
    }
}

/// The row of a route that shares its handler with another of its name: a
/// path's alias, or one of the operator's two lists.
macro_rules! with {
    ($kind:ident, |$cx:ident, $req:ident, $who:ident| $body:expr) => {
        Handler::$kind(|$cx, $req, $who| Box::pin($body))
    };
    ($kind:ident, $access:expr, |$cx:ident, $req:ident, $who:ident| $body:expr) => {
        Handler::$kind($access, |$cx, $req, $who| Box::pin($body))
    };
    (Open, |$cx:ident, $req:ident| $body:expr) => {
        Handler::Open(|$cx, $req| Box::pin($body))
    };
}

/// The row of a route the edge answers: its handler where this build has them
/// (the edge's, and the one Worker the tests run), else a placeholder in the
/// management Worker, which only the edge calls, and only with its own rows.
/// Without the handlers in its table, the management Worker's build leaves
/// them out: a smaller module, and a shorter build.
#[cfg(feature = "edge")]
macro_rules! edge {
    ($($row:tt)*) => {
        with!($($row)*)
    };
}
#[cfg(not(feature = "edge"))]
macro_rules! edge {
    ($($row:tt)*) => {
        Handler::Edge
    };
}

/// The row of a management route: its handler where this build has them (the
/// management Worker's, and the one Worker the tests run), else the edge's
/// forward to the management Worker, which counts the request first for what
/// `=>` names it arrived as (an operator's call always is).
#[cfg(feature = "manage")]
macro_rules! managed {
    ($kind:ident => $arrival:ident, $($rest:tt)*) => {
        with!($kind, $($rest)*)
    };
    ($($row:tt)*) => {
        with!($($row)*)
    };
}
#[cfg(not(feature = "manage"))]
macro_rules! managed {
    ($kind:ident => $arrival:ident, $($rest:tt)*) => {
        Handler::Managed(Some(Arrival::$arrival))
    };
    (Holder, $($rest:tt)*) => {
        Handler::Managed(None)
    };
    (Operator, $($rest:tt)*) => {
        Handler::Managed(Some(Arrival::Operator))
    };
}

#[cfg(feature = "manage")]
use Access::{Change, Read, Root};
use Method::{Delete, Get, Head, Patch, Post, Put};

const fn row(path: &'static str, method: Method, name: &'static str, handler: Handler) -> Route {
    Route {
        path,
        method,
        name,
        handler,
    }
}

/// Every route, with the inconsistent names the specification uses as aliases;
/// the methods of one path in the order `Allow` lists them. Requests are routed
/// by it, and the OpenAPI agreement tests read it.
#[rustfmt::skip]
pub static ROUTES: &[Route] = &[
    // The specified list operations, one address at a time, and many at once.
    row("/api/checkIpOnGreylist", Post, "check", edge!(Holder, |cx, req, who| operations::single(Operation::Check, cx, req, who))),
    row("/api/checkIpOnChallengeList", Post, "check", edge!(Holder, |cx, req, who| operations::single(Operation::Check, cx, req, who))),
    row("/api/addIpToGreylist", Post, "add", edge!(Holder, |cx, req, who| operations::single(Operation::Add, cx, req, who))),
    row("/api/addIpToChallengeList", Post, "add", edge!(Holder, |cx, req, who| operations::single(Operation::Add, cx, req, who))),
    row("/api/deleteIpFromGreylist", Post, "remove", edge!(Holder, |cx, req, who| operations::single(Operation::Remove, cx, req, who))),
    row("/api/deleteIpToGreylist", Post, "remove", edge!(Holder, |cx, req, who| operations::single(Operation::Remove, cx, req, who))),
    row("/api/deleteIpFromChallengeList", Post, "remove", edge!(Holder, |cx, req, who| operations::single(Operation::Remove, cx, req, who))),
    row("/api/addIpsToGreylist", Post, "bulk_add", edge!(Holder, |cx, req, who| operations::bulk(Operation::Add, cx, req, who))),
    row("/api/addIpsToChallengeList", Post, "bulk_add", edge!(Holder, |cx, req, who| operations::bulk(Operation::Add, cx, req, who))),
    row("/api/deleteIpsFromGreylist", Post, "bulk_remove", edge!(Holder, |cx, req, who| operations::bulk(Operation::Remove, cx, req, who))),
    row("/api/deleteIpsFromChallengeList", Post, "bulk_remove", edge!(Holder, |cx, req, who| operations::bulk(Operation::Remove, cx, req, who))),
    // A holder's own allow list, on BitNinja's names too.
    row("/api/checkIpOnAllowlist", Post, "allow_check", managed!(Holder, |cx, req, who| allow::single(Operation::Check, cx, req, who))),
    row("/api/checkIpOnWhitelist", Post, "allow_check", managed!(Holder, |cx, req, who| allow::single(Operation::Check, cx, req, who))),
    row("/api/addIpToAllowlist", Post, "allow_add", managed!(Holder, |cx, req, who| allow::single(Operation::Add, cx, req, who))),
    row("/api/addIpToWhitelist", Post, "allow_add", managed!(Holder, |cx, req, who| allow::single(Operation::Add, cx, req, who))),
    row("/api/deleteIpFromAllowlist", Post, "allow_remove", managed!(Holder, |cx, req, who| allow::single(Operation::Remove, cx, req, who))),
    row("/api/deleteIpFromWhitelist", Post, "allow_remove", managed!(Holder, |cx, req, who| allow::single(Operation::Remove, cx, req, who))),
    row("/api/listAllowlist", Post, "allow_list", managed!(Holder, |cx, req, who| allow::list(cx, req, who))),
    row("/api/listWhitelist", Post, "allow_list", managed!(Holder, |cx, req, who| allow::list(cx, req, who))),
    // Reports of attackers from the holder's own tools, one or many.
    row("/api/reportIp", Post, "report", edge!(Holder, |cx, req, who| report::single(cx, req, who))),
    row("/api/reportIps", Post, "bulk_report", edge!(Holder, |cx, req, who| report::bulk(cx, req, who))),
    row("/api/networkStatus", Post, "network_status", managed!(Holder => Lookup, |cx, req, who| network::status(cx, req, who))),
    // A holder's own list, history and day.
    row("/api/listGreylist", Post, "list", managed!(Holder, |cx, req, who| browse::list(cx, req, who))),
    row("/api/listChallengeList", Post, "list", managed!(Holder, |cx, req, who| browse::list(cx, req, who))),
    row("/api/greylistHistory", Post, "history", managed!(Holder, |cx, req, who| browse::history(cx, req, who))),
    row("/api/challengeListHistory", Post, "history", managed!(Holder, |cx, req, who| browse::history(cx, req, who))),
    row("/api/quota", Get, "quota", managed!(Holder, |cx, req, who| browse::quota(cx, req, who))),
    row("/api/activity", Get, "activity", managed!(Holder, |cx, req, who| browse::activity(cx, req, who))),
    // Firewall agents: feed tokens and the feed.
    row("/api/feedTokens", Post, "create_feed_token", managed!(Holder, |cx, req, who| feed::create_token(cx, req, who))),
    row("/api/feedTokens", Get, "list_feed_tokens", managed!(Holder, |cx, req, who| feed::list_tokens(cx, req, who))),
    row("/api/feedTokens/{id}", Delete, "revoke_feed_token", managed!(Holder, |cx, req, who| feed::revoke_token(cx, req, who))),
    row("/api/greylistFeed", Get, "feed", edge!(Feed, |cx, req, who| feed::feed(cx, req, who))),
    row("/api/challengeListFeed", Get, "feed", edge!(Feed, |cx, req, who| feed::feed(cx, req, who))),
    // The holder's CrowdSec engines (machines): their credentials and what their alerts do.
    row("/api/machines", Post, "create_machine", managed!(Holder, |cx, req, who| machines::create(cx, req, who))),
    row("/api/machines", Get, "list_machines", managed!(Holder, |cx, req, who| machines::list(cx, req, who))),
    row("/api/machines/{id}", Patch, "change_machine", managed!(Holder, |cx, req, who| machines::change(cx, req, who))),
    row("/api/machines/{id}", Delete, "revoke_machine", managed!(Holder, |cx, req, who| machines::revoke(cx, req, who))),
    // The holder's own Cloudflare edge: a list kept in sync, and the zone's rule that challenges it.
    row("/api/cloudflare", Put, "connect_cloudflare", managed!(Holder, |cx, req, who| cloudflare::connect(cx, req, who))),
    row("/api/cloudflare", Get, "cloudflare_status", managed!(Holder, |cx, req, who| cloudflare::status(cx, req, who))),
    row("/api/cloudflare", Delete, "disconnect_cloudflare", managed!(Holder, |cx, req, who| cloudflare::disconnect(cx, req, who))),
    // CrowdSec's bouncers.
    row("/v1/decisions/stream", Get, "decision_stream", edge!(Bouncer, |cx, req, who| decisions::stream(cx, req, who))),
    row("/v1/decisions/stream", Head, "decision_stream_head", edge!(Bouncer, |cx, req, who| decisions::stream_head(cx, req, who))),
    row("/v1/decisions", Get, "decisions", edge!(Bouncer, |cx, req, who| decisions::live(cx, req, who))),
    // CrowdSec's engines (machines): a login for a machine token, then what they send with it.
    row("/v1/watchers/login", Post, "machine_login", managed!(Open => Login, |cx, req| watchers::login(cx, req))),
    row("/v1/watchers", Post, "machine_register", edge!(Open, |cx, req| watchers::register(cx, req))),
    row("/v1/heartbeat", Get, "heartbeat", edge!(Machine, |cx, req, who| heartbeat::heartbeat(cx, req, who))),
    row("/v1/alerts", Post, "alerts", edge!(Machine, |cx, req, who| alerts::post(cx, req, who))),
    row("/v1/allowlists", Get, "allowlists", edge!(Open, |cx, req| heartbeat::allowlists(cx, req))),
    // What bouncers and engines report of themselves: the route proves either caller after the body.
    row("/v1/usage-metrics", Post, "usage_metrics", managed!(Reporter => Report, |cx, req, who| usage_metrics::post(cx, req, who))),
    row("/v2/authentication/login/license", Post, "login", managed!(Open => Login, |cx, req| login::handle(cx, req))),
    // The operator.
    row("/admin/licenses", Post, "create_license", managed!(Operator, Change, |cx, req, who| console::create_license(cx, req, who))),
    row("/admin/licenses", Get, "list_licenses", managed!(Operator, Read, |cx, req, who| console::licenses(cx, req, who))),
    row("/admin/licenses/{id}", Get, "license", managed!(Operator, Read, |cx, req, who| console::license(cx, req, who))),
    row("/admin/licenses/{id}", Patch, "relabel_license", managed!(Operator, Change, |cx, req, who| console::relabel(cx, req, who))),
    row("/admin/licenses/{id}", Delete, "revoke_license", managed!(Operator, Change, |cx, req, who| console::revoke_license(cx, req, who))),
    row("/admin/global-list", Post, "edit_global_list", managed!(Operator, Change, |cx, req, who| lists::edit_list(ListKind::Global, cx, req, who))),
    row("/admin/global-list", Put, "replace_global_list", managed!(Operator, Change, |cx, req, who| lists::replace_list(ListKind::Global, cx, req, who))),
    row("/admin/global-list", Get, "export_global_list", managed!(Operator, Read, |cx, req, who| lists::export_list(ListKind::Global, cx, req, who))),
    row("/admin/allow-list", Post, "edit_allow_list", managed!(Operator, Change, |cx, req, who| lists::edit_list(ListKind::Allow, cx, req, who))),
    row("/admin/allow-list", Put, "replace_allow_list", managed!(Operator, Change, |cx, req, who| lists::replace_list(ListKind::Allow, cx, req, who))),
    row("/admin/allow-list", Get, "export_allow_list", managed!(Operator, Read, |cx, req, who| lists::export_list(ListKind::Allow, cx, req, who))),
    row("/admin/status", Get, "status", managed!(Operator, Read, |cx, req, who| lists::status(cx, req, who))),
    row("/admin/keys", Post, "create_operator_key", managed!(Operator, Root, |cx, req, who| console::create_key(cx, req, who))),
    row("/admin/keys", Get, "list_operator_keys", managed!(Operator, Read, |cx, req, who| console::keys(cx, req, who))),
    row("/admin/keys/{id}", Delete, "revoke_operator_key", managed!(Operator, Root, |cx, req, who| console::revoke_key(cx, req, who))),
    row("/admin/audit", Get, "audit", managed!(Operator, Read, |cx, req, who| console::audit(cx, req, who))),
    row("/admin/lookup", Get, "lookup", managed!(Operator, Read, |cx, req, who| console::lookup(cx, req, who))),
    // The network: canaries, and the promotions waiting for review.
    row("/admin/canaries", Get, "canaries", managed!(Operator, Read, |cx, req, who| operator_network::canaries(cx, req, who))),
    row("/admin/canaries", Post, "edit_canaries", managed!(Operator, Change, |cx, req, who| operator_network::edit_canaries(cx, req, who))),
    row("/admin/promotions", Get, "pending_promotions", managed!(Operator, Read, |cx, req, who| operator_network::promotions(cx, req, who))),
    row("/admin/promotions", Post, "review_promotions", managed!(Operator, Change, |cx, req, who| operator_network::review(cx, req, who))),
];

/// A route is the row of its path and method.
impl PartialEq for Route {
    fn eq(&self, other: &Self) -> bool {
        (self.path, self.method) == (other.path, other.method)
    }
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} ({})", self.method.code(), self.path, self.name)
    }
}

/// A request no route answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Miss {
    NotFound,
    /// The path exists; these are its routes, one per method.
    MethodNotAllowed(Vec<&'static Route>),
}

impl Miss {
    /// The methods the path takes, as `Allow` lists them.
    pub fn allowed(routes: &[&Route]) -> String {
        routes
            .iter()
            .map(|route| route.method.code())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The route a request names, and the id its path gives.
pub struct Resolved {
    pub route: &'static Route,
    pub id: String,
}

/// How many slashes end a path.
fn trailing(path: &str) -> usize {
    path.len() - path.trim_end_matches('/').len()
}

/// The route of `method` on `path`; a 404 when no route answers on the path, a
/// 405 naming the methods it takes when none of them is `method`.
pub fn resolve(method: &str, path: &str) -> Result<Resolved, Miss> {
    // A bouncer's base URL may end in a slash or not, and its client may add one.
    let bouncer = path.trim_start_matches('/');
    let path = match bouncer.strip_prefix("v1/") {
        Some(rest) => &path[path.len() - bouncer.len() - 1..path.len() - trailing(rest)],
        None => path,
    };
    let mut on_path = Vec::new();
    for route in ROUTES {
        let Some(id) = route.matches(path) else {
            continue;
        };
        if route.method.code() == method {
            return Ok(Resolved { route, id });
        }
        on_path.push(route);
    }
    Err(if on_path.is_empty() {
        Miss::NotFound
    } else {
        Miss::MethodNotAllowed(on_path)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The name of the route `method` `path` resolves to.
    fn name(method: &str, path: &str) -> Result<&'static str, Miss> {
        resolve(method, path).map(|resolved| resolved.route.name)
    }

    #[test]
    fn every_list_path_and_alias_routes_to_its_operation() {
        for path in ["/api/checkIpOnGreylist", "/api/checkIpOnChallengeList"] {
            assert_eq!(name("POST", path), Ok("check"), "{path}");
        }
        for path in ["/api/addIpToGreylist", "/api/addIpToChallengeList"] {
            assert_eq!(name("POST", path), Ok("add"), "{path}");
        }
        for path in [
            "/api/deleteIpFromGreylist",
            "/api/deleteIpToGreylist",
            "/api/deleteIpFromChallengeList",
        ] {
            assert_eq!(name("POST", path), Ok("remove"), "{path}");
        }
    }

    #[test]
    fn bulk_paths_route_to_their_operation() {
        for (path, expected) in [
            ("/api/addIpsToGreylist", "bulk_add"),
            ("/api/addIpsToChallengeList", "bulk_add"),
            ("/api/deleteIpsFromGreylist", "bulk_remove"),
            ("/api/deleteIpsFromChallengeList", "bulk_remove"),
        ] {
            assert_eq!(name("POST", path), Ok(expected), "{path}");
        }
    }

    #[test]
    fn every_route_goes_to_the_worker_before_any_static_file() {
        let config = include_str!("../../wrangler.toml");
        let list = config
            .split("run_worker_first = [")
            .nth(1)
            .and_then(|rest| rest.split(']').next())
            .expect("run_worker_first in wrangler.toml");
        let patterns: Vec<&str> = list
            .lines()
            .map(|line| line.trim().trim_end_matches(',').trim_matches('"'))
            .filter(|line| !line.is_empty())
            .collect();
        let first = |path: &str| {
            patterns.iter().any(|p| match p.strip_suffix('*') {
                Some(prefix) => path.starts_with(prefix),
                None => path == *p,
            })
        };
        for route in ROUTES {
            let concrete = route.path.replace("{id}", "x");
            assert!(
                first(&concrete),
                "{} is not in run_worker_first",
                route.path
            );
        }
    }

    #[test]
    fn a_bouncers_paths_route_with_or_without_slashes_around_them() {
        for path in [
            "/v1/decisions/stream",
            "//v1/decisions/stream",
            "/v1/decisions/stream/",
        ] {
            assert_eq!(name("GET", path), Ok("decision_stream"), "{path}");
            assert_eq!(name("HEAD", path), Ok("decision_stream_head"), "{path}");
        }
        assert_eq!(name("GET", "//v1/decisions"), Ok("decisions"));
        assert!(matches!(
            name("POST", "/v1/decisions/stream"),
            Err(Miss::MethodNotAllowed(_))
        ));
        assert_eq!(name("GET", "/v1/nothing"), Err(Miss::NotFound));
        assert_eq!(name("GET", "/api/greylistFeed/"), Err(Miss::NotFound));
    }

    #[test]
    fn an_engines_paths_route_with_or_without_slashes_around_them() {
        for path in [
            "/v1/watchers/login",
            "//v1/watchers/login",
            "/v1/watchers/login/",
        ] {
            assert_eq!(name("POST", path), Ok("machine_login"), "{path}");
        }
        assert_eq!(name("POST", "/v1/watchers"), Ok("machine_register"));
        assert_eq!(name("GET", "/v1/heartbeat"), Ok("heartbeat"));
        assert_eq!(name("POST", "/v1/alerts/"), Ok("alerts"));
        assert_eq!(name("GET", "/v1/allowlists"), Ok("allowlists"));
        assert_eq!(name("POST", "/v1/usage-metrics"), Ok("usage_metrics"));
        assert!(matches!(
            name("GET", "/v1/watchers"),
            Err(Miss::MethodNotAllowed(_))
        ));
        for (method, path) in [("GET", "/v1/heartbeat"), ("POST", "/v1/watchers/login")] {
            assert!(
                !resolve(method, path).ok().unwrap().route.is_holders(),
                "{path} answers in CrowdSec's shape"
            );
        }
    }

    #[test]
    fn feed_quota_and_feed_token_paths() {
        assert_eq!(name("GET", "/api/greylistFeed"), Ok("feed"));
        assert_eq!(name("GET", "/api/challengeListFeed"), Ok("feed"));
        assert_eq!(name("GET", "/api/quota"), Ok("quota"));
        assert_eq!(name("POST", "/api/feedTokens"), Ok("create_feed_token"));
        assert_eq!(name("GET", "/api/feedTokens"), Ok("list_feed_tokens"));
        let revoke = resolve("DELETE", "/api/feedTokens/ft_1").ok().unwrap();
        assert_eq!(
            (revoke.route.name, revoke.id.as_str()),
            ("revoke_feed_token", "ft_1")
        );
        assert_eq!(name("DELETE", "/api/feedTokens/"), Err(Miss::NotFound));
        let feed = resolve("GET", "/api/greylistFeed").ok().unwrap();
        assert!(feed.route.is_holders() && feed.id.is_empty());
    }

    #[test]
    fn operator_and_login_paths() {
        assert_eq!(
            name("POST", "/v2/authentication/login/license"),
            Ok("login")
        );
        assert_eq!(name("POST", "/admin/licenses"), Ok("create_license"));
        assert_eq!(name("GET", "/admin/licenses"), Ok("list_licenses"));
        let revoke = resolve("DELETE", "/admin/licenses/lic_1").ok().unwrap();
        assert_eq!(
            (revoke.route.name, revoke.id.as_str()),
            ("revoke_license", "lic_1")
        );
        assert_eq!(name("POST", "/admin/global-list"), Ok("edit_global_list"));
        assert_eq!(name("PUT", "/admin/allow-list"), Ok("replace_allow_list"));
        assert_eq!(name("GET", "/admin/global-list"), Ok("export_global_list"));
        assert_eq!(name("GET", "/admin/status"), Ok("status"));
        for (method, path) in [
            ("POST", "/v2/authentication/login/license"),
            ("GET", "/admin/status"),
        ] {
            assert!(
                !resolve(method, path).ok().unwrap().route.is_holders(),
                "{path}"
            );
        }
    }

    #[test]
    fn a_known_path_with_another_method_names_the_methods_it_takes() {
        let allowed = |method, path| match resolve(method, path) {
            Err(Miss::MethodNotAllowed(routes)) => Miss::allowed(&routes),
            Err(Miss::NotFound) => panic!("{method} {path}: not found"),
            Ok(resolved) => panic!("{method} {path}: {}", resolved.route.name),
        };
        assert_eq!(allowed("GET", "/api/addIpToGreylist"), "POST");
        assert_eq!(allowed("DELETE", "/admin/global-list"), "POST, PUT, GET");
        assert_eq!(
            allowed("POST", "/admin/licenses/lic_1"),
            "GET, PATCH, DELETE"
        );
        assert_eq!(allowed("PUT", "/admin/licenses"), "POST, GET");
    }

    #[test]
    fn every_path_has_one_route_per_method_and_every_name_one_handler_kind() {
        for (i, route) in ROUTES.iter().enumerate() {
            for other in &ROUTES[i + 1..] {
                assert!(
                    (route.path, route.method) != (other.path, other.method),
                    "{} {} has two rows",
                    route.method.code(),
                    route.path
                );
                if route.name == other.name {
                    // Aliases share a name, and so the access and answer of their route.
                    assert_eq!(access(route), access(other), "{}", route.name);
                    assert_eq!(route.method, other.method, "{}", route.name);
                }
            }
        }
    }

    /// Who may call a route, as the OpenAPI document states it.
    fn access(route: &Route) -> &'static str {
        match route.handler {
            Handler::Holder(_) => "holder",
            Handler::Feed(_) => "feed",
            Handler::Bouncer(_) => "bouncer",
            Handler::Machine(_) => "machine",
            Handler::Reporter(_) => "bouncer or machine",
            Handler::Open(_) => "open",
            Handler::Operator(Read, _) => "read",
            Handler::Operator(Change, _) => "change",
            Handler::Operator(Root, _) => "root",
        }
    }

    fn openapi() -> serde_json::Value {
        serde_json::from_str(include_str!("../../public/openapi.json")).unwrap()
    }

    #[test]
    fn the_openapi_document_lists_exactly_the_routes_that_exist() {
        let doc = openapi();
        assert_eq!(doc["openapi"], "3.1.0");
        let mut documented: Vec<(String, String)> = doc["paths"]
            .as_object()
            .unwrap()
            .iter()
            // The document itself is a static asset, not a route of the Worker.
            .filter(|(path, _)| path.as_str() != "/openapi.json")
            .flat_map(|(path, item)| {
                item.as_object()
                    .unwrap()
                    .keys()
                    .map(move |method| (path.clone(), method.to_uppercase()))
            })
            .collect();
        let mut served: Vec<(String, String)> = ROUTES
            .iter()
            .map(|route| (route.path.to_owned(), route.method.code().to_owned()))
            .collect();
        documented.sort();
        served.sort();
        assert_eq!(documented, served);
    }

    #[test]
    fn the_openapi_document_states_each_operator_routes_access_as_the_table_does() {
        let doc = openapi();
        let operators: Vec<&Route> = ROUTES
            .iter()
            .filter(|route| matches!(route.handler, Handler::Operator(..)))
            .collect();
        assert!(operators.len() >= 17);
        for route in operators {
            let method = route.method.code();
            let stated = &doc["paths"][route.path][method.to_lowercase()]["x-operator-access"];
            assert_eq!(
                stated,
                access(route),
                "the OpenAPI document states the access the table gives: {method} {}",
                route.path
            );
        }
    }

    /// The credentials a route's handler kind takes, as the OpenAPI document's
    /// security schemes name them.
    fn schemes(route: &Route) -> &'static [&'static str] {
        match route.handler {
            Handler::Holder(_) => &["accessToken"],
            Handler::Feed(_) => &["accessToken", "feedToken", "feedTokenBasic"],
            Handler::Bouncer(_) => &["bouncerKey"],
            Handler::Machine(_) => &["machineToken"],
            Handler::Reporter(_) => &["bouncerKey", "machineToken"],
            Handler::Operator(..) => &["adminToken", "operatorKey"],
            Handler::Open(_) => &[],
        }
    }

    #[test]
    fn the_openapi_document_states_who_may_call_each_route_as_its_row_does() {
        let doc = openapi();
        for route in ROUTES {
            let method = route.method.code().to_lowercase();
            let security = &doc["paths"][route.path][&method]["security"];
            let mut stated: Vec<&str> = security
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|each| each.as_object().unwrap().keys())
                .map(String::as_str)
                .collect();
            stated.sort_unstable();
            let mut table = schemes(route).to_vec();
            table.sort_unstable();
            assert_eq!(
                stated, table,
                "{method} {}: the OpenAPI document states other callers than the route's row",
                route.path
            );
        }
    }

    #[test]
    fn near_misses_are_unknown() {
        for path in [
            "/",
            "/api",
            "/api/checkIpOnGreylist/",
            "/api/checkiponGreylist",
            "/API/checkIpOnGreylist",
            "/admin/licenses/",
            "/admin/licenses/a/b",
            "/api/deleteIpFromchallenge list",
            "/admin/status/",
        ] {
            assert_eq!(name("POST", path), Err(Miss::NotFound), "{path:?}");
        }
    }
}
