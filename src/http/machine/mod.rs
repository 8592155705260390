//! CrowdSec's Local API as its engines call it ("machines", or "watchers"):
//! the login that turns a machine's name and password into a machine token
//! (`watchers`), the alerts the engine posts with it (`alerts`), and its
//! heartbeat beside the Local API's routes this service does not offer
//! (`heartbeat`).

pub mod alerts;
pub mod heartbeat;
pub mod watchers;
