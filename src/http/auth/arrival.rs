//! What a request is counted for where it arrives, before anything of it is
//! read: at the edge, whether the edge answers its route or forwards it to the
//! management Worker. The management Worker has no rate-limiting binding
//! (`wrangler dev` 4.86, the newest that runs on Node 20, strips them from
//! every Worker it serves but the first), so a route it answers is counted
//! here, once: by the edge before it forwards the request, or by the route's
//! handler in a build with the edge's bindings that answers it (the one Worker
//! the tests run).

use worker::Request;

use super::caller;
use crate::http::context::RequestContext;
use crate::http::error::ApiError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// An operator call without `ADMIN_TOKEN`, per client (`OPERATOR_LIMITER`).
    Operator,
    /// A login, a license's or a machine's, per client (`LOGIN_LIMITER`).
    Login,
    /// A usage report: its client (`CLIENT_LIMITER`), then the credential its
    /// headers name, in the budget its pulls, heartbeats and alerts share.
    Report,
    /// A holder's lookup of what the network says of an address: the holder
    /// proved, then counted per license.
    Lookup,
}

impl Arrival {
    /// Counts the request where it arrived; nothing in a management Worker
    /// built without the edge, whose requests the edge counted.
    pub async fn count(self, cx: &RequestContext, req: &Request) -> Result<(), ApiError> {
        if !cfg!(feature = "edge") {
            return Ok(());
        }
        match self {
            Self::Operator => caller::count_operator_client(cx, req).await,
            Self::Login => caller::count_client_login(&cx.env, req).await,
            Self::Report => caller::count_report(cx, req).await,
            Self::Lookup => {
                let holder = caller::holder(cx, req).await?;
                caller::count_network_lookup(&cx.env, &holder.license).await
            }
        }
    }

    /// Whether the route answers in the holder's mode (`result_mode`).
    pub fn is_holders(self) -> bool {
        self == Self::Lookup
    }
}
