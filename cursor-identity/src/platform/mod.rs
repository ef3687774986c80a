//! The operating systems with an identity adapter, and the dispatch to them.

mod darwin;
mod freebsd;
mod linux;
mod windows;

use crate::os::Platform;
use crate::{HostSource, IdentityError};

impl Platform {
    /// The normalized (whitespace-free, lower-case) raw machine id, before hashing.
    pub(crate) fn raw_machine_id(self, source: &dyn HostSource) -> Result<String, IdentityError> {
        match self {
            Self::Darwin => darwin::raw_machine_id(source),
            Self::Linux => linux::raw_machine_id(source),
            Self::Windows => windows::raw_machine_id(source),
            Self::FreeBsd => freebsd::raw_machine_id(source),
        }
    }
}

/// The first line of `text`, compacted; empty when there is nothing usable.
fn first_line_compact(text: &str) -> String {
    crate::digest::compact_lowercase(text.lines().next().unwrap_or(""))
}
