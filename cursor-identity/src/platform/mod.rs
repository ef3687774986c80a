//! The operating systems with an identity adapter, and the dispatch to them.

mod darwin;
mod freebsd;
mod linux;
mod windows;

use std::fmt;

use crate::{HostSource, IdentityError};

/// An operating system with an identity adapter.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Platform {
    /// macOS: `ioreg`'s `IOPlatformUUID`.
    Darwin,
    /// Linux: the D-Bus / systemd machine-id files, else `hostname`.
    Linux,
    /// Windows: the `MachineGuid` registry value.
    Windows,
    /// FreeBSD: `kenv`'s SMBIOS UUID, else `sysctl kern.hostuuid`.
    FreeBsd,
}

impl Platform {
    /// The platform this crate was built for, or `None` when it has no adapter.
    pub const fn current() -> Option<Self> {
        if cfg!(target_os = "macos") {
            Some(Self::Darwin)
        } else if cfg!(target_os = "linux") {
            Some(Self::Linux)
        } else if cfg!(target_os = "windows") {
            Some(Self::Windows)
        } else if cfg!(target_os = "freebsd") {
            Some(Self::FreeBsd)
        } else {
            None
        }
    }

    /// The stable lower-case name (`darwin`, `linux`, `windows`, `freebsd`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Darwin => "darwin",
            Self::Linux => "linux",
            Self::Windows => "windows",
            Self::FreeBsd => "freebsd",
        }
    }

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

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The first line of `text`, compacted; empty when there is nothing usable.
fn first_line_compact(text: &str) -> String {
    crate::digest::compact_lowercase(text.lines().next().unwrap_or(""))
}
