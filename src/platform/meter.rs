//! What a request costs in the units Cloudflare bills: Durable Object requests,
//! KV reads, writes and lists, SQLite rows read and written. Counted where each
//! call is made (one line per call site), read by `make bench` through a hook of
//! the test build, which sums the Worker's counts and its objects'. The deployable
//! build counts nothing: `count` is empty there, and no answer carries a count.

/// A billable operation.
#[derive(Debug, Clone, Copy)]
pub enum Billable {
    DurableObjectRequest,
    KvRead,
    /// A put or a delete: KV bills both at the write price.
    KvWrite,
    KvList,
    RowsRead(usize),
    RowsWritten(usize),
}

#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub fn count(_operation: Billable) {}

/// `count`, for an operation whose size costs a call to find out: the deployable
/// build never makes that call.
#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub fn count_with(_operation: impl FnOnce() -> Billable) {}

#[cfg(feature = "test-hooks")]
pub fn count_with(operation: impl FnOnce() -> Billable) {
    count(operation());
}

#[cfg(feature = "test-hooks")]
pub use counting::{count, reading, Counts, Reading};

#[cfg(feature = "test-hooks")]
mod counting {
    use std::cell::{Cell, RefCell};

    use serde::{Deserialize, Serialize};

    use super::Billable;

    /// The counts since this isolate started.
    #[derive(Debug, Default, Clone, Copy, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Counts {
        pub durable_object_requests: u64,
        pub kv_reads: u64,
        pub kv_writes: u64,
        pub kv_lists: u64,
        pub rows_read: u64,
        pub rows_written: u64,
    }

    impl std::ops::AddAssign for Counts {
        fn add_assign(&mut self, other: Self) {
            self.durable_object_requests += other.durable_object_requests;
            self.kv_reads += other.kv_reads;
            self.kv_writes += other.kv_writes;
            self.kv_lists += other.kv_lists;
            self.rows_read += other.rows_read;
            self.rows_written += other.rows_written;
        }
    }

    /// One isolate's counts, named by a random id: the Worker and its objects may
    /// share an isolate (they do under `workerd` on one machine) or not, and the
    /// hook that sums them counts each isolate once.
    #[derive(Debug, Clone, Copy, Serialize, Deserialize)]
    pub struct Reading {
        pub isolate: u64,
        pub counts: Counts,
    }

    thread_local! {
        static COUNTS: RefCell<Counts> = RefCell::new(Counts::default());
        static ISOLATE: Cell<u64> = const { Cell::new(0) };
    }

    pub fn count(operation: Billable) {
        COUNTS.with_borrow_mut(|counts| match operation {
            Billable::DurableObjectRequest => counts.durable_object_requests += 1,
            Billable::KvRead => counts.kv_reads += 1,
            Billable::KvWrite => counts.kv_writes += 1,
            Billable::KvList => counts.kv_lists += 1,
            Billable::RowsRead(rows) => counts.rows_read += rows as u64,
            Billable::RowsWritten(rows) => counts.rows_written += rows as u64,
        });
    }

    pub fn reading() -> Result<Reading, getrandom::Error> {
        if ISOLATE.get() == 0 {
            let mut bytes = [0u8; 8];
            getrandom::fill(&mut bytes)?;
            ISOLATE.set(u64::from_le_bytes(bytes) | 1);
        }
        Ok(Reading {
            isolate: ISOLATE.get(),
            counts: COUNTS.with_borrow(|counts| *counts),
        })
    }
}
