//! The resume handles of the gateway's conversations: `cursor-agent`'s [`HandleStore`] under
//! `--state/handles`, plus handles seeded in memory for branches.
//!
//! A branch (a client that edited or rewound its history) starts from a copy of its parent's
//! handle cut at the turn it branched at. The copy is served from memory to the branch's first
//! Run and reaches the disk only when that Run saves its own handle, which it does when the
//! turn succeeds: a branch whose turn fails or whose client goes away leaves nothing behind.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use cursor_agent::{Fingerprint, Handle, HandleRepository, HandleStore, Loaded, StoreError};

use crate::sync::lock;

/// Handles on disk, and branch seeds in memory.
#[derive(Debug)]
pub(crate) struct Handles {
    store: HandleStore,
    seeds: Mutex<HashMap<String, Handle>>,
}

impl Handles {
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self {
            store: HandleStore::new(dir),
            seeds: Mutex::default(),
        }
    }

    /// The directory handles live in.
    pub(crate) fn dir(&self) -> &std::path::Path {
        self.store.dir()
    }

    /// Serves `handle` to `id`'s next load, until `id` saves one of its own or is unseeded.
    pub(crate) fn seed(&self, id: &str, handle: Handle) {
        lock(&self.seeds).insert(id.to_owned(), handle);
    }

    /// Forgets `id`'s seed (its turn failed, or it ended).
    pub(crate) fn unseed(&self, id: &str) {
        lock(&self.seeds).remove(id);
    }

    /// Branch seeds held now (each belongs to a turn in progress).
    pub(crate) fn seeds(&self) -> usize {
        lock(&self.seeds).len()
    }

    /// Deletes `id`'s handle and lock file (a conversation forgotten after its retention).
    /// Blocks: call it off the async workers.
    pub(crate) fn purge(&self, id: &str) -> Result<(), StoreError> {
        self.unseed(id);
        self.store.purge(id)
    }
}

impl HandleRepository for Handles {
    fn load(&self, session_id: &str) -> Result<Loaded, StoreError> {
        if let Some(seed) = lock(&self.seeds).get(session_id) {
            return Ok(Loaded::Found(seed.clone()));
        }
        self.store.load(session_id)
    }

    fn save(&self, session_id: &str, handle: &Handle) -> Result<(), StoreError> {
        self.store.save(session_id, handle)?;
        self.unseed(session_id);
        Ok(())
    }

    fn remove(&self, session_id: &str) -> Result<(), StoreError> {
        self.unseed(session_id);
        self.store.remove(session_id)
    }

    fn find_branch(&self, history: &Fingerprint) -> Result<Option<(String, Handle)>, StoreError> {
        self.store.find_branch(history)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cursor_agent::ir::Message;
    use cursor_agent::{BlobId, ToolsetKey};

    fn handle(conversation: &str) -> Handle {
        Handle::new(
            conversation,
            vec![0x0a, 0x01, 0x01],
            vec![(BlobId::of(b"x"), b"x".to_vec())],
            Fingerprint::of_user_turns(&[Message::user_text("hi")]),
            ToolsetKey::of(&[]),
        )
    }

    #[test]
    fn a_seed_is_served_from_memory_and_reaches_disk_only_when_its_turn_saves() {
        let dir = tempfile::tempdir().unwrap();
        let handles = Handles::new(dir.path().to_owned());
        handles.seed("branch", handle("parent-conv"));
        assert!(matches!(handles.load("branch"), Ok(Loaded::Found(_))));
        assert!(!dir.path().join("branch.json").exists(), "not on disk yet");
        // The turn failed: nothing is left.
        handles.unseed("branch");
        assert_eq!(handles.load("branch").unwrap(), Loaded::Missing);
        // The turn succeeded: its own save writes the file and ends the seed.
        handles.seed("branch", handle("parent-conv"));
        handles.save("branch", &handle("own-conv")).unwrap();
        assert_eq!(handles.seeds(), 0);
        let Loaded::Found(stored) = handles.load("branch").unwrap() else {
            panic!("saved")
        };
        assert_eq!(stored.conversation_id, "own-conv");
    }
}
