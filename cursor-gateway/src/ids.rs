//! Random bytes and the ids made of them (conversation ids, response ids, request ids, the
//! gateway's secret).
//!
//! The OS's generator is used; should it ever fail, the bytes come from a hash of the clock, the
//! process id and a counter instead, which is still unique within and across processes: an id
//! made when the generator failed must never collide with another (the old fallback of all zeros
//! gave every response the same id).

use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest as _, Sha256};

/// Fills `bytes` from the OS's generator, or from the unique fallback (logged once).
pub(crate) fn random_bytes(bytes: &mut [u8]) {
    fill_with(bytes, |bytes| {
        getrandom::fill(bytes).map_err(|e| e.to_string())
    });
}

/// [`random_bytes`] with the generator given, so a failing one can be tested.
pub(crate) fn fill_with(bytes: &mut [u8], generator: impl FnOnce(&mut [u8]) -> Result<(), String>) {
    if let Err(error) = generator(bytes) {
        static WARNED: std::sync::Once = std::sync::Once::new();
        WARNED.call_once(|| {
            tracing::error!(%error, "the OS random generator failed; ids come from a clock-and-counter hash");
        });
        unique_fallback(bytes);
    }
}

/// Bytes no other call of this process, nor another process, produces: SHA-256 of the wall
/// clock, the process id and a per-process counter, chained for long outputs.
fn unique_fallback(bytes: &mut [u8]) {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    for (block, chunk) in (0u64..).zip(bytes.chunks_mut(32)) {
        let digest = Sha256::new()
            .chain_update(nanos.to_le_bytes())
            .chain_update(std::process::id().to_le_bytes())
            .chain_update(count.to_le_bytes())
            .chain_update(block.to_le_bytes())
            .finalize();
        chunk.copy_from_slice(&digest[..chunk.len()]);
    }
}

/// `prefix` and 12 random bytes in hex: a response or message id.
pub(crate) fn response_id(prefix: &str) -> String {
    let mut bytes = [0u8; 12];
    random_bytes(&mut bytes);
    format!("{prefix}-{}", cursor_proto::hex::encode(&bytes))
}

/// A fresh conversation id: `c-` and 16 random bytes in hex.
pub(crate) fn conversation_id() -> String {
    let mut bytes = [0u8; 16];
    random_bytes(&mut bytes);
    format!("c-{}", cursor_proto::hex::encode(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_generator_still_gives_distinct_nonzero_ids() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            let mut bytes = [0u8; 12];
            fill_with(&mut bytes, |_| Err("no entropy".into()));
            assert_ne!(bytes, [0u8; 12]);
            assert!(seen.insert(bytes), "a repeated id");
        }
    }
}
