//! One structured line per request, for `wrangler tail`. It names the operation,
//! the outcome and the license; it never holds a key, token, secret or body.

use std::cell::RefCell;

use serde::Serialize;
use worker::{console_error, console_log};

use crate::domain::access::license::LicenseId;
use crate::domain::settings;
use crate::domain::time::Millis;
use crate::platform::clock;

pub struct RequestLog {
    pub operation: &'static str,
    /// Set once the request names a license (its token, or the operator's path).
    license: RefCell<Option<LicenseId>>,
    /// What the handler tells of an answer that succeeded, as its `detail`.
    note: RefCell<Option<String>>,
    started: Millis,
    /// All until the settings are read: a request they refuse is logged.
    level: settings::RequestLog,
}

impl RequestLog {
    pub fn start(operation: &'static str) -> Self {
        Self {
            operation,
            license: RefCell::new(None),
            note: RefCell::new(None),
            started: clock::now(),
            level: settings::RequestLog::All,
        }
    }

    /// The line as the settings' `REQUEST_LOG` has it.
    pub fn at(self, level: settings::RequestLog) -> Self {
        Self { level, ..self }
    }

    /// The license the line names from here on.
    pub fn names(&self, license: &LicenseId) {
        self.license.replace(Some(license.clone()));
    }

    /// What the line's `detail` says when the request succeeds.
    pub fn notes(&self, note: String) {
        self.note.replace(Some(note));
    }

    pub fn finish(&self, status: u16, outcome: &str, detail: Option<&str>) {
        if !self.level.writes(status) {
            return;
        }
        let license = self.license.borrow();
        let note = self.note.borrow();
        let detail = detail.or(note.as_deref());
        let line = Line {
            operation: self.operation,
            outcome,
            status,
            license: license.as_ref().map(LicenseId::as_str),
            ms: clock::now().since(self.started),
            detail,
        };
        let line = serde_json::to_string(&line).unwrap_or_default();
        if status >= 500 {
            console_error!("{line}");
        } else {
            console_log!("{line}");
        }
    }
}

#[derive(Serialize)]
struct Line<'a> {
    operation: &'a str,
    outcome: &'a str,
    status: u16,
    license: Option<&'a str>,
    ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<&'a str>,
}
