//! Settings read from the Worker's environment (`[vars]` and secrets). They are
//! fixed for the life of an isolate, so the Worker's are read and checked once
//! and remembered: every request needs several, and each read crosses into
//! JavaScript. An object reads its own part when it starts.

use std::cell::OnceCell;
use std::rc::Rc;

use worker::Env;

use crate::domain::settings::{ObjectSettings, Settings};

thread_local! {
    static SETTINGS: OnceCell<Result<Rc<Settings>, BadSettings>> = const { OnceCell::new() };
}

/// What is wrong with the configuration, in words that name the setting.
#[derive(Debug, Clone)]
pub struct BadSettings(pub String);

/// The checked settings. A missing or unsafe one is the operator's fault: every
/// request answers a 500 whose log line names it, until the configuration is fixed.
pub fn settings(env: &Env) -> Result<Rc<Settings>, BadSettings> {
    SETTINGS.with(|settings| {
        settings
            .get_or_init(|| Settings::parse(var(env)).map(Rc::new).map_err(BadSettings))
            .clone()
    })
}

/// What the Durable Objects run under, read alone: they need no secret, so an
/// object starts whatever the secrets are. Each object reads it once, when it
/// starts, and keeps it for its life.
pub fn object_settings(env: &Env) -> Result<ObjectSettings, BadSettings> {
    ObjectSettings::parse(&var(env)).map_err(BadSettings)
}

/// A setting by name: a plain variable and a secret both reach the Worker as strings.
fn var(env: &Env) -> impl Fn(&'static str) -> Option<String> + '_ {
    |name| env.var(name).ok().map(|v| v.to_string())
}
