//! A line for `wrangler tail` from below the HTTP layer, which logs its own lines
//! (`http::log`). Natively, where the runtime's console does not exist, the line
//! goes to standard error, so that the stores' unit tests can take the paths that
//! log.

/// Logs an error line.
pub fn error(line: &str) {
    #[cfg(target_arch = "wasm32")]
    worker::console_error!("{line}");
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("{line}");
}
