//! How much linear memory this isolate's WebAssembly instance holds: what the
//! Rust side of the Worker, or of a Durable Object, ever held at once. It only
//! grows, so it is the high-water mark of the Rust heap, without the collector's
//! lag that the process's resident memory carries. The operator's status shows
//! it (the lists' snapshots are most of it, against an isolate's 128 MB), and
//! the tests that show a request's memory bounded by a page read it.

use worker::js_sys::{ArrayBuffer, WebAssembly};
use worker::wasm_bindgen::JsCast;

pub fn wasm_bytes() -> u64 {
    worker::wasm_bindgen::memory()
        .dyn_into::<WebAssembly::Memory>()
        .ok()
        .and_then(|memory| memory.buffer().dyn_into::<ArrayBuffer>().ok())
        .map_or(0, |buffer| u64::from(buffer.byte_length()))
}
