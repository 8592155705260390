//! Settings read from the Worker's environment (`[vars]` and secrets). They are
//! fixed for the life of an isolate, so each is read from the environment once
//! and remembered: every request needs several, and each read crosses into JavaScript.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use worker::Env;

use crate::http::error::ApiError;

thread_local! {
    static SETTINGS: RefCell<HashMap<&'static str, Option<Rc<str>>>> = RefCell::new(HashMap::new());
}

/// How long edge and isolate caches may keep global-list, allow-list and license
/// reads. 60 in production; 0 under `make dev` and the tests, so changes show at once.
pub fn cache_seconds(env: &Env) -> u64 {
    number(env, "CACHE_SECONDS").unwrap_or(60)
}

pub fn token_lifetime_seconds(env: &Env) -> u64 {
    number(env, "TOKEN_LIFETIME_SECONDS").unwrap_or(3600)
}

/// A secret that must be set; its absence is the operator's fault, reported as a 500 and logged.
pub fn secret(env: &Env, name: &'static str) -> Result<Rc<str>, ApiError> {
    var(env, name).filter(|s| !s.is_empty()).ok_or_else(|| ApiError::Internal(format!("the secret {name} is not set")))
}

/// A plain variable or a secret: both reach the Worker as strings.
pub fn var(env: &Env, name: &'static str) -> Option<Rc<str>> {
    if let Some(known) = SETTINGS.with_borrow(|settings| settings.get(name).cloned()) {
        return known;
    }
    let value: Option<Rc<str>> = env.var(name).ok().map(|v| v.to_string().into());
    SETTINGS.with_borrow_mut(|settings| settings.insert(name, value.clone()));
    value
}

fn number(env: &Env, name: &'static str) -> Option<u64> {
    var(env, name)?.trim().parse().ok()
}
