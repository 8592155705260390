//! How every object starts, the same way: `new` keeps the object's handles and
//! does no work; its first call or alarm runs the object's `start` (the schema
//! brought up to date, and whatever the object keeps in memory loaded) once per
//! instance. A start that fails fails that call, as a logged 500, and the next call
//! starts again: neither a storage fault nor a bad setting panics an object. What a
//! start made is kept in a `Started`; the operator lists' object keeps its lists' indexes in
//! a cell of its own instead, since every change it makes updates them.

use std::cell::RefCell;
use std::future::Future;

use worker::Result;

/// What an object's start made, once it has run.
pub struct Started<T>(RefCell<Option<T>>);

impl<T> Default for Started<T> {
    fn default() -> Self {
        Self(RefCell::new(None))
    }
}

impl<T: Clone> Started<T> {
    /// What the start made, running `start` first if this instance has not yet.
    /// Two calls that arrive before the first start ends both run it: a start is
    /// made of statements that may run twice (migrations, takeovers that check).
    pub async fn get_or_start<F: Future<Output = Result<T>>>(
        &self,
        start: impl FnOnce() -> F,
    ) -> Result<T> {
        if let Some(made) = self.0.borrow().as_ref() {
            return Ok(made.clone());
        }
        let made = start().await?;
        self.0.replace(Some(made.clone()));
        Ok(made)
    }
}
