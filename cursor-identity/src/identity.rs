//! The resolved identity, its derivation from a source, and the process-wide cache.

use std::sync::OnceLock;

use crate::{HostSource, IdentityError, Platform, SystemSource};

/// The host identity Cursor's `x-cursor-checksum` header carries.
///
/// Both ids are lower-case SHA-256 hex (64 characters) of the normalized platform id and of
/// the first usable MAC address, computed as Cursor's own clients do. Joining them with the
/// time bucket is the transport's job, because that part changes per request.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HostIdentity {
    /// SHA-256 hex of the normalized platform machine id.
    pub machine_id: String,
    /// SHA-256 hex of the first usable MAC address, when the host exposes one.
    pub mac_machine_id: Option<String>,
}

impl HostIdentity {
    /// Builds an identity from already-hashed ids (for tests and hosts that cache it).
    pub fn new(machine_id: impl Into<String>, mac_machine_id: Option<String>) -> Self {
        Self {
            machine_id: machine_id.into(),
            mac_machine_id,
        }
    }
}

/// Resolves the identity of `platform` from `source`, without caching.
///
/// A missing machine id is an error; a missing MAC only leaves `mac_machine_id` empty.
pub fn resolve(platform: Platform, source: &dyn HostSource) -> Result<HostIdentity, IdentityError> {
    let raw = platform.raw_machine_id(source)?;
    Ok(HostIdentity {
        machine_id: crate::digest::sha256_hex(&raw),
        mac_machine_id: crate::mac::mac_machine_id(platform, source),
    })
}

/// A resolved identity kept for the life of the cache; failures are not kept.
///
/// Resolving reads files or spawns a command, so it should happen once, not per request.
/// Only success is cached: after a failure the next call tries again, so a host that gains a
/// machine id later is not stuck with the error.
#[derive(Debug, Default)]
pub struct IdentityCache {
    cell: OnceLock<HostIdentity>,
}

impl IdentityCache {
    /// An empty cache.
    pub const fn new() -> Self {
        Self {
            cell: OnceLock::new(),
        }
    }

    /// The cached identity, resolving it from `source` first if there is none yet.
    pub fn get_or_resolve(
        &self,
        platform: Platform,
        source: &dyn HostSource,
    ) -> Result<&HostIdentity, IdentityError> {
        if let Some(identity) = self.cell.get() {
            return Ok(identity);
        }
        let identity = resolve(platform, source)?;
        // Two racing callers resolve the same value; whichever lands first is kept.
        Ok(self.cell.get_or_init(|| identity))
    }
}

/// The identity of this host, resolved once per process from the real system.
pub fn host_identity() -> Result<&'static HostIdentity, IdentityError> {
    static CACHE: IdentityCache = IdentityCache::new();
    let platform = Platform::current().ok_or(IdentityError::UnsupportedPlatform {
        os: std::env::consts::OS,
    })?;
    CACHE.get_or_resolve(platform, &SystemSource)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn this_linux_host_resolves_to_hex_ids_and_the_cache_returns_the_same_value() {
        let first = host_identity().expect("the test host has a machine id or hostname");
        assert_eq!(first.machine_id.len(), 64);
        assert!(
            first
                .machine_id
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        let second = host_identity().expect("cached");
        assert!(
            std::ptr::eq(first, second),
            "the second call resolved again"
        );
        assert_eq!(
            *first,
            resolve(Platform::Linux, &SystemSource).expect("uncached")
        );
    }
}
