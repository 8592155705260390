//! A holder's own Cloudflare edge: the connection they give (`connection`), the
//! items of the Cloudflare IP list that stands for what they challenge, the most
//! relevant first when the list cannot hold all (`item`), the difference pushed
//! to it and when (`push`), and the token kept sealed (`seal`).

pub mod connection;
pub mod item;
pub mod link;
pub mod push;
pub mod seal;
