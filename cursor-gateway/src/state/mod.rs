//! What the gateway keeps under `--state`, and how: private files replaced atomically
//! ([`files`]), the gateway's secret ([`secret`]), the conversation index ([`index`]) and stored
//! responses ([`responses`]). Resume handles are `cursor-agent`'s (`handles/`).
//!
//! Nothing here runs on the async workers: callers use the blocking pool.

pub(crate) mod files;
pub(crate) mod index;
pub(crate) mod responses;
pub(crate) mod secret;
