//! The operating systems with an identity adapter (named by commands and errors alike).

use std::fmt;

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
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
