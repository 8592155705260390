//! Who is calling, proved once per request before the handler runs: a holder's
//! access token, a feed token, a bouncer's key, an engine's machine token or
//! the operator (`caller`), read from the headers' credentials (`credentials`),
//! an operator key checked against the keys published in KV, its refusals
//! counted (`operator_key`); the login that turns a license key into an
//! access token (`login`); and what a request is counted for where it
//! arrives, before it is read or forwarded (`arrival`), a login per client
//! with machines' logins alike.

pub mod arrival;
pub mod caller;
pub mod credentials;
pub mod login;
pub mod operator_key;
