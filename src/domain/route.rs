//! Which endpoint a path names. Pure, so the table is tested natively and
//! answers 404 and 405 without touching storage.

use super::holder::Operation;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    List(Operation),
    ListEntries,
    History,
    OpenApi,
    Login,
    CreateLicense,
    RevokeLicense(String),
    GlobalList,
    AllowList,
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

    pub fn of_path(path: &str) -> Option<Self> {
        if let Some((_, op)) = Self::LIST_PATHS.iter().find(|(p, _)| *p == path) {
            return Some(Self::List(*op));
        }
        match path {
            "/api/listGreylist" | "/api/listChallengeList" => Some(Self::ListEntries),
            "/api/greylistHistory" | "/api/challengeListHistory" => Some(Self::History),
            "/openapi.json" => Some(Self::OpenApi),
            "/v2/authentication/login/license" => Some(Self::Login),
            "/admin/licenses" => Some(Self::CreateLicense),
            "/admin/global-list" => Some(Self::GlobalList),
            "/admin/allow-list" => Some(Self::AllowList),
            _ => path
                .strip_prefix("/admin/licenses/")
                .filter(|id| !id.is_empty() && !id.contains('/'))
                .map(|id| Self::RevokeLicense(id.to_owned())),
        }
    }

    /// The one method each route answers to.
    pub fn method(&self) -> &'static str {
        match self {
            Self::RevokeLicense(_) => "DELETE",
            Self::OpenApi => "GET",
            _ => "POST",
        }
    }

    /// The name the request's log line carries.
    pub fn name(&self) -> &'static str {
        match self {
            Self::List(op) => op.name(),
            Self::ListEntries => "list",
            Self::History => "history",
            Self::OpenApi => "openapi",
            Self::Login => "login",
            Self::CreateLicense => "create_license",
            Self::RevokeLicense(_) => "revoke_license",
            Self::GlobalList => "edit_global_list",
            Self::AllowList => "edit_allow_list",
        }
    }

    /// The license holder's routes, which answer in the mode `result_mode` selects;
    /// login and the operator API answer in their own JSON shape.
    pub fn is_holders(&self) -> bool {
        matches!(self, Self::List(_) | Self::ListEntries | Self::History)
    }

    /// Routes that only `ADMIN_TOKEN` opens.
    pub fn is_operator(&self) -> bool {
        matches!(self, Self::CreateLicense | Self::RevokeLicense(_) | Self::GlobalList | Self::AllowList)
    }

    /// Every path with its method, as the OpenAPI document must list them
    /// (a path parameter written `{id}`).
    #[cfg(test)]
    pub fn all() -> Vec<(&'static str, &'static str)> {
        let mut routes: Vec<(&str, &str)> = Self::LIST_PATHS.iter().map(|(path, _)| (*path, "POST")).collect();
        routes.extend([
            ("/api/listGreylist", "POST"),
            ("/api/listChallengeList", "POST"),
            ("/api/greylistHistory", "POST"),
            ("/api/challengeListHistory", "POST"),
            ("/openapi.json", "GET"),
            ("/v2/authentication/login/license", "POST"),
            ("/admin/licenses", "POST"),
            ("/admin/licenses/{id}", "DELETE"),
            ("/admin/global-list", "POST"),
            ("/admin/allow-list", "POST"),
        ]);
        routes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_list_path_and_alias_routes_to_its_operation() {
        for (path, op) in Route::LIST_PATHS {
            assert_eq!(Route::of_path(path), Some(Route::List(op)));
        }
        let removals = Route::LIST_PATHS.iter().filter(|(_, op)| *op == Operation::Remove).count();
        assert_eq!(removals, 3);
    }

    #[test]
    fn operator_and_login_paths() {
        assert_eq!(Route::of_path("/v2/authentication/login/license"), Some(Route::Login));
        assert_eq!(Route::of_path("/admin/licenses"), Some(Route::CreateLicense));
        assert_eq!(Route::of_path("/admin/licenses/lic_1"), Some(Route::RevokeLicense("lic_1".into())));
        assert_eq!(Route::of_path("/admin/global-list"), Some(Route::GlobalList));
        assert_eq!(Route::of_path("/admin/allow-list"), Some(Route::AllowList));
        assert_eq!(Route::RevokeLicense("x".into()).method(), "DELETE");
        assert_eq!(Route::Login.method(), "POST");
        assert!(!Route::Login.is_operator() && !Route::Login.is_holders());
        assert!(Route::GlobalList.is_operator() && Route::RevokeLicense("x".into()).is_operator());
        assert!(!Route::List(Operation::Add).is_operator() && Route::List(Operation::Add).is_holders());
        assert!(Route::History.is_holders() && !Route::OpenApi.is_holders() && !Route::OpenApi.is_operator());
    }

    #[test]
    fn the_route_table_and_the_path_matcher_agree() {
        for (path, method) in Route::all() {
            let concrete = path.replace("{id}", "lic_0123456789abcdef01234567");
            let route = Route::of_path(&concrete).unwrap_or_else(|| panic!("{path} does not route"));
            assert_eq!(route.method(), method, "{path}");
        }
    }

    #[test]
    fn the_openapi_document_lists_exactly_the_routes_that_exist() {
        let doc: serde_json::Value = serde_json::from_str(include_str!("../openapi.json")).unwrap();
        assert_eq!(doc["openapi"], "3.1.0");
        let mut documented: Vec<(String, String)> = doc["paths"]
            .as_object()
            .unwrap()
            .iter()
            .flat_map(|(path, item)| item.as_object().unwrap().keys().map(move |method| (path.clone(), method.to_uppercase())))
            .collect();
        let mut served: Vec<(String, String)> = Route::all().into_iter().map(|(p, m)| (p.to_owned(), m.to_owned())).collect();
        documented.sort();
        served.sort();
        assert_eq!(documented, served);
    }

    #[test]
    fn near_misses_are_unknown() {
        for path in ["/", "/api", "/api/checkIpOnGreylist/", "/api/checkiponGreylist", "/API/checkIpOnGreylist", "/admin/licenses/", "/admin/licenses/a/b", "/api/deleteIpFromchallenge list"] {
            assert_eq!(Route::of_path(path), None, "{path:?}");
        }
    }
}
