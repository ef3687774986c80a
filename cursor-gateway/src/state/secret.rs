//! The gateway's own secret: 32 random bytes under `--state`, from which every MAC the gateway
//! makes is derived with a purpose string of its own, so a value made for one purpose (a
//! thinking block's signature, the owner tag of a stored response) is never valid for another.
//!
//! The file keeps its historical name, `thinking.key`: signatures handed out before the secret
//! got other uses still verify.

use std::path::Path;

use hmac::{Hmac, Mac as _};
use sha2::Sha256;

use super::files::{Durability, read_bounded, replace_private};

type HmacSha256 = Hmac<Sha256>;

/// The file holding the secret, under the state directory.
pub(crate) const SECRET_FILE: &str = "thinking.key";

/// The gateway's secret.
#[derive(Clone)]
pub(crate) struct StateSecret([u8; 32]);

impl std::fmt::Debug for StateSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateSecret(<redacted>)")
    }
}

impl StateSecret {
    /// The secret in `state/thinking.key`, created (0600, atomically) when missing or unusable.
    /// Without a writable state directory it lives for this process only: signatures and stored
    /// responses then end with it.
    pub(crate) fn load_or_create(state: &Path) -> Self {
        let path = state.join(SECRET_FILE);
        if let Ok(Some(bytes)) = read_bounded(&path, 64)
            && let Ok(key) = <[u8; 32]>::try_from(bytes.as_slice())
        {
            return Self(key);
        }
        let mut key = [0u8; 32];
        crate::ids::random_bytes(&mut key);
        if let Err(error) = replace_private(&path, &key, Durability::Synced) {
            tracing::warn!(%error, "the gateway's secret was not saved: signatures end with this process");
        }
        Self(key)
    }

    /// A secret from known bytes (tests, and checks of requests that run no turn).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn from_bytes(key: [u8; 32]) -> Self {
        Self(key)
    }

    /// A secret for tests.
    #[cfg(test)]
    pub(crate) fn fixed(key: [u8; 32]) -> Self {
        Self(key)
    }

    /// The MAC of `data` for `purpose`.
    pub(crate) fn mac(&self, purpose: &[u8], data: &[u8]) -> [u8; 32] {
        self.keyed(purpose, data).finalize().into_bytes().into()
    }

    /// True when `tag` is the MAC of `data` for `purpose` (compared in constant time).
    pub(crate) fn verify(&self, purpose: &[u8], data: &[u8], tag: &[u8]) -> bool {
        self.keyed(purpose, data).verify_slice(tag).is_ok()
    }

    fn keyed(&self, purpose: &[u8], data: &[u8]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(purpose);
        mac.update(data);
        mac
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_survives_a_restart_and_purposes_never_share_a_mac() {
        let state = tempfile::tempdir().unwrap();
        let first = StateSecret::load_or_create(state.path());
        let second = StateSecret::load_or_create(state.path());
        let tag = first.mac(b"a\0", b"data");
        assert!(second.verify(b"a\0", b"data", &tag));
        assert!(!second.verify(b"b\0", b"data", &tag));
        assert!(!second.verify(b"a\0", b"datA", &tag));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(state.path().join(SECRET_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
