//! The keys clients present to the gateway. Each key is its own namespace: conversations
//! started with one key are never found with another.

use sha2::{Digest as _, Sha256};

/// The configured client keys (none: every local client shares one namespace).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ClientKeys {
    /// (key, namespace) pairs.
    keys: Vec<(String, String)>,
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
        let key = key.trim().to_owned();
        if key.is_empty() || self.keys.iter().any(|(k, _)| *k == key) {
            return;
        }
        let digest = Sha256::digest(key.as_bytes());
        let namespace = cursor_proto::hex::encode(&digest[..8]);
        self.keys.push((key, format!("key-{namespace}")));
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
    /// key that is not one of them. Every configured key is compared in constant time.
    pub fn namespace_of(&self, sent: Option<&str>) -> Option<&str> {
        if self.keys.is_empty() {
            return Some(OPEN_NAMESPACE);
        }
        let sent = sent?.trim().as_bytes();
        let mut found = None;
        for (key, namespace) in &self.keys {
            if constant_time_eq(sent, key.as_bytes()) {
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

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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
        assert_eq!(keys.namespace_of(None), None);
    }

    #[test]
    fn without_keys_everyone_shares_the_open_namespace() {
        let keys = ClientKeys::default();
        assert_eq!(keys.namespace_of(None), Some(OPEN_NAMESPACE));
        assert_eq!(keys.namespace_of(Some("anything")), Some(OPEN_NAMESPACE));
    }
}
