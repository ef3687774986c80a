//! Handle files on disk: one JSON file per host session, written atomically and durably, with
//! an advisory lock file so two processes never interleave writes.
//!
//! Writes go to a temp file in the same directory, are fsynced, renamed over the handle and
//! the directory is fsynced. Files are created mode 0600 in a 0700 directory (Unix). The lock
//! is an OS advisory lock (`File::try_lock`, flock on Unix) on `<session>.lock`. The OS drops
//! it when its holder exits or crashes, so there is no stale lock to break and no window in
//! which two processes could both break one. A lock timeout therefore means a live holder, and
//! its hint says to retry or to stop sharing the session id, never to delete the file.
//!
//! Only [`HandleStore::purge`] deletes a lock file, and only while holding it. Deleting a
//! locked file would otherwise let a waiter lock the old inode while a newcomer locks a new
//! one; so on Unix every locker checks, once it holds the lock, that the path still names the
//! file it locked (device and inode), and starts over on the current file when it does not.
//! Elsewhere `purge` leaves the lock file in place. A user must never delete one by hand. A
//! handle that cannot be read or parsed is moved aside as `<session>.json.corrupt-<unix time>`
//! and reported, never deleted.
//!
//! With [`HandleStore::with_branch_index`], a store-wide index under `branches/` maps the history digest of each saved handle's last
//! turn to the session that saved it (one small file per turn, named by the digest, holding the
//! session id), so a forked or copied host session finds the turn it branched from
//! ([`HandleStore::find_branch`]). Index files are written without fsync: a lost or outdated
//! entry only costs that branch one rebuild, and every hit is checked against the handle it
//! names.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::fingerprint::Fingerprint;
use super::handle::Handle;

/// Where a host keeps the resume handles of its sessions. [`HandleStore`] keeps them on disk;
/// a host with its own storage (a database, a keychain) implements this instead.
///
/// Calls may block (file locks, fsync): the driver's `AgentSession` makes
/// them on tokio's blocking pool, never on the runtime's own threads.
pub trait HandleRepository: Send + Sync + std::fmt::Debug {
    /// `session_id`'s handle; an unusable one is reported as [`Loaded::Corrupt`] and is no
    /// longer served.
    fn load(&self, session_id: &str) -> Result<Loaded, StoreError>;

    /// Stores `handle` as `session_id`'s, atomically: a reader sees the old handle or the new
    /// one, never a mix.
    fn save(&self, session_id: &str, handle: &Handle) -> Result<(), StoreError>;

    /// Drops `session_id`'s handle (it went stale).
    fn remove(&self, session_id: &str) -> Result<(), StoreError>;

    /// A stored handle of any session holding a turn whose
    /// [`Fingerprint::of_history`](crate::Fingerprint::of_history) is `history`, with that
    /// session's id: where a forked or copied host session branched from (PROTOCOL-AGENT
    /// §10.1). The default finds nothing (a repository without an index).
    fn find_branch(&self, history: &Fingerprint) -> Result<Option<(String, Handle)>, StoreError> {
        let _ = history;
        Ok(None)
    }
}

impl HandleRepository for HandleStore {
    fn load(&self, session_id: &str) -> Result<Loaded, StoreError> {
        Self::load(self, session_id)
    }

    fn save(&self, session_id: &str, handle: &Handle) -> Result<(), StoreError> {
        Self::save(self, session_id, handle)
    }

    fn remove(&self, session_id: &str) -> Result<(), StoreError> {
        Self::remove(self, session_id)
    }

    fn find_branch(&self, history: &Fingerprint) -> Result<Option<(String, Handle)>, StoreError> {
        Self::find_branch(self, history)
    }
}

/// A directory of handle files, one per host session id.
#[derive(Clone, Debug)]
pub struct HandleStore {
    dir: PathBuf,
    /// How long [`save`](Self::save), [`load`](Self::load) and [`remove`](Self::remove) wait
    /// for another holder's lock (5 s).
    pub lock_timeout: Duration,
    /// Whether [`save`](Self::save) keeps the branch index (off unless
    /// [`with_branch_index`](Self::with_branch_index)).
    branch_index: bool,
}

/// What [`HandleStore::load`] found.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Loaded {
    /// No handle is stored for the session.
    Missing,
    /// The stored handle.
    Found(Handle),
    /// The stored file was unusable: it was moved aside and the session has no handle now.
    Corrupt(StoreWarning),
}

impl Loaded {
    /// The handle, if one was found.
    pub fn handle(self) -> Option<Handle> {
        match self {
            Self::Found(handle) => Some(handle),
            Self::Missing | Self::Corrupt(_) => None,
        }
    }
}

/// A handle file that could not be used: why, and where it was kept.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreWarning {
    /// The session whose handle was unusable.
    pub session_id: String,
    /// What was wrong with it.
    pub reason: String,
    /// Where the bad file was moved (`None` when it could not be moved).
    pub kept_at: Option<PathBuf>,
}

impl std::fmt::Display for StoreWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the resume handle of session {} is unusable ({}); the conversation will be rebuilt",
            self.session_id, self.reason
        )?;
        if let Some(path) = &self.kept_at {
            write!(f, "; the file was kept as {}", path.display())?;
        }
        Ok(())
    }
}

/// Why a store operation failed.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The session id could escape the directory or is not a plain file name.
    #[error("session id {0:?} is not usable as a handle file name")]
    InvalidSessionId(String),
    /// Another holder kept the lock past the timeout.
    #[error("timed out waiting for the handle lock {}", .0.display())]
    LockTimeout(PathBuf),
    /// A filesystem operation failed.
    #[error("{operation} {}: {source}", path.display())]
    Io {
        /// What was being done.
        operation: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The call was cut off before it finished (its blocking task was cancelled because the
    /// runtime shut down).
    #[error("the handle store call was interrupted: {0}")]
    Interrupted(String),
}

impl cursor_proto::ir::Classify for StoreError {
    fn kind(&self) -> cursor_proto::ir::ErrorKind {
        cursor_proto::ir::ErrorKind::Local
    }

    fn next_step(&self) -> cursor_proto::ir::NextStep {
        cursor_proto::ir::NextStep::fix_local(match self {
            Self::InvalidSessionId(_) => "use session ids of letters, digits, '-', '_' and '.'",
            // The OS releases the lock when its holder exits, so a timeout means a live
            // holder; the lock file must stay (see the module doc).
            Self::LockTimeout(_) => {
                "another running process (a second host on the same session id) is using this session's handle; retry when it is done, or give each process its own session id"
            }
            Self::Io { .. } => "check that the handle directory exists, is writable and has space",
            Self::Interrupted(_) => "retry the turn; the runtime was shutting down",
        })
    }
}

impl HandleStore {
    /// A store over `dir` (created on first save).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            lock_timeout: Duration::from_secs(5),
            branch_index: false,
        }
    }

    /// Keeps the store-wide branch index (see the module doc) when `on`, for sessions with
    /// [`SessionConfig::find_branches`](crate::session::SessionConfig::find_branches): a host
    /// whose handles all belong to one user. Off by default.
    #[must_use]
    pub fn with_branch_index(mut self, on: bool) -> Self {
        self.branch_index = on;
        self
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file holding `session_id`'s handle.
    pub fn path_of(&self, session_id: &str) -> Result<PathBuf, StoreError> {
        validate(session_id)?;
        Ok(self.dir.join(format!("{session_id}.json")))
    }

    /// Reads `session_id`'s handle. An unusable file is moved aside and reported as
    /// [`Loaded::Corrupt`].
    pub fn load(&self, session_id: &str) -> Result<Loaded, StoreError> {
        let path = self.path_of(session_id)?;
        if !path.exists() {
            return Ok(Loaded::Missing);
        }
        let _lock = self.lock(session_id)?;
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Loaded::Missing),
            Err(e) => {
                return Ok(Loaded::Corrupt(self.set_aside(
                    session_id,
                    &path,
                    e.to_string(),
                )));
            }
        };
        match Handle::from_json(&bytes) {
            Ok(handle) => Ok(Loaded::Found(handle)),
            Err(reason) => Ok(Loaded::Corrupt(self.set_aside(
                session_id,
                &path,
                reason.to_string(),
            ))),
        }
    }

    /// Stores `handle` as `session_id`'s, atomically and durably.
    pub fn save(&self, session_id: &str, handle: &Handle) -> Result<(), StoreError> {
        let path = self.path_of(session_id)?;
        self.ensure_dir()?;
        let _lock = self.lock(session_id)?;
        let temp = self.dir.join(format!(
            "{session_id}.json.tmp-{:x}-{}",
            holder_tag(),
            unique()
        ));
        let written = write_synced(&temp, &handle.to_json());
        if let Err(source) = written {
            let _ = fs::remove_file(&temp);
            return Err(io_error("write", &temp, source));
        }
        if let Err(source) = fs::rename(&temp, &path) {
            let _ = fs::remove_file(&temp);
            return Err(io_error("rename into", &path, source));
        }
        sync_dir(&self.dir).map_err(|e| io_error("sync", &self.dir, e))?;
        if let Some(history) = handle.history.as_ref().filter(|_| self.branch_index) {
            self.index(session_id, history);
        }
        Ok(())
    }

    /// Points the index entry of `history` at `session_id` (best effort).
    fn index(&self, session_id: &str, history: &Fingerprint) {
        let dir = self.dir.join("branches");
        let path = dir.join(history.to_hex());
        if fs::read_to_string(&path).is_ok_and(|held| held == session_id) {
            return;
        }
        let temp = dir.join(format!(
            ".{}.tmp-{:x}-{}",
            history.to_hex(),
            holder_tag(),
            unique()
        ));
        let written = fs::create_dir_all(&dir)
            .and_then(|()| write_synced_no_sync(&temp, session_id.as_bytes()))
            .and_then(|()| fs::rename(&temp, &path));
        if written.is_err() {
            let _ = fs::remove_file(&temp);
        }
    }

    /// The handle of the session the index names for `history`, if it still holds a turn with
    /// that digest (see the module doc).
    pub fn find_branch(
        &self,
        history: &Fingerprint,
    ) -> Result<Option<(String, Handle)>, StoreError> {
        let path = self.dir.join("branches").join(history.to_hex());
        let Ok(session_id) = fs::read_to_string(&path) else {
            return Ok(None);
        };
        if validate(&session_id).is_err() {
            return Ok(None);
        }
        match self.load(&session_id)? {
            Loaded::Found(handle) if handle.find_history(history).is_some() => {
                Ok(Some((session_id, handle)))
            }
            _ => Ok(None),
        }
    }

    /// Deletes everything `session_id` has in the store, its handle and its lock file, holding
    /// the lock while it does (see the module doc): for a host that forgets sessions idle past
    /// some age. A session with nothing stored is not an error. On platforms where a locker
    /// cannot tell a deleted lock file from the current one, the lock file stays.
    ///
    /// # Errors
    ///
    /// [`StoreError::LockTimeout`] while another holder uses the session; [`StoreError::Io`]
    /// when a file cannot be deleted.
    pub fn purge(&self, session_id: &str) -> Result<(), StoreError> {
        let path = self.path_of(session_id)?;
        let lock_path = self.dir.join(format!("{session_id}.lock"));
        if !path.exists() && !lock_path.exists() {
            return Ok(());
        }
        let lock = self.lock(session_id)?;
        match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(io_error("remove", &path, e));
            }
            _ => {}
        }
        #[cfg(unix)]
        match fs::remove_file(&lock_path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(io_error("remove", &lock_path, e));
            }
            _ => {}
        }
        drop(lock);
        sync_dir(&self.dir).map_err(|e| io_error("sync", &self.dir, e))
    }

    /// Drops `session_id`'s handle (stale: the conversation is being rebuilt).
    pub fn remove(&self, session_id: &str) -> Result<(), StoreError> {
        let path = self.path_of(session_id)?;
        if !path.exists() {
            return Ok(());
        }
        let _lock = self.lock(session_id)?;
        match fs::remove_file(&path) {
            Ok(()) => sync_dir(&self.dir).map_err(|e| io_error("sync", &self.dir, e)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_error("remove", &path, e)),
        }
    }

    fn ensure_dir(&self) -> Result<(), StoreError> {
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt as _;
            builder.mode(0o700);
        }
        builder
            .create(&self.dir)
            .map_err(|e| io_error("create directory", &self.dir, e))
    }

    fn set_aside(&self, session_id: &str, path: &Path, reason: String) -> StoreWarning {
        let seconds = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let aside = self
            .dir
            .join(format!("{session_id}.json.corrupt-{seconds}-{}", unique()));
        let kept_at = fs::rename(path, &aside).ok().map(|()| aside);
        StoreWarning {
            session_id: session_id.to_owned(),
            reason,
            kept_at,
        }
    }

    /// Runs `f` holding `session_id`'s lock, for a read-modify-write that must not interleave
    /// with another process's (the lock is not reentrant: `f` must not call [`load`](Self::load),
    /// [`save`](Self::save) or [`remove`](Self::remove) for the same session).
    ///
    /// # Errors
    ///
    /// [`StoreError::LockTimeout`] when another holder keeps the lock past
    /// [`lock_timeout`](Self::lock_timeout); [`StoreError::Io`] when the lock file cannot be
    /// opened.
    pub fn with_lock<T>(&self, session_id: &str, f: impl FnOnce() -> T) -> Result<T, StoreError> {
        validate(session_id)?;
        let _lock = self.lock(session_id)?;
        Ok(f())
    }

    fn lock(&self, session_id: &str) -> Result<LockGuard, StoreError> {
        self.ensure_dir()?;
        let path = self.dir.join(format!("{session_id}.lock"));
        let started = std::time::Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            let mut options = OpenOptions::new();
            options.write(true).create(true).truncate(false);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt as _;
                options.mode(0o600);
            }
            let file = options
                .open(&path)
                .map_err(|e| io_error("open lock", &path, e))?;
            match file.try_lock() {
                // A purge may have deleted the file while this caller waited for it: the lock
                // it holds then guards nothing, and the current file (a new one) is locked
                // instead.
                Ok(()) if still_named(&file, &path) => return Ok(LockGuard { file }),
                Ok(()) => {
                    let _ = file.unlock();
                    if started.elapsed() >= self.lock_timeout {
                        return Err(StoreError::LockTimeout(path));
                    }
                }
                Err(TryLockError::WouldBlock) => {
                    if started.elapsed() >= self.lock_timeout {
                        return Err(StoreError::LockTimeout(path));
                    }
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
                Err(TryLockError::Error(e)) => return Err(io_error("lock", &path, e)),
            }
        }
    }
}

/// Whether `path` still names the open `file` (the same device and inode); elsewhere than Unix,
/// where lock files are never deleted, always true.
fn still_named(file: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        match (file.metadata(), fs::metadata(path)) {
            (Ok(held), Ok(named)) => held.dev() == named.dev() && held.ino() == named.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        true
    }
}

/// Holds the OS lock; closing the file (on drop, or when the process dies) releases it.
#[derive(Debug)]
struct LockGuard {
    file: File,
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        // Closing releases it too; unlocking first makes the order explicit.
        let _ = self.file.unlock();
    }
}

/// Session ids become file names: plain ASCII letters, digits, `-`, `_` and `.`, not starting
/// with a dot, at most 128 characters.
fn validate(session_id: &str) -> Result<(), StoreError> {
    let plain = !session_id.is_empty()
        && session_id.len() <= 128
        && !session_id.starts_with('.')
        && session_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if plain {
        Ok(())
    } else {
        Err(StoreError::InvalidSessionId(session_id.to_owned()))
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

fn write_synced_no_sync(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options.open(path)?.write_all(bytes)
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        // File::open cannot open a directory on Windows, so there is nothing to sync.
        let _ = dir;
        Ok(())
    }
}

/// A per-process tag for temp and lock files (the crate never asks the OS about processes).
fn holder_tag() -> u64 {
    static TAG: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TAG.get_or_init(|| {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        // Truncation is fine: the tag only has to differ between concurrent writers.
        (nanos as u64) ^ (std::ptr::addr_of!(TAG) as u64).rotate_left(32)
    })
}

fn unique() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()));
    COUNTER.fetch_add(1, Ordering::Relaxed) ^ (nanos << 20)
}

fn io_error(operation: &'static str, path: &Path, source: io::Error) -> StoreError {
    StoreError::Io {
        operation,
        path: path.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The module keeps lock files forever (deleting one could let two holders lock
    /// different inodes), so the hint must not tell the user to delete one.
    #[test]
    fn the_lock_timeout_hint_never_asks_to_delete_the_lock_file() {
        use cursor_proto::ir::{Classify as _, NextStep};
        let error = StoreError::LockTimeout("/tmp/handles/s.lock".into());
        let NextStep::FixLocal { detail } = error.next_step() else {
            panic!("{:?}", error.next_step())
        };
        let lower = detail.to_lowercase();
        assert!(
            !lower.contains("remove") && !lower.contains("delete"),
            "{detail}"
        );
        assert!(lower.contains("retry"), "{detail}");
    }

    #[test]
    fn session_ids_cannot_escape_the_directory() {
        let store = HandleStore::new("/tmp/handles");
        for bad in ["", "../x", "a/b", ".hidden", "a\\b", "é", &"x".repeat(129)] {
            assert!(
                matches!(store.path_of(bad), Err(StoreError::InvalidSessionId(_))),
                "{bad:?}"
            );
        }
        assert_eq!(
            store.path_of("0193-ab_c.d").unwrap(),
            Path::new("/tmp/handles/0193-ab_c.d.json")
        );
    }

    fn handle() -> Handle {
        Handle::new(
            "conv-1",
            vec![0x0a, 0x01, 0x01],
            Vec::new(),
            Fingerprint::of_user_turns(&[cursor_proto::ir::Message::user_text("hi")]),
            super::super::fingerprint::ToolsetKey::of(&[]),
        )
    }

    #[test]
    fn purge_deletes_the_handle_and_its_lock_and_a_missing_session_is_no_error() {
        let dir = tempfile::tempdir().unwrap();
        let store = HandleStore::new(dir.path());
        store.save("s1", &handle()).unwrap();
        assert!(dir.path().join("s1.json").exists() && dir.path().join("s1.lock").exists());
        store.purge("s1").unwrap();
        assert!(!dir.path().join("s1.json").exists());
        #[cfg(unix)]
        assert!(!dir.path().join("s1.lock").exists());
        assert_eq!(store.load("s1").unwrap(), Loaded::Missing);
        store.purge("never-stored").unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_locker_that_waited_through_a_purge_holds_the_current_lock_file() {
        use std::os::unix::fs::MetadataExt as _;
        use std::sync::{Arc, Barrier};
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(HandleStore::new(dir.path()));
        store.save("s", &handle()).unwrap();
        let holding = Arc::new(Barrier::new(2));
        let holder = {
            let (store, holding) = (Arc::clone(&store), Arc::clone(&holding));
            std::thread::spawn(move || {
                store
                    .with_lock("s", || {
                        holding.wait();
                        std::thread::sleep(Duration::from_millis(100));
                    })
                    .unwrap();
            })
        };
        holding.wait();
        // Both wait on the file the holder locked; the purge deletes it once it gets the lock.
        let purger = {
            let store = Arc::clone(&store);
            std::thread::spawn(move || store.purge("s").unwrap())
        };
        let locker = {
            let store = Arc::clone(&store);
            let path = dir.path().join("s.lock");
            std::thread::spawn(move || {
                store
                    .with_lock("s", || {
                        let named = fs::metadata(&path).expect("the lock file exists while held");
                        named.ino()
                    })
                    .unwrap()
            })
        };
        holder.join().unwrap();
        purger.join().unwrap();
        let held_inode = locker.join().unwrap();
        // Whichever ran first, the locker held the file its path names (the purge may have
        // deleted the one it first opened, after which it locked a new one).
        let now = fs::metadata(dir.path().join("s.lock")).map(|m| m.ino());
        assert!(now.is_err() || now.unwrap() == held_inode);
    }
}
