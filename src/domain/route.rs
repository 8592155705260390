//! Which endpoint a path names. Pure, so the table is tested natively and
//! answers 404 and 405 without touching storage.

use super::holder::Operation;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    List(Operation),
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
            _ => "POST",
        }
    }

    /// The name the request's log line carries.
    pub fn name(&self) -> &'static str {
        match self {
            Self::List(op) => op.name(),
            Self::Login => "login",
            Self::CreateLicense => "create_license",
            Self::RevokeLicense(_) => "revoke_license",
            Self::GlobalList => "edit_global_list",
            Self::AllowList => "edit_allow_list",
        }
    }

    /// Login and the operator API answer in their own JSON shape, whatever `result_mode` says.
    pub fn is_admin_or_login(&self) -> bool {
        !matches!(self, Self::List(_))
    }

    /// Routes that only `ADMIN_TOKEN` opens.
    pub fn is_operator(&self) -> bool {
        !matches!(self, Self::List(_) | Self::Login)
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
        assert!(!Route::Login.is_operator() && Route::Login.is_admin_or_login());
        assert!(Route::GlobalList.is_operator() && Route::RevokeLicense("x".into()).is_operator());
        assert!(!Route::List(Operation::Add).is_operator() && !Route::List(Operation::Add).is_admin_or_login());
    }

    #[test]
    fn near_misses_are_unknown() {
        for path in ["/", "/api", "/api/checkIpOnGreylist/", "/api/checkiponGreylist", "/API/checkIpOnGreylist", "/admin/licenses/", "/admin/licenses/a/b", "/api/deleteIpFromchallenge list"] {
            assert_eq!(Route::of_path(path), None, "{path:?}");
        }
    }
}
