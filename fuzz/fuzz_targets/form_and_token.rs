//! The fuzzing target of `fuzz/checks/form_and_token.rs`, whose kept seeds the unit
//! tests replay (`tests/fuzz_seeds.rs`).

#![no_main]

#[path = "../checks/form_and_token.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
