//! The fuzzing target of `fuzz/checks/import.rs`, whose kept seeds the unit
//! tests replay (`tests/fuzz_seeds.rs`).

#![no_main]

#[path = "../checks/import.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
