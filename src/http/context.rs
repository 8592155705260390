//! What every handler of a request shares: the bindings, the runtime's context,
//! the request's one reading of the clock, the settings read once, the log line
//! and the id its path names. Handlers take it whole instead of loose arguments.

use std::rc::Rc;

use worker::{Context, Env};

use super::log::RequestLog;
use crate::domain::settings::Settings;
use crate::domain::time::Millis;

pub struct RequestContext {
    pub env: Env,
    pub ctx: Context,
    /// Every rule and cache the request meets sees this moment.
    pub now: Millis,
    pub settings: Rc<Settings>,
    pub log: RequestLog,
    /// The id a path such as `/admin/licenses/{id}` names; empty on other paths.
    pub id: String,
}
