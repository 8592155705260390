//! The fuzzing target of `fuzz/checks/feed_query.rs`, whose kept seeds the unit
//! tests replay (`tests/fuzz_seeds.rs`).

#![no_main]

#[path = "../checks/feed_query.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
