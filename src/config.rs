//! Settings read from the Worker's environment (`[vars]` and secrets). They are
//! fixed for the life of an isolate, so each is read from the environment once
//! and remembered: every request needs several, and each read crosses into JavaScript.

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use worker::Env;

use crate::domain::settings::Settings;

thread_local! {
    static VARS: RefCell<HashMap<&'static str, Option<Rc<str>>>> = RefCell::new(HashMap::new());
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
            .get_or_init(|| {
                Settings::parse(|name| var(env, name).map(|v| v.to_string()))
                    .map(Rc::new)
                    .map_err(BadSettings)
            })
            .clone()
    })
}

/// A plain variable or a secret: both reach the Worker as strings.
fn var(env: &Env, name: &'static str) -> Option<Rc<str>> {
    if let Some(known) = VARS.with_borrow(|vars| vars.get(name).cloned()) {
        return known;
    }
    let value: Option<Rc<str>> = env.var(name).ok().map(|v| v.to_string().into());
    VARS.with_borrow_mut(|vars| vars.insert(name, value.clone()));
    value
}
