//! The one place the Worker reads the clock; the rules in `domain` take time as an argument.

use worker::Date;

use crate::domain::time::Millis;

pub fn now() -> Millis {
    Millis(Date::now().as_millis())
}
