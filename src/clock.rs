//! The one place the Worker reads the clock; the rules in `domain` take time as an argument.

use worker::Date;

use crate::domain::time::UnixTime;

pub fn now_ms() -> u64 {
    Date::now().as_millis()
}

pub fn now() -> UnixTime {
    UnixTime(now_ms() / 1000)
}
