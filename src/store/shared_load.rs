//! A value that many requests of one isolate may need at once, loaded by one of
//! them while the others wait for it: at a new version of the global list, a
//! hundred checks and feeds arriving together read each shard from KV once and
//! hold one copy of it, not a hundred.

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::task::{Poll, Waker};

use super::StoreError;

enum State<T> {
    Empty,
    /// One request is loading it; these wait.
    Loading(Vec<Waker>),
    Ready(T),
}

pub struct SharedLoad<T: Clone> {
    state: RefCell<State<T>>,
}

impl<T: Clone> Default for SharedLoad<T> {
    fn default() -> Self {
        Self {
            state: RefCell::new(State::Empty),
        }
    }
}

/// The loading request's claim: dropped before it finished (its request ended, or
/// the load failed), it gives the slot back and wakes the waiters, so that one of
/// them loads in its place; a failure is never remembered.
struct Claim<'a, T: Clone> {
    slot: &'a SharedLoad<T>,
}

impl<T: Clone> Drop for Claim<'_, T> {
    fn drop(&mut self) {
        let mut state = self.slot.state.borrow_mut();
        if let State::Loading(waiters) = std::mem::replace(&mut *state, State::Empty) {
            waiters.into_iter().for_each(Waker::wake);
        }
    }
}

impl<T: Clone> SharedLoad<T> {
    /// The value if it is loaded.
    pub fn get(&self) -> Option<T> {
        match &*self.state.borrow() {
            State::Ready(value) => Some(value.clone()),
            _ => None,
        }
    }

    /// The value, loaded by `load` unless it is loaded or being loaded already.
    pub async fn get_or_load<F, Fut>(&self, load: F) -> Result<T, StoreError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, StoreError>>,
    {
        let claim = poll_fn(|context| {
            let mut state = self.state.borrow_mut();
            match &mut *state {
                State::Ready(value) => Poll::Ready(Err(value.clone())),
                State::Loading(waiters) => {
                    if !waiters.iter().any(|w| w.will_wake(context.waker())) {
                        waiters.push(context.waker().clone());
                    }
                    Poll::Pending
                }
                State::Empty => {
                    *state = State::Loading(Vec::new());
                    Poll::Ready(Ok(Claim { slot: self }))
                }
            }
        })
        .await;
        let claim = match claim {
            Ok(claim) => claim,
            Err(value) => return Ok(value),
        };
        let value = load().await?;
        let waiters =
            match std::mem::replace(&mut *self.state.borrow_mut(), State::Ready(value.clone())) {
                State::Loading(waiters) => waiters,
                _ => Vec::new(),
            };
        std::mem::forget(claim);
        waiters.into_iter().for_each(Waker::wake);
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::pin::pin;
    use std::rc::Rc;
    use std::task::{Context, Poll, Waker};

    use super::*;

    /// A load that waits until the test opens its gate, counting how often it ran.
    async fn gated(
        gate: Rc<Cell<bool>>,
        runs: Rc<Cell<u32>>,
        fails: bool,
    ) -> Result<u32, StoreError> {
        runs.set(runs.get() + 1);
        poll_fn(|context| {
            if gate.get() {
                Poll::Ready(())
            } else {
                context.waker().wake_by_ref();
                Poll::Pending
            }
        })
        .await;
        if fails {
            Err(StoreError::Corrupt("the load failed".into()))
        } else {
            Ok(7)
        }
    }

    fn poll<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
        future.poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn requests_waiting_together_share_one_load() {
        let slot = SharedLoad::<u32>::default();
        let (gate, runs) = (Rc::new(Cell::new(false)), Rc::new(Cell::new(0)));
        let mut first = pin!(slot.get_or_load(|| gated(gate.clone(), runs.clone(), false)));
        let mut second = pin!(slot.get_or_load(|| gated(gate.clone(), runs.clone(), false)));
        assert!(poll(first.as_mut()).is_pending());
        assert!(poll(second.as_mut()).is_pending());
        gate.set(true);
        assert!(
            matches!(poll(second.as_mut()), Poll::Pending),
            "it waits for the first"
        );
        assert!(matches!(poll(first.as_mut()), Poll::Ready(Ok(7))));
        assert!(matches!(poll(second.as_mut()), Poll::Ready(Ok(7))));
        assert_eq!(runs.get(), 1, "one load for both");
        assert_eq!(slot.get(), Some(7));
    }

    #[test]
    fn a_failed_or_abandoned_load_leaves_the_next_request_to_load() {
        let slot = SharedLoad::<u32>::default();
        let (gate, runs) = (Rc::new(Cell::new(false)), Rc::new(Cell::new(0)));
        {
            let mut abandoned = pin!(slot.get_or_load(|| gated(gate.clone(), runs.clone(), false)));
            assert!(poll(abandoned.as_mut()).is_pending());
        }
        let mut failing = pin!(slot.get_or_load(|| gated(gate.clone(), runs.clone(), true)));
        let mut waiting = pin!(slot.get_or_load(|| gated(gate.clone(), runs.clone(), false)));
        assert!(poll(failing.as_mut()).is_pending());
        assert!(poll(waiting.as_mut()).is_pending());
        gate.set(true);
        assert!(matches!(poll(failing.as_mut()), Poll::Ready(Err(_))));
        assert!(
            matches!(poll(waiting.as_mut()), Poll::Ready(Ok(7))),
            "the waiter loads in the failed load's place"
        );
        assert_eq!(runs.get(), 3);
    }
}
