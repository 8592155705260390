//! What firewalls read: the feed and its tokens (`handlers`), what a feed asks for
//! (`query`), its items read and merged (`items`), its body written a part at a
//! time (`body`), the files appliances load (`appliance`), and CrowdSec's Local
//! API as its bouncers read it (`decisions`).

pub mod appliance;
pub mod body;
pub mod decisions;
pub mod handlers;
pub mod items;
pub mod query;
