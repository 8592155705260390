//! A value that many requests of one isolate may need at once, loaded by one of
//! them while the others wait for it: at a new version of the global list, a
//! hundred checks and feeds arriving together read each shard from KV once and
//! hold one copy of it, not a hundred.

use std::cell::RefCell;
use std::future::Future;

use crate::store::StoreError;

enum State<T> {
    Empty,
    /// One request is loading it.
    Loading,
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
/// the load failed), it gives the slot back, so that a waiter loads in its place;
/// a failure is never remembered.
struct Claim<'a, T: Clone> {
    slot: &'a SharedLoad<T>,
}

impl<T: Clone> Drop for Claim<'_, T> {
    fn drop(&mut self) {
        *self.slot.state.borrow_mut() = State::Empty;
    }
}

impl<T: Clone> SharedLoad<T> {
    /// A slot that holds `value` from the start.
    pub fn ready(value: T) -> Self {
        Self {
            state: RefCell::new(State::Ready(value)),
        }
    }

    /// The value if it is loaded.
    pub fn get(&self) -> Option<T> {
        match &*self.state.borrow() {
            State::Ready(value) => Some(value.clone()),
            _ => None,
        }
    }

    /// The value, loaded by `load` unless it is loaded or being loaded already.
    /// A request that finds another loading it looks again after each `pause`,
    /// never waiting to be woken by the loader: the Workers runtime cancels, as
    /// hung, a request that waits on nothing of its own, and would run the woken
    /// request's code on behalf of the request that woke it.
    pub async fn get_or_load<F, Fut, P, Paused>(&self, load: F, pause: P) -> Result<T, StoreError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, StoreError>>,
        P: Fn() -> Paused,
        Paused: Future<Output = ()>,
    {
        let claim = loop {
            {
                let mut state = self.state.borrow_mut();
                match &*state {
                    State::Ready(value) => return Ok(value.clone()),
                    State::Loading => {}
                    State::Empty => {
                        *state = State::Loading;
                        break Claim { slot: self };
                    }
                }
            }
            pause().await;
        };
        let value = load().await?;
        *self.state.borrow_mut() = State::Ready(value.clone());
        std::mem::forget(claim);
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
    use crate::store::kv::fake::yield_once;

    /// A load that waits until the test opens its gate, counting how often it ran.
    async fn gated(
        gate: Rc<Cell<bool>>,
        runs: Rc<Cell<u32>>,
        fails: bool,
    ) -> Result<u32, StoreError> {
        runs.set(runs.get() + 1);
        std::future::poll_fn(|context| {
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
        let mut first =
            pin!(slot.get_or_load(|| gated(gate.clone(), runs.clone(), false), yield_once));
        let mut second =
            pin!(slot.get_or_load(|| gated(gate.clone(), runs.clone(), false), yield_once));
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
            let mut abandoned =
                pin!(slot.get_or_load(|| gated(gate.clone(), runs.clone(), false), yield_once));
            assert!(poll(abandoned.as_mut()).is_pending());
        }
        let mut failing =
            pin!(slot.get_or_load(|| gated(gate.clone(), runs.clone(), true), yield_once));
        let mut waiting =
            pin!(slot.get_or_load(|| gated(gate.clone(), runs.clone(), false), yield_once));
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

    /// Counts the times it was woken.
    struct Wakes(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Wakes {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    fn a_waiter_looks_again_after_pauses_of_its_own_and_is_never_woken_by_the_loader() {
        let slot = SharedLoad::<u32>::default();
        let (gate, runs, pauses) = (
            Rc::new(Cell::new(false)),
            Rc::new(Cell::new(0)),
            Cell::new(0),
        );
        // A pause as a timer is: pending once, woken by nothing the test sees.
        let pause = || {
            pauses.set(pauses.get() + 1);
            let mut waited = false;
            std::future::poll_fn(move |_| {
                if std::mem::replace(&mut waited, true) {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
        };
        let mut loader = pin!(slot.get_or_load(|| gated(gate.clone(), runs.clone(), false), pause));
        let mut waiter = pin!(slot.get_or_load(|| gated(gate.clone(), runs.clone(), false), pause));
        let wakes = std::sync::Arc::new(Wakes(Default::default()));
        let waiter_waker = Waker::from(wakes.clone());
        assert!(poll(loader.as_mut()).is_pending());
        assert!(waiter
            .as_mut()
            .poll(&mut Context::from_waker(&waiter_waker))
            .is_pending());
        gate.set(true);
        assert!(matches!(poll(loader.as_mut()), Poll::Ready(Ok(7))));
        assert_eq!(
            wakes.0.load(std::sync::atomic::Ordering::SeqCst),
            0,
            "the loader woke the waiter: the runtime would run it in the loader's request"
        );
        assert!(matches!(
            waiter
                .as_mut()
                .poll(&mut Context::from_waker(&waiter_waker)),
            Poll::Ready(Ok(7))
        ));
        assert_eq!((runs.get(), pauses.get()), (1, 1));
    }
}
