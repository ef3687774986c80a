//! The in-memory, content-addressed blob store Cursor reads and writes over KV (PROTOCOL-AGENT §6).

use std::collections::HashMap;

use sha2::{Digest, Sha256};

use crate::{AgentError, Limits};

/// A blob id: the 32-byte SHA-256 of the blob's content.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlobId([u8; 32]);

impl BlobId {
    /// The id of `data`.
    pub fn of(data: &[u8]) -> Self {
        Self(Sha256::digest(data).into())
    }

    /// An id from its raw 32 bytes.
    pub const fn from_array(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// Reads an id off the wire; `None` unless it is exactly 32 bytes.
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        bytes.try_into().ok().map(Self)
    }

    /// The raw 32 bytes, as sent on the wire.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Lower-case hex, the form used as a map key in stored handles.
    pub fn to_hex(&self) -> String {
        cursor_proto::hex::encode(&self.0)
    }
}

impl std::fmt::Debug for BlobId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BlobId({})", self.to_hex())
    }
}

/// Process-memory blob store: capped in total and per blob, with no eviction (an evicted blob
/// could still be referenced by Cursor, so over-cap writes fail closed instead).
#[derive(Clone, Debug)]
pub struct BlobStore {
    blobs: HashMap<BlobId, Vec<u8>>,
    total: usize,
    capacity: usize,
    max_blob_len: usize,
}

impl BlobStore {
    /// An empty store with the caps of `limits`.
    pub fn new(limits: &Limits) -> Self {
        Self {
            blobs: HashMap::new(),
            total: 0,
            capacity: limits.blob_store_capacity,
            max_blob_len: limits.max_blob_len,
        }
    }

    /// Stores `data` under its SHA-256 id and returns the id.
    pub fn insert(&mut self, data: Vec<u8>) -> Result<BlobId, AgentError> {
        let id = BlobId::of(&data);
        self.insert_with_id(id, data)?;
        Ok(id)
    }

    /// Stores `data` under an id the server chose (a `set_blob_args`). Storing the same id again
    /// replaces the content and is counted once.
    pub fn insert_with_id(&mut self, id: BlobId, data: Vec<u8>) -> Result<(), AgentError> {
        if data.len() > self.max_blob_len {
            return Err(AgentError::BlobTooLarge {
                len: data.len(),
                max: self.max_blob_len,
            });
        }
        let replaced = self.blobs.get(&id).map_or(0, Vec::len);
        let total = self.total - replaced + data.len();
        if total > self.capacity {
            return Err(AgentError::BlobStoreFull {
                needed: data.len(),
                capacity: self.capacity,
            });
        }
        self.total = total;
        self.blobs.insert(id, data);
        Ok(())
    }

    /// The blob stored under `id`, if any.
    pub fn get(&self, id: &BlobId) -> Option<&[u8]> {
        self.blobs.get(id).map(Vec::as_slice)
    }

    /// How many blobs are stored.
    pub fn len(&self) -> usize {
        self.blobs.len()
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.blobs.is_empty()
    }

    /// Total stored bytes.
    pub fn total_bytes(&self) -> usize {
        self.total
    }

    /// Every blob, in no particular order (what a resume handle persists).
    pub fn iter(&self) -> impl Iterator<Item = (&BlobId, &[u8])> {
        self.blobs.iter().map(|(id, data)| (id, data.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small_limits(capacity: usize, max_blob_len: usize) -> Limits {
        Limits {
            blob_store_capacity: capacity,
            max_blob_len,
            ..Limits::default()
        }
    }

    #[test]
    fn blob_ids_are_sha256_of_content() {
        let id = BlobId::of(b"abc");
        assert_eq!(
            id.to_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(BlobId::from_slice(id.as_bytes()), Some(id));
        assert_eq!(BlobId::from_slice(&[0; 31]), None);
    }

    #[test]
    fn store_round_trips_and_counts_each_id_once() {
        let mut store = BlobStore::new(&Limits::default());
        let id = store.insert(b"hello".to_vec()).unwrap();
        store.insert(b"hello".to_vec()).unwrap();
        assert_eq!(store.get(&id), Some(&b"hello"[..]));
        assert_eq!(store.len(), 1);
        assert_eq!(store.total_bytes(), 5);
    }

    #[test]
    fn oversize_blob_fails_closed() {
        let mut store = BlobStore::new(&small_limits(100, 4));
        assert_eq!(
            store.insert(vec![0; 5]),
            Err(AgentError::BlobTooLarge { len: 5, max: 4 })
        );
        assert!(store.is_empty());
    }

    #[test]
    fn full_store_fails_closed_without_evicting() {
        let mut store = BlobStore::new(&small_limits(8, 8));
        let first = store.insert(vec![1; 6]).unwrap();
        assert!(matches!(
            store.insert(vec![2; 3]),
            Err(AgentError::BlobStoreFull { .. })
        ));
        assert!(store.get(&first).is_some());
        assert_eq!(store.total_bytes(), 6);
    }
}
