//! The keys clients present to the gateway. Each key is its own namespace: conversations
//! started with one key are never found with another.
//!
//! Keys are kept as SHA-256 digests only, and a sent key is compared by its digest against
//! every configured one in constant time (`subtle`): neither the comparison's time nor its
//! length depends on how much of a key was right or how long the configured keys are.

use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

/// The configured client keys (none: every local client shares one namespace).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ClientKeys {
    /// (digest of the key, namespace) pairs.
    keys: Vec<([u8; 32], String)>,
}

impl std::fmt::Debug for ClientKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientKeys")
            .field("count", &self.keys.len())
            .finish()
    }
}

/// The namespace of requests when no key is configured.
pub const OPEN_NAMESPACE: &str = "open";

impl ClientKeys {
    /// Keys from `keys` (blank ones skipped, duplicates kept once).
    pub fn new<I: IntoIterator<Item = String>>(keys: I) -> Self {
        let mut out = Self::default();
        for key in keys {
            out.add(key);
        }
        out
    }

    /// Adds one key.
    pub fn add(&mut self, key: String) {
        let key = key.trim();
        if key.is_empty() {
            return;
        }
        let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        if self.keys.iter().any(|(known, _)| *known == digest) {
            return;
        }
        // The namespace every conversation of this key is filed under: part of its history
        // fingerprints and never written to disk as it is.
        let namespace = format!("key-{}", cursor_proto::hex::encode(&digest[..8]));
        self.keys.push((digest, namespace));
    }

    /// The keys of a keys file: one per line; blank lines and lines starting with `#` are
    /// skipped, and so is anything after ` #` on a line.
    pub fn parse_file(text: &str) -> Self {
        Self::new(key_lines(text).map(str::to_owned))
    }

    /// True when no key is configured: every client is let in, in one namespace.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// How many keys are configured.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// The namespace `sent` opens: [`OPEN_NAMESPACE`] when no key is configured, `None` for a
    /// key that is not one of them.
    pub fn namespace_of(&self, sent: Option<&str>) -> Option<&str> {
        if self.keys.is_empty() {
            return Some(OPEN_NAMESPACE);
        }
        let sent: [u8; 32] = Sha256::digest(sent?.trim().as_bytes()).into();
        let mut found = None;
        // Every key is compared, whichever matches: the time says nothing of which did.
        for (digest, namespace) in &self.keys {
            if bool::from(digest.ct_eq(&sent)) {
                found = Some(namespace.as_str());
            }
        }
        found
    }
}

/// The keys of a keys file, in order (see [`ClientKeys::parse_file`]).
pub(crate) fn key_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter_map(|line| {
        let line = line.split(" #").next().unwrap_or_default().trim();
        (!line.is_empty() && !line.starts_with('#')).then_some(line)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_opens_its_own_namespace_and_others_none() {
        let keys = ClientKeys::parse_file("# team keys\nalpha\n\n  beta  # bob's\n#gamma\n");
        assert_eq!(keys.len(), 2);
        let alpha = keys.namespace_of(Some("alpha")).unwrap();
        let beta = keys.namespace_of(Some("beta")).unwrap();
        assert_ne!(alpha, beta);
        assert_eq!(keys.namespace_of(Some("gamma")), None);
        assert_eq!(keys.namespace_of(Some("alph")), None);
        assert_eq!(keys.namespace_of(Some("alphaalpha")), None);
        assert_eq!(keys.namespace_of(None), None);
    }

    #[test]
    fn without_keys_everyone_shares_the_open_namespace() {
        let keys = ClientKeys::default();
        assert_eq!(keys.namespace_of(None), Some(OPEN_NAMESPACE));
        assert_eq!(keys.namespace_of(Some("anything")), Some(OPEN_NAMESPACE));
    }

    #[test]
    fn namespaces_are_the_ones_earlier_versions_filed_conversations_under() {
        // key-<first 8 bytes of SHA-256(key)>: stored conversations keep resuming.
        let keys = ClientKeys::new(["alpha".to_owned()]);
        let digest = Sha256::digest(b"alpha");
        assert_eq!(
            keys.namespace_of(Some("alpha")).unwrap(),
            format!("key-{}", cursor_proto::hex::encode(&digest[..8]))
        );
    }

    #[test]
    fn no_key_is_kept_in_the_clear() {
        let keys = ClientKeys::new(["sk-very-secret".to_owned()]);
        let shown = format!("{keys:?}");
        assert!(!shown.contains("secret"), "{shown}");
        assert!(
            keys.keys
                .iter()
                .all(|(digest, ns)| digest.len() == 32 && !ns.contains("secret"))
        );
    }
}
