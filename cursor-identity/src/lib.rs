//! # cursor-identity (layer L2)
//!
//! Host identity for Cursor clients: the `machine_id` and optional `mac_machine_id` that
//! Cursor's `x-cursor-checksum` header carries, derived exactly as Cursor's own clients derive
//! them (SHA-256 hex of a normalized platform id; SHA-256 hex of the first real MAC).
//!
//! | platform | source |
//! |---|---|
//! | macOS | `ioreg -rd1 -c IOPlatformExpertDevice` → `IOPlatformUUID` |
//! | Linux | `/var/lib/dbus/machine-id`, then `/etc/machine-id` (read directly); `hostname` only if both are absent |
//! | Windows | `REG QUERY HKLM\SOFTWARE\Microsoft\Cryptography /v MachineGuid` |
//! | FreeBSD | `kenv -q smbios.system.uuid`, then `sysctl -n kern.hostuuid` |
//!
//! This is the only crate of the family that starts processes, and it starts only the entries
//! of [`ALLOWED_COMMANDS`]: fixed argv, empty environment (no credential can reach a child),
//! null stdin, and a [`COMMAND_TIMEOUT`]. When no source yields an id the result is a typed
//! [`IdentityError`]; the crate never invents a random id and never writes anything to disk.
//!
//! [`host_identity`] resolves the real host once per process. [`resolve`] takes any
//! [`HostSource`], so every platform adapter can be exercised with fakes on any OS:
//!
//! ```
//! use std::io;
//! use std::path::Path;
//! use cursor_identity::{resolve, AllowedCommand, HostSource, IdentityError, Platform};
//!
//! /// A Linux host with a systemd machine-id and one network card.
//! struct FakeLinux;
//!
//! impl HostSource for FakeLinux {
//!     fn read_to_string(&self, path: &Path) -> io::Result<String> {
//!         match path.to_str() {
//!             Some("/etc/machine-id") => Ok("0123456789ABCDEF0123456789abcdef\n".into()),
//!             Some("/sys/class/net/eth0/address") => Ok("02:fc:00:00:00:01\n".into()),
//!             _ => Err(io::ErrorKind::NotFound.into()),
//!         }
//!     }
//!     fn list_dir(&self, _path: &Path) -> io::Result<Vec<String>> {
//!         Ok(vec!["lo".into(), "eth0".into()])
//!     }
//!     fn run(&self, command: &'static AllowedCommand) -> Result<String, IdentityError> {
//!         Err(IdentityError::CommandFailed { program: command.program(), status: "fake".into() })
//!     }
//! }
//!
//! let identity = resolve(Platform::Linux, &FakeLinux)?;
//! // SHA-256 of the id after trimming and lower-casing.
//! assert_eq!(identity.machine_id.len(), 64);
//! assert!(identity.mac_machine_id.is_some());
//! # Ok::<(), IdentityError>(())
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

mod command;
mod digest;
mod error;
mod identity;
mod mac;
mod os;
mod platform;
mod source;

pub use command::{
    ALLOWED_COMMANDS, AllowedCommand, COMMAND_TIMEOUT, HOSTNAME, IOREG_PLATFORM_EXPERT,
    KENV_SYSTEM_UUID, REG_QUERY_MACHINE_GUID, SYSCTL_HOST_UUID,
};
pub use error::IdentityError;
pub use identity::{HostIdentity, IdentityCache, host_identity, resolve};
pub use os::Platform;
pub use source::{HostSource, SystemSource};
