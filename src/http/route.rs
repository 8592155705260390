//! Which endpoint a method and path name. Pure, so the table is tested natively
//! and answers 404 and 405 without touching storage. Routes are grouped by who
//! may call them, so the edge authenticates a group once, before any handler runs.

use std::sync::LazyLock;

use crate::domain::code::Coded;
use crate::domain::holder::Operation;
use crate::domain::ip_list::ListKind;
use crate::domain::operator::Access;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// A license holder's routes: an access token opens them.
    Holder(HolderRoute),
    /// The feed: an access token or one of the holder's feed tokens.
    Feed,
    /// `ADMIN_TOKEN` or an operator key whose role allows the route (`OperatorRoute::access`).
    Operator(OperatorRoute),
    /// CrowdSec's Local API, as its bouncers call it: a feed token in `X-Api-Key`.
    Bouncer(BouncerRoute),
    Login,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BouncerRoute {
    Stream,
    /// The stream's `HEAD`: whether the key opens it, nothing read or moved.
    StreamHead,
    /// Live mode: the decisions that cover one address.
    Decisions,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HolderRoute {
    Single(Operation),
    Bulk(Operation),
    ListEntries,
    History,
    Quota,
    Activity,
    CreateFeedToken,
    FeedTokens,
    RevokeFeedToken(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OperatorRoute {
    CreateLicense,
    Licenses,
    License(String),
    Relabel(String),
    RevokeLicense(String),
    EditList(ListKind),
    ReplaceList(ListKind),
    ExportList(ListKind),
    Status,
    CreateKey,
    Keys,
    RevokeKey(String),
    Audit,
    Lookup,
}

impl OperatorRoute {
    /// What the caller needs to call it: the one place roles meet routes.
    pub fn access(&self) -> Access {
        use OperatorRoute as O;
        match self {
            O::Licenses
            | O::License(_)
            | O::ExportList(_)
            | O::Status
            | O::Keys
            | O::Audit
            | O::Lookup => Access::Read,
            O::CreateKey | O::RevokeKey(_) => Access::Root,
            O::CreateLicense
            | O::Relabel(_)
            | O::RevokeLicense(_)
            | O::EditList(_)
            | O::ReplaceList(_) => Access::Change,
        }
    }
}

/// A request no route answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Miss {
    NotFound,
    /// The path exists; these are its routes.
    MethodNotAllowed(Vec<Route>),
}

impl Miss {
    /// The methods the path takes, for `Allow`.
    pub fn allowed(routes: &[Route]) -> String {
        routes
            .iter()
            .map(Route::method)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The one table of fixed paths, with the inconsistent names the specification
/// uses: every route that answers on each path, one per method. Requests are
/// routed by it and the OpenAPI agreement test reads it.
static PATHS: LazyLock<Vec<(&'static str, Vec<Route>)>> = LazyLock::new(|| {
    use HolderRoute as H;
    use OperatorRoute as O;
    let holder = |route| vec![Route::Holder(route)];
    let list = |kind| {
        vec![
            Route::Operator(O::EditList(kind)),
            Route::Operator(O::ReplaceList(kind)),
            Route::Operator(O::ExportList(kind)),
        ]
    };
    vec![
        (
            "/api/checkIpOnGreylist",
            holder(H::Single(Operation::Check)),
        ),
        (
            "/api/checkIpOnChallengeList",
            holder(H::Single(Operation::Check)),
        ),
        ("/api/addIpToGreylist", holder(H::Single(Operation::Add))),
        (
            "/api/addIpToChallengeList",
            holder(H::Single(Operation::Add)),
        ),
        (
            "/api/deleteIpFromGreylist",
            holder(H::Single(Operation::Remove)),
        ),
        (
            "/api/deleteIpToGreylist",
            holder(H::Single(Operation::Remove)),
        ),
        (
            "/api/deleteIpFromChallengeList",
            holder(H::Single(Operation::Remove)),
        ),
        ("/api/addIpsToGreylist", holder(H::Bulk(Operation::Add))),
        (
            "/api/addIpsToChallengeList",
            holder(H::Bulk(Operation::Add)),
        ),
        (
            "/api/deleteIpsFromGreylist",
            holder(H::Bulk(Operation::Remove)),
        ),
        (
            "/api/deleteIpsFromChallengeList",
            holder(H::Bulk(Operation::Remove)),
        ),
        ("/api/listGreylist", holder(H::ListEntries)),
        ("/api/listChallengeList", holder(H::ListEntries)),
        ("/api/greylistHistory", holder(H::History)),
        ("/api/challengeListHistory", holder(H::History)),
        ("/api/quota", holder(H::Quota)),
        ("/api/activity", holder(H::Activity)),
        (
            "/api/feedTokens",
            vec![
                Route::Holder(H::CreateFeedToken),
                Route::Holder(H::FeedTokens),
            ],
        ),
        ("/api/greylistFeed", vec![Route::Feed]),
        ("/api/challengeListFeed", vec![Route::Feed]),
        (
            "/v1/decisions/stream",
            vec![
                Route::Bouncer(BouncerRoute::Stream),
                Route::Bouncer(BouncerRoute::StreamHead),
            ],
        ),
        (
            "/v1/decisions",
            vec![Route::Bouncer(BouncerRoute::Decisions)],
        ),
        ("/v2/authentication/login/license", vec![Route::Login]),
        (
            "/admin/licenses",
            vec![
                Route::Operator(O::CreateLicense),
                Route::Operator(O::Licenses),
            ],
        ),
        ("/admin/global-list", list(ListKind::Global)),
        ("/admin/allow-list", list(ListKind::Allow)),
        ("/admin/status", vec![Route::Operator(O::Status)]),
        (
            "/admin/keys",
            vec![Route::Operator(O::CreateKey), Route::Operator(O::Keys)],
        ),
        ("/admin/audit", vec![Route::Operator(O::Audit)]),
        ("/admin/lookup", vec![Route::Operator(O::Lookup)]),
    ]
});

/// How many slashes end a path.
fn trailing(path: &str) -> usize {
    path.len() - path.trim_end_matches('/').len()
}

/// Makes the routes of a path that ends in an id.
type WithId = fn(String) -> Vec<Route>;

/// Paths that end in an id: the prefix and the routes each takes, one per method.
const ID_PATHS: [(&str, WithId); 3] = [
    ("/admin/licenses/", |id| {
        use OperatorRoute as O;
        vec![
            Route::Operator(O::License(id.clone())),
            Route::Operator(O::Relabel(id.clone())),
            Route::Operator(O::RevokeLicense(id)),
        ]
    }),
    ("/admin/keys/", |id| {
        vec![Route::Operator(OperatorRoute::RevokeKey(id))]
    }),
    ("/api/feedTokens/", |id| {
        vec![Route::Holder(HolderRoute::RevokeFeedToken(id))]
    }),
];

impl Route {
    fn on_path(path: &str) -> Vec<Self> {
        // A bouncer's base URL may end in a slash or not, and its client may add one.
        let bouncer = path.trim_start_matches('/');
        let path = match bouncer.strip_prefix("v1/") {
            Some(rest) => &path[path.len() - bouncer.len() - 1..path.len() - trailing(rest)],
            None => path,
        };
        if let Some((_, routes)) = PATHS.iter().find(|(p, _)| *p == path) {
            return routes.clone();
        }
        ID_PATHS
            .iter()
            .find_map(|(prefix, route)| {
                let id = path
                    .strip_prefix(prefix)
                    .filter(|id| !id.is_empty() && !id.contains('/'))?;
                Some(route(id.to_owned()))
            })
            .unwrap_or_default()
    }

    pub fn resolve(method: &str, path: &str) -> Result<Self, Miss> {
        let mut routes = Self::on_path(path);
        if routes.is_empty() {
            return Err(Miss::NotFound);
        }
        match routes.iter().position(|route| route.method() == method) {
            Some(found) => Ok(routes.swap_remove(found)),
            None => Err(Miss::MethodNotAllowed(routes)),
        }
    }

    /// The method each route answers to.
    pub fn method(&self) -> &'static str {
        use HolderRoute as H;
        use OperatorRoute as O;
        match self {
            Self::Holder(H::RevokeFeedToken(_))
            | Self::Operator(O::RevokeLicense(_) | O::RevokeKey(_)) => "DELETE",
            Self::Operator(O::Relabel(_)) => "PATCH",
            Self::Operator(O::License(_) | O::Keys | O::Audit | O::Lookup) => "GET",
            Self::Bouncer(BouncerRoute::StreamHead) => "HEAD",
            Self::Feed | Self::Holder(H::FeedTokens | H::Quota | H::Activity) => "GET",
            Self::Bouncer(_) => "GET",
            Self::Operator(O::ExportList(_) | O::Status | O::Licenses) => "GET",
            Self::Operator(O::ReplaceList(_)) => "PUT",
            _ => "POST",
        }
    }

    /// The name the request's log line carries.
    pub fn name(&self) -> &'static str {
        use HolderRoute as H;
        use OperatorRoute as O;
        match self {
            Self::Holder(H::Single(op)) => op.code(),
            Self::Holder(H::Bulk(Operation::Add)) => "bulk_add",
            Self::Holder(H::Bulk(_)) => "bulk_remove",
            Self::Holder(H::ListEntries) => "list",
            Self::Holder(H::History) => "history",
            Self::Holder(H::Quota) => "quota",
            Self::Holder(H::Activity) => "activity",
            Self::Holder(H::CreateFeedToken) => "create_feed_token",
            Self::Holder(H::FeedTokens) => "list_feed_tokens",
            Self::Holder(H::RevokeFeedToken(_)) => "revoke_feed_token",
            Self::Feed => "feed",
            Self::Bouncer(BouncerRoute::Stream) => "decision_stream",
            Self::Bouncer(BouncerRoute::StreamHead) => "decision_stream_head",
            Self::Bouncer(BouncerRoute::Decisions) => "decisions",
            Self::Login => "login",
            Self::Operator(O::CreateLicense) => "create_license",
            Self::Operator(O::Licenses) => "list_licenses",
            Self::Operator(O::RevokeLicense(_)) => "revoke_license",
            Self::Operator(O::EditList(ListKind::Global)) => "edit_global_list",
            Self::Operator(O::EditList(ListKind::Allow)) => "edit_allow_list",
            Self::Operator(O::ReplaceList(ListKind::Global)) => "replace_global_list",
            Self::Operator(O::ReplaceList(ListKind::Allow)) => "replace_allow_list",
            Self::Operator(O::ExportList(ListKind::Global)) => "export_global_list",
            Self::Operator(O::ExportList(ListKind::Allow)) => "export_allow_list",
            Self::Operator(O::Status) => "status",
            Self::Operator(O::License(_)) => "license",
            Self::Operator(O::Relabel(_)) => "relabel_license",
            Self::Operator(O::CreateKey) => "create_operator_key",
            Self::Operator(O::Keys) => "list_operator_keys",
            Self::Operator(O::RevokeKey(_)) => "revoke_operator_key",
            Self::Operator(O::Audit) => "audit",
            Self::Operator(O::Lookup) => "lookup",
        }
    }

    /// The license holder's routes, which answer in the mode `result_mode` selects;
    /// login and the operator API answer in their own JSON shape.
    pub fn is_holders(&self) -> bool {
        matches!(self, Self::Holder(_) | Self::Feed)
    }

    /// Every path with its methods, as the OpenAPI document must list them (a
    /// path parameter written `{id}`), from the same table requests are routed by.
    #[cfg(test)]
    pub fn all() -> Vec<(String, &'static str)> {
        let fixed = PATHS.iter().flat_map(|(path, routes)| {
            routes
                .iter()
                .map(|route| (path.to_string(), route.method()))
        });
        let with_id = ID_PATHS.iter().flat_map(|(prefix, routes)| {
            routes(String::new())
                .into_iter()
                .map(move |route| (format!("{prefix}{{id}}"), route.method()))
        });
        fixed.chain(with_id).collect()
    }

    /// Every operator route with its path and method, for the test that the
    /// OpenAPI document states each one's access as `OperatorRoute::access` does.
    #[cfg(test)]
    pub fn operators() -> Vec<(String, &'static str, Access)> {
        let fixed = PATHS.iter().flat_map(|(path, routes)| {
            routes
                .iter()
                .map(move |route| (path.to_string(), route.clone()))
        });
        let with_id = ID_PATHS.iter().flat_map(|(prefix, routes)| {
            routes(String::new())
                .into_iter()
                .map(move |route| (format!("{prefix}{{id}}"), route))
        });
        fixed
            .chain(with_id)
            .filter_map(|(path, route)| match &route {
                Route::Operator(operator) => Some((path, route.method(), operator.access())),
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use HolderRoute as H;
    use OperatorRoute as O;

    #[test]
    fn every_list_path_and_alias_routes_to_its_operation() {
        let single = |path| match Route::resolve("POST", path) {
            Ok(Route::Holder(H::Single(op))) => op,
            other => panic!("{path}: {other:?}"),
        };
        for path in ["/api/checkIpOnGreylist", "/api/checkIpOnChallengeList"] {
            assert_eq!(single(path), Operation::Check);
        }
        for path in ["/api/addIpToGreylist", "/api/addIpToChallengeList"] {
            assert_eq!(single(path), Operation::Add);
        }
        for path in [
            "/api/deleteIpFromGreylist",
            "/api/deleteIpToGreylist",
            "/api/deleteIpFromChallengeList",
        ] {
            assert_eq!(single(path), Operation::Remove);
        }
    }

    #[test]
    fn bulk_paths_route_to_their_operation() {
        for (path, op) in [
            ("/api/addIpsToGreylist", Operation::Add),
            ("/api/addIpsToChallengeList", Operation::Add),
            ("/api/deleteIpsFromGreylist", Operation::Remove),
            ("/api/deleteIpsFromChallengeList", Operation::Remove),
        ] {
            assert_eq!(Route::resolve("POST", path), Ok(Route::Holder(H::Bulk(op))));
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
        for (path, _) in Route::all() {
            let concrete = path.replace("{id}", "x");
            assert!(first(&concrete), "{path} is not in run_worker_first");
        }
    }

    #[test]
    fn a_bouncers_paths_route_with_or_without_slashes_around_them() {
        use BouncerRoute as B;
        for path in [
            "/v1/decisions/stream",
            "//v1/decisions/stream",
            "/v1/decisions/stream/",
        ] {
            assert_eq!(
                Route::resolve("GET", path),
                Ok(Route::Bouncer(B::Stream)),
                "{path}"
            );
            assert_eq!(
                Route::resolve("HEAD", path),
                Ok(Route::Bouncer(B::StreamHead))
            );
        }
        assert_eq!(
            Route::resolve("GET", "//v1/decisions"),
            Ok(Route::Bouncer(B::Decisions))
        );
        assert!(matches!(
            Route::resolve("POST", "/v1/decisions/stream"),
            Err(Miss::MethodNotAllowed(_))
        ));
        assert_eq!(Route::resolve("GET", "/v1/watchers"), Err(Miss::NotFound));
        assert_eq!(
            Route::resolve("GET", "/api/greylistFeed/"),
            Err(Miss::NotFound)
        );
    }

    #[test]
    fn feed_quota_and_feed_token_paths() {
        assert_eq!(Route::resolve("GET", "/api/greylistFeed"), Ok(Route::Feed));
        assert_eq!(
            Route::resolve("GET", "/api/challengeListFeed"),
            Ok(Route::Feed)
        );
        assert_eq!(
            Route::resolve("GET", "/api/quota"),
            Ok(Route::Holder(H::Quota))
        );
        assert_eq!(
            Route::resolve("POST", "/api/feedTokens"),
            Ok(Route::Holder(H::CreateFeedToken))
        );
        assert_eq!(
            Route::resolve("GET", "/api/feedTokens"),
            Ok(Route::Holder(H::FeedTokens))
        );
        assert_eq!(
            Route::resolve("DELETE", "/api/feedTokens/ft_1"),
            Ok(Route::Holder(H::RevokeFeedToken("ft_1".into())))
        );
        assert_eq!(
            Route::resolve("DELETE", "/api/feedTokens/"),
            Err(Miss::NotFound)
        );
        assert!(Route::Feed.is_holders());
    }

    #[test]
    fn operator_and_login_paths() {
        assert_eq!(
            Route::resolve("POST", "/v2/authentication/login/license"),
            Ok(Route::Login)
        );
        assert_eq!(
            Route::resolve("POST", "/admin/licenses"),
            Ok(Route::Operator(O::CreateLicense))
        );
        assert_eq!(
            Route::resolve("GET", "/admin/licenses"),
            Ok(Route::Operator(O::Licenses))
        );
        assert_eq!(
            Route::resolve("DELETE", "/admin/licenses/lic_1"),
            Ok(Route::Operator(O::RevokeLicense("lic_1".into())))
        );
        assert_eq!(
            Route::resolve("POST", "/admin/global-list"),
            Ok(Route::Operator(O::EditList(ListKind::Global)))
        );
        assert_eq!(
            Route::resolve("PUT", "/admin/allow-list"),
            Ok(Route::Operator(O::ReplaceList(ListKind::Allow)))
        );
        assert_eq!(
            Route::resolve("GET", "/admin/global-list"),
            Ok(Route::Operator(O::ExportList(ListKind::Global)))
        );
        assert_eq!(
            Route::resolve("GET", "/admin/status"),
            Ok(Route::Operator(O::Status))
        );
        assert!(!Route::Login.is_holders() && !Route::Operator(O::Status).is_holders());
    }

    #[test]
    fn a_known_path_with_another_method_names_the_methods_it_takes() {
        let allowed = |method, path| match Route::resolve(method, path) {
            Err(Miss::MethodNotAllowed(routes)) => Miss::allowed(&routes),
            other => panic!("{method} {path}: {other:?}"),
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
    fn every_path_has_one_route_per_method() {
        for (path, routes) in PATHS.iter() {
            let mut methods: Vec<&str> = routes.iter().map(Route::method).collect();
            methods.sort();
            methods.dedup();
            assert_eq!(methods.len(), routes.len(), "{path}");
        }
    }

    #[test]
    fn the_openapi_document_lists_exactly_the_routes_that_exist() {
        let doc: serde_json::Value =
            serde_json::from_str(include_str!("../../public/openapi.json")).unwrap();
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
        let mut served: Vec<(String, String)> = Route::all()
            .into_iter()
            .map(|(p, m)| (p, m.to_owned()))
            .collect();
        documented.sort();
        served.sort();
        assert_eq!(documented, served);
    }

    #[test]
    fn the_openapi_document_states_each_operator_routes_access_as_the_table_does() {
        let doc: serde_json::Value =
            serde_json::from_str(include_str!("../../public/openapi.json")).unwrap();
        let operators = Route::operators();
        assert!(operators.len() >= 17);
        for (path, method, access) in operators {
            let stated = &doc["paths"][&path][method.to_lowercase()]["x-operator-access"];
            let expected = match access {
                Access::Read => "read",
                Access::Change => "change",
                Access::Root => "root",
            };
            assert_eq!(stated, expected, "{method} {path}");
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
            assert_eq!(
                Route::resolve("POST", path),
                Err(Miss::NotFound),
                "{path:?}"
            );
        }
    }
}
