//! Settings read from the Worker's environment (`[vars]` and secrets).

use worker::Env;

use crate::http::error::ApiError;

/// How long edge and isolate caches may keep global-list, allow-list and license
/// reads. 60 in production; 0 under `make dev` and the tests, so changes show at once.
pub fn cache_seconds(env: &Env) -> u64 {
    number(env, "CACHE_SECONDS").unwrap_or(60)
}

pub fn token_lifetime_seconds(env: &Env) -> u64 {
    number(env, "TOKEN_LIFETIME_SECONDS").unwrap_or(3600)
}

/// A secret that must be set; its absence is the operator's fault, reported as a 500 and logged.
pub fn secret(env: &Env, name: &str) -> Result<String, ApiError> {
    env.secret(name)
        .map(|s| s.to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ApiError::Internal(format!("the secret {name} is not set")))
}

pub fn var(env: &Env, name: &str) -> Option<String> {
    env.var(name).ok().map(|v| v.to_string())
}

fn number(env: &Env, name: &str) -> Option<u64> {
    var(env, name)?.trim().parse().ok()
}
