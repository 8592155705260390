//! Which endpoint a method and path name. Pure, so the table is tested natively
//! and answers 404 and 405 without touching storage.

use super::holder::Operation;
use super::ip_list::ListKind;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    List(Operation),
    Bulk(Operation),
    Feed,
    CreateFeedToken,
    FeedTokens,
    RevokeFeedToken(String),
    ListEntries,
    History,
    Quota,
    OpenApi,
    Login,
    CreateLicense,
    Licenses,
    RevokeLicense(String),
    EditList(ListKind),
    ReplaceList(ListKind),
    ExportList(ListKind),
    Status,
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
        routes.iter().map(Route::method).collect::<Vec<_>>().join(", ")
    }
}

impl Route {
    /// Every path the list operations answer on, with the inconsistent names the specification uses.
    const LIST_PATHS: [(&'static str, Operation); 7] = [
        ("/api/checkIpOnGreylist", Operation::Check),
        ("/api/checkIpOnChallengeList", Operation::Check),
        ("/api/addIpToGreylist", Operation::Add),
        ("/api/addIpToChallengeList", Operation::Add),
        ("/api/deleteIpFromGreylist", Operation::Remove),
        ("/api/deleteIpToGreylist", Operation::Remove),
        ("/api/deleteIpFromChallengeList", Operation::Remove),
    ];

    /// The one table of paths: every route that answers on `path`, one per method.
    /// Bulk changes: many addresses a request.
    const BULK_PATHS: [(&'static str, Operation); 4] = [
        ("/api/addIpsToGreylist", Operation::Add),
        ("/api/addIpsToChallengeList", Operation::Add),
        ("/api/deleteIpsFromGreylist", Operation::Remove),
        ("/api/deleteIpsFromChallengeList", Operation::Remove),
    ];

    fn on_path(path: &str) -> Vec<Self> {
        if let Some((_, op)) = Self::LIST_PATHS.iter().find(|(p, _)| *p == path) {
            return vec![Self::List(*op)];
        }
        if let Some((_, op)) = Self::BULK_PATHS.iter().find(|(p, _)| *p == path) {
            return vec![Self::Bulk(*op)];
        }
        let list = |kind| vec![Self::EditList(kind), Self::ReplaceList(kind), Self::ExportList(kind)];
        match path {
            "/api/listGreylist" | "/api/listChallengeList" => vec![Self::ListEntries],
            "/api/greylistHistory" | "/api/challengeListHistory" => vec![Self::History],
            "/api/greylistFeed" | "/api/challengeListFeed" => vec![Self::Feed],
            "/api/feedTokens" => vec![Self::CreateFeedToken, Self::FeedTokens],
            "/api/quota" => vec![Self::Quota],
            "/openapi.json" => vec![Self::OpenApi],
            "/v2/authentication/login/license" => vec![Self::Login],
            "/admin/licenses" => vec![Self::CreateLicense, Self::Licenses],
            "/admin/global-list" => list(ListKind::Global),
            "/admin/allow-list" => list(ListKind::Allow),
            "/admin/status" => vec![Self::Status],
            _ => {
                let id = |prefix| path.strip_prefix(prefix).filter(|id: &&str| !id.is_empty() && !id.contains('/')).map(str::to_owned);
                if let Some(id) = id("/admin/licenses/") {
                    vec![Self::RevokeLicense(id)]
                } else if let Some(id) = id("/api/feedTokens/") {
                    vec![Self::RevokeFeedToken(id)]
                } else {
                    Vec::new()
                }
            }
        }
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
        match self {
            Self::RevokeLicense(_) | Self::RevokeFeedToken(_) => "DELETE",
            Self::OpenApi | Self::ExportList(_) | Self::Status | Self::Feed | Self::FeedTokens | Self::Quota | Self::Licenses => "GET",
            Self::ReplaceList(_) => "PUT",
            _ => "POST",
        }
    }

    /// The name the request's log line carries.
    pub fn name(&self) -> &'static str {
        match self {
            Self::List(op) => op.name(),
            Self::Bulk(Operation::Add) => "bulk_add",
            Self::Bulk(_) => "bulk_remove",
            Self::Feed => "feed",
            Self::CreateFeedToken => "create_feed_token",
            Self::FeedTokens => "list_feed_tokens",
            Self::RevokeFeedToken(_) => "revoke_feed_token",
            Self::ListEntries => "list",
            Self::History => "history",
            Self::Quota => "quota",
            Self::OpenApi => "openapi",
            Self::Login => "login",
            Self::CreateLicense => "create_license",
            Self::Licenses => "list_licenses",
            Self::RevokeLicense(_) => "revoke_license",
            Self::EditList(ListKind::Global) => "edit_global_list",
            Self::EditList(ListKind::Allow) => "edit_allow_list",
            Self::ReplaceList(ListKind::Global) => "replace_global_list",
            Self::ReplaceList(ListKind::Allow) => "replace_allow_list",
            Self::ExportList(ListKind::Global) => "export_global_list",
            Self::ExportList(ListKind::Allow) => "export_allow_list",
            Self::Status => "status",
        }
    }

    /// The license holder's routes, which answer in the mode `result_mode` selects;
    /// login and the operator API answer in their own JSON shape.
    pub fn is_holders(&self) -> bool {
        matches!(
            self,
            Self::List(_)
                | Self::Bulk(_)
                | Self::ListEntries
                | Self::History
                | Self::Quota
                | Self::Feed
                | Self::CreateFeedToken
                | Self::FeedTokens
                | Self::RevokeFeedToken(_)
        )
    }

    /// Routes that only `ADMIN_TOKEN` opens.
    pub fn is_operator(&self) -> bool {
        matches!(
            self,
            Self::CreateLicense | Self::Licenses | Self::RevokeLicense(_) | Self::EditList(_) | Self::ReplaceList(_) | Self::ExportList(_) | Self::Status
        )
    }

    /// Every path with its methods, as the OpenAPI document must list them (a
    /// path parameter written `{id}`), from the same table requests are routed by.
    #[cfg(test)]
    pub fn all() -> Vec<(String, &'static str)> {
        let mut paths: Vec<&str> = Self::LIST_PATHS.iter().chain(&Self::BULK_PATHS).map(|(path, _)| *path).collect();
        paths.extend([
            "/api/listGreylist",
            "/api/listChallengeList",
            "/api/greylistHistory",
            "/api/challengeListHistory",
            "/api/greylistFeed",
            "/api/challengeListFeed",
            "/api/feedTokens",
            "/api/feedTokens/{id}",
            "/api/quota",
            "/openapi.json",
            "/v2/authentication/login/license",
            "/admin/licenses",
            "/admin/licenses/{id}",
            "/admin/global-list",
            "/admin/allow-list",
            "/admin/status",
        ]);
        paths.into_iter().flat_map(|path| Self::on_path(path).into_iter().map(move |route| (path.to_owned(), route.method()))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_list_path_and_alias_routes_to_its_operation() {
        for (path, op) in Route::LIST_PATHS {
            assert_eq!(Route::resolve("POST", path), Ok(Route::List(op)));
        }
        let removals = Route::LIST_PATHS.iter().filter(|(_, op)| *op == Operation::Remove).count();
        assert_eq!(removals, 3);
    }

    #[test]
    fn bulk_paths_route_to_their_operation() {
        for (path, op) in Route::BULK_PATHS {
            assert_eq!(Route::resolve("POST", path), Ok(Route::Bulk(op)));
            assert!(Route::Bulk(op).is_holders());
        }
    }

    #[test]
    fn feed_and_feed_token_paths() {
        assert_eq!(Route::resolve("GET", "/api/greylistFeed"), Ok(Route::Feed));
        assert_eq!(Route::resolve("GET", "/api/challengeListFeed"), Ok(Route::Feed));
        assert_eq!(Route::resolve("POST", "/api/feedTokens"), Ok(Route::CreateFeedToken));
        assert_eq!(Route::resolve("GET", "/api/feedTokens"), Ok(Route::FeedTokens));
        assert_eq!(Route::resolve("DELETE", "/api/feedTokens/ft_1"), Ok(Route::RevokeFeedToken("ft_1".into())));
        assert_eq!(Route::resolve("DELETE", "/api/feedTokens/"), Err(Miss::NotFound));
        assert!(Route::Feed.is_holders() && !Route::Feed.is_operator());
    }

    #[test]
    fn operator_and_login_paths() {
        assert_eq!(Route::resolve("POST", "/v2/authentication/login/license"), Ok(Route::Login));
        assert_eq!(Route::resolve("POST", "/admin/licenses"), Ok(Route::CreateLicense));
        assert_eq!(Route::resolve("GET", "/admin/licenses"), Ok(Route::Licenses));
        assert!(Route::Licenses.is_operator() && !Route::Licenses.is_holders());
        assert_eq!(Route::resolve("GET", "/api/quota"), Ok(Route::Quota));
        assert!(Route::Quota.is_holders() && !Route::Quota.is_operator());
        assert_eq!(Route::resolve("DELETE", "/admin/licenses/lic_1"), Ok(Route::RevokeLicense("lic_1".into())));
        assert_eq!(Route::resolve("POST", "/admin/global-list"), Ok(Route::EditList(ListKind::Global)));
        assert_eq!(Route::resolve("PUT", "/admin/allow-list"), Ok(Route::ReplaceList(ListKind::Allow)));
        assert_eq!(Route::resolve("GET", "/admin/global-list"), Ok(Route::ExportList(ListKind::Global)));
        assert_eq!(Route::resolve("GET", "/admin/status"), Ok(Route::Status));
        assert!(!Route::Login.is_operator() && !Route::Login.is_holders());
        for route in [Route::EditList(ListKind::Allow), Route::ReplaceList(ListKind::Global), Route::ExportList(ListKind::Global), Route::Status] {
            assert!(route.is_operator() && !route.is_holders(), "{route:?}");
        }
        assert!(Route::RevokeLicense("x".into()).is_operator());
        assert!(!Route::List(Operation::Add).is_operator() && Route::List(Operation::Add).is_holders());
        assert!(Route::History.is_holders() && !Route::OpenApi.is_holders() && !Route::OpenApi.is_operator());
    }

    #[test]
    fn a_known_path_with_another_method_names_the_methods_it_takes() {
        let allowed = |method, path| match Route::resolve(method, path) {
            Err(Miss::MethodNotAllowed(routes)) => Miss::allowed(&routes),
            other => panic!("{method} {path}: {other:?}"),
        };
        assert_eq!(allowed("GET", "/api/addIpToGreylist"), "POST");
        assert_eq!(allowed("DELETE", "/admin/global-list"), "POST, PUT, GET");
        assert_eq!(allowed("POST", "/admin/licenses/lic_1"), "DELETE");
    }

    #[test]
    fn the_openapi_document_lists_exactly_the_routes_that_exist() {
        let doc: serde_json::Value = serde_json::from_str(include_str!(concat!(env!("OUT_DIR"), "/openapi.min.json"))).unwrap();
        assert_eq!(doc["openapi"], "3.1.0");
        let mut documented: Vec<(String, String)> = doc["paths"]
            .as_object()
            .unwrap()
            .iter()
            .flat_map(|(path, item)| item.as_object().unwrap().keys().map(move |method| (path.clone(), method.to_uppercase())))
            .collect();
        let mut served: Vec<(String, String)> = Route::all().into_iter().map(|(p, m)| (p, m.to_owned())).collect();
        documented.sort();
        served.sort();
        assert_eq!(documented, served);
    }

    #[test]
    fn near_misses_are_unknown() {
        for path in ["/", "/api", "/api/checkIpOnGreylist/", "/api/checkiponGreylist", "/API/checkIpOnGreylist", "/admin/licenses/", "/admin/licenses/a/b", "/api/deleteIpFromchallenge list", "/admin/status/"] {
            assert_eq!(Route::resolve("POST", path), Err(Miss::NotFound), "{path:?}");
        }
    }
}
