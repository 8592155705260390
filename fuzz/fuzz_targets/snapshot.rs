//! The fuzzing target of `fuzz/checks/snapshot.rs`, whose kept seeds the unit
//! tests replay (`tests/fuzz_seeds.rs`).

#![no_main]

#[path = "../checks/snapshot.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
