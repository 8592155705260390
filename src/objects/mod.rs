//! The six Durable Objects (a holder's lists, the operator's lists, the
//! operator's directory, the revocations still to tell, the report shards, the
//! turns of a Cloudflare account's bulk operations), each
//! thin: it receives a
//! call of its protocol and dispatches it onto the domain's rules and the store's
//! adapters. Each has a client, the typed way the Worker calls it, and each starts
//! the same way (`startup`).

pub mod cloudflare_account;
pub mod directory;
pub mod holder;
pub mod operator_lists;
pub mod protocol;
pub mod report_shard;
pub mod revocations;
pub mod startup;

/// Makes each call type a variant of its protocol's call enum, with its typed
/// answer: adding a call is one line here, one type, and one handler. A call
/// travels by its position, and an object refuses a call whose sources shaped
/// the calls otherwise (`protocol`), so the order is free.
macro_rules! calls {
    ($protocol:ty => $call:ident { $($(#[$meta:meta])* $variant:ident => $answer:ty),* $(,)? }
     $(streamed { $($streamed:ident => ($head:ty, $item:ty)),* $(,)? })?) => {
        #[derive(Debug, serde::Serialize, serde::Deserialize)]
        pub enum $call {
            $($(#[$meta])* $variant($variant),)*
            $($($streamed($streamed),)*)?
        }
        $(
            $(#[$meta])*
            impl From<$variant> for $call {
                fn from(call: $variant) -> Self {
                    Self::$variant(call)
                }
            }
            $(#[$meta])*
            impl $crate::objects::protocol::Ask<$protocol> for $variant {
                type Answer = $answer;
            }
        )*
        $($(
            impl From<$streamed> for $call {
                fn from(call: $streamed) -> Self {
                    Self::$streamed(call)
                }
            }
            impl $crate::objects::protocol::AskStream<$protocol> for $streamed {
                type Head = $head;
                type Item = $item;
            }
        )*)?
    };
}

pub(crate) use calls;
