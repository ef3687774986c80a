//! Signatures of the thinking blocks this gateway hands out on the Anthropic API. A client must
//! send a thinking block back unmodified; the gateway checks it with a key of its own, kept
//! under `--state` so signatures stay valid across restarts.

use std::path::Path;

use base64::Engine as _;
use hmac::{Hmac, Mac as _};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// What the MAC covers besides the text, so a signature is never valid for another purpose.
const CONTEXT: &[u8] = b"cursor-gateway thinking v1\0";

/// The gateway's signing key.
#[derive(Clone)]
pub(crate) struct ThinkingKey([u8; 32]);

impl std::fmt::Debug for ThinkingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ThinkingKey(<redacted>)")
    }
}

impl ThinkingKey {
    /// The key in `state/thinking.key`, created (mode 0600, atomically) when missing or
    /// unreadable. Without a writable state directory the key lives for this process only.
    pub(crate) fn load_or_create(state: &Path) -> Self {
        let path = state.join("thinking.key");
        if let Ok(bytes) = std::fs::read(&path)
            && let Ok(key) = <[u8; 32]>::try_from(bytes.as_slice())
        {
            return Self(key);
        }
        let mut key = [0u8; 32];
        if getrandom::fill(&mut key).is_err() {
            tracing::warn!("no entropy for the thinking key; thinking blocks will not verify");
        }
        if let Err(error) = write_private(&path, &key) {
            tracing::warn!(%error, path = %path.display(), "thinking key not saved: signatures end with this process");
        }
        Self(key)
    }

    /// A key for tests.
    #[cfg(test)]
    pub(crate) fn fixed(key: [u8; 32]) -> Self {
        Self(key)
    }

    fn mac(&self, thinking: &str) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(CONTEXT);
        mac.update(thinking.as_bytes());
        mac
    }

    /// The signature of `thinking`, base64.
    pub(crate) fn sign(&self, thinking: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.mac(thinking).finalize().into_bytes())
    }

    /// True when `signature` is this gateway's signature of `thinking` (compared in constant
    /// time).
    pub(crate) fn verify(&self, thinking: &str, signature: &str) -> bool {
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(signature.trim()) else {
            return false;
        };
        self.mac(thinking).verify_slice(&bytes).is_ok()
    }
}

/// Writes `bytes` to `path` readable by its owner only: a temporary file, then a rename.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("key.tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_only_its_own_text_and_key() {
        let key = ThinkingKey::fixed([7; 32]);
        let signature = key.sign("let me think");
        assert!(key.verify("let me think", &signature));
        assert!(!key.verify("let me think!", &signature));
        assert!(!ThinkingKey::fixed([8; 32]).verify("let me think", &signature));
        assert!(!key.verify("let me think", "not base64 !"));
    }

    #[test]
    fn the_key_survives_a_restart_and_is_private() {
        let state = tempfile::tempdir().unwrap();
        let first = ThinkingKey::load_or_create(state.path());
        let second = ThinkingKey::load_or_create(state.path());
        assert!(second.verify("t", &first.sign("t")));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(state.path().join("thinking.key"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
