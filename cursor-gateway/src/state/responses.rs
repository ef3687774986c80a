//! Responses kept for `previous_response_id`, under `--state/responses`: one file each,
//! `<id>.json`, written atomically, mode 0600.
//!
//! A response that continues an earlier one stores only what is new (the input after the
//! earlier response and its own answer) and the earlier one's id: a chain of n responses costs
//! its messages once, not n copies of a growing transcript. Loading walks the chain back and
//! marks every link as used, so a chain in use does not expire under its newest response.
//!
//! A file names its owner by a MAC of the client key's namespace under the gateway's secret, so
//! neither the key nor a plain hash of it is ever on disk. Responses expire once unused for the
//! retention, and the oldest go first when the directory is over its size cap.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use cursor_agent::ir::Message;
use serde::{Deserialize, Serialize};

use super::files::{Durability, is_temporary, read_bounded, replace_private};
use super::secret::StateSecret;

/// The largest file read back.
const MAX_FILE_BYTES: u64 = 256 << 20;

/// The longest chain walked back; a longer one is treated as broken.
const MAX_CHAIN: usize = 10_000;

/// What the owner MAC covers besides the namespace.
const OWNER: &[u8] = b"cursor-gateway response owner v1\0";

/// One file as written.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct StoredFile {
    /// 2 for this format; absent in the files of earlier versions, which hold the whole
    /// transcript and the namespace itself.
    #[serde(default)]
    v: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    owner: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    namespace: Option<String>,
    hint: Option<String>,
    system_prompt: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    previous: Option<String>,
    messages: Vec<Message>,
}

impl StoredFile {
    /// Parses a stored response; `None` for anything else.
    pub(crate) fn from_json(bytes: &[u8]) -> Option<Self> {
        let file: Self = serde_json::from_slice(bytes).ok()?;
        matches!(file.v, 0 | 2).then_some(file)
    }
}

/// A stored response, its chain joined.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Stored {
    pub(crate) hint: Option<String>,
    /// Without a response format's instruction (each request states its own).
    pub(crate) system_prompt: String,
    /// The whole transcript, the answer's assistant message last.
    pub(crate) messages: Vec<Message>,
}

/// What to store for one answer.
#[derive(Debug)]
pub(crate) struct NewResponse<'a> {
    pub(crate) namespace: &'a str,
    pub(crate) hint: Option<&'a str>,
    pub(crate) system_prompt: &'a str,
    /// The stored response this one continues, and how many of `messages` came from it.
    pub(crate) previous: Option<(&'a str, usize)>,
    /// The whole transcript, the answer last.
    pub(crate) messages: &'a [Message],
}

/// The directory of stored responses.
#[derive(Debug)]
pub(crate) struct ResponseStore {
    dir: PathBuf,
    secret: StateSecret,
    /// Bytes on disk, as of the last sweep plus what was written since.
    bytes: AtomicU64,
}

/// Why a sweep deleted what it did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ResponseSweep {
    pub(crate) expired: usize,
    pub(crate) over_cap: usize,
    pub(crate) bytes_left: u64,
}

pub(crate) fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl ResponseStore {
    pub(crate) fn new(dir: PathBuf, secret: StateSecret) -> Self {
        Self {
            dir,
            secret,
            bytes: AtomicU64::new(0),
        }
    }

    fn path(&self, id: &str) -> Option<PathBuf> {
        valid_id(id).then(|| self.dir.join(format!("{id}.json")))
    }

    fn owner_of(&self, namespace: &str) -> String {
        cursor_proto::hex::encode(&self.secret.mac(OWNER, namespace.as_bytes()))
    }

    fn owned_by(&self, file: &StoredFile, namespace: &str) -> bool {
        match (&file.owner, &file.namespace) {
            (Some(owner), _) => cursor_proto::hex::decode(owner)
                .is_some_and(|tag| self.secret.verify(OWNER, namespace.as_bytes(), &tag)),
            (None, Some(legacy)) => legacy == namespace,
            (None, None) => false,
        }
    }

    /// Response `id` of `namespace`, its chain joined, if it exists, is unexpired, belongs to
    /// that namespace and every link of its chain is there. Unknown, `store: false` (never
    /// written) and another key's all answer `None`, so a key learns nothing of another's.
    /// Blocks: call it off the async workers.
    pub(crate) fn load(
        &self,
        id: &str,
        namespace: &str,
        retention: Duration,
        now: SystemTime,
    ) -> Option<Stored> {
        let mut links = Vec::new();
        let mut seen = HashSet::new();
        let mut next = Some(id.to_owned());
        while let Some(id) = next.take() {
            if links.len() >= MAX_CHAIN || !seen.insert(id.clone()) {
                return None;
            }
            let path = self.path(&id)?;
            if expired(&path, retention, now) {
                return None;
            }
            let bytes = read_bounded(&path, MAX_FILE_BYTES).ok()??;
            let file = StoredFile::from_json(&bytes)?;
            if !self.owned_by(&file, namespace) {
                return None;
            }
            next = file.previous.clone();
            links.push((path, file));
        }
        // Used now: the whole chain is kept for another retention.
        for (path, _) in &links {
            touch(path, now);
        }
        let (_, head) = links.first()?;
        let stored = Stored {
            hint: head.hint.clone(),
            system_prompt: head.system_prompt.clone(),
            messages: Vec::new(),
        };
        Some(
            links
                .into_iter()
                .rev()
                .fold(stored, |mut stored, (_, file)| {
                    stored.messages.extend(file.messages);
                    stored
                }),
        )
    }

    /// Stores `response` as `id`. A failure is logged (the answer itself went out). Blocks.
    pub(crate) fn save(&self, id: &str, response: &NewResponse<'_>) {
        let Some(path) = self.path(id) else { return };
        let (previous, from) = match response.previous {
            Some((previous, len)) if len <= response.messages.len() => {
                (Some(previous.to_owned()), len)
            }
            _ => (None, 0),
        };
        let file = StoredFile {
            v: 2,
            owner: Some(self.owner_of(response.namespace)),
            namespace: None,
            hint: response.hint.map(str::to_owned),
            system_prompt: response.system_prompt.to_owned(),
            previous,
            messages: response.messages[from..].to_vec(),
        };
        let bytes = match serde_json::to_vec(&file) {
            Ok(bytes) => bytes,
            Err(error) => {
                tracing::warn!(response = id, %error, "could not encode the response");
                return;
            }
        };
        match replace_private(&path, &bytes, Durability::Atomic) {
            Ok(()) => {
                self.bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
            }
            Err(error) => tracing::warn!(response = id, %error, "could not store the response"),
        }
    }

    /// Whether the directory is past `cap` bytes by this process's count (a sweep is due).
    pub(crate) fn over(&self, cap: u64) -> bool {
        self.bytes.load(Ordering::Relaxed) > cap
    }

    /// Deletes responses unused for `retention`, then the least recently used until the rest
    /// fit in `cap` bytes, and temporary files a crash left. Blocks.
    pub(crate) fn sweep(&self, retention: Duration, cap: u64, now: SystemTime) -> ResponseSweep {
        let mut report = ResponseSweep::default();
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            self.bytes.store(0, Ordering::Relaxed);
            return report;
        };
        let mut kept: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let Ok(meta) = entry.metadata() else { continue };
            let modified = meta.modified().unwrap_or(now);
            let older_than =
                |age: Duration| now.duration_since(modified).is_ok_and(|old| old > age);
            if name.ends_with(".json") {
                if !older_than(retention) {
                    kept.push((modified, meta.len(), entry.path()));
                } else if std::fs::remove_file(entry.path()).is_ok() {
                    report.expired += 1;
                }
            } else if (is_temporary(&name) && older_than(Duration::from_secs(3600)))
                || name == ".swept"
            {
                // A crash's leftover, or the sweep marker of versions before 0.2.
                let _ = std::fs::remove_file(entry.path());
            }
        }
        let mut total: u64 = kept.iter().map(|(_, len, _)| len).sum();
        kept.sort_by_key(|(modified, _, _)| *modified);
        for (_, len, path) in kept {
            if total <= cap {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                total -= len;
                report.over_cap += 1;
            }
        }
        self.bytes.store(total, Ordering::Relaxed);
        report.bytes_left = total;
        report
    }
}

/// True when `path` was last used more than `age` before `now` (a missing file is not).
fn expired(path: &Path, age: Duration, now: SystemTime) -> bool {
    std::fs::metadata(path)
        .and_then(|meta| meta.modified())
        .is_ok_and(|modified| now.duration_since(modified).is_ok_and(|old| old > age))
}

/// Marks `path` as used at `now` (best effort).
fn touch(path: &Path, now: SystemTime) {
    if let Ok(file) = std::fs::File::options().write(true).open(path) {
        let _ = file.set_modified(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(86_400);

    fn store(dir: &Path) -> ResponseStore {
        ResponseStore::new(dir.to_owned(), StateSecret::fixed([9; 32]))
    }

    fn save(
        store: &ResponseStore,
        id: &str,
        previous: Option<(&str, usize)>,
        messages: &[Message],
    ) {
        store.save(
            id,
            &NewResponse {
                namespace: "k",
                hint: None,
                system_prompt: "sys",
                previous,
                messages,
            },
        );
    }

    #[test]
    fn a_chain_stores_each_message_once_and_loads_whole() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let mut transcript = vec![Message::user_text("u1"), Message::assistant_text("a1")];
        save(&store, "r1", None, &transcript);
        for n in 2..=20 {
            let before = transcript.len();
            transcript.push(Message::user_text(format!("u{n}")));
            transcript.push(Message::assistant_text(format!("a{n}")));
            save(
                &store,
                &format!("r{n}"),
                Some((&format!("r{}", n - 1), before)),
                &transcript,
            );
        }
        let now = SystemTime::now();
        let loaded = store.load("r20", "k", DAY, now).unwrap();
        assert_eq!(loaded.messages, transcript);
        assert_eq!(loaded.system_prompt, "sys");
        // Each file holds its own two messages, not the transcript so far.
        let last = std::fs::read(dir.path().join("r20.json")).unwrap();
        let file = StoredFile::from_json(&last).unwrap();
        assert_eq!(file.messages.len(), 2);
        assert!(store.load("r20", "other-key", DAY, now).is_none());
        let text = String::from_utf8(last).unwrap();
        assert!(
            !text.contains("\"k\""),
            "the namespace is never written: {text}"
        );
    }

    #[test]
    fn a_broken_or_looping_chain_is_not_served() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let transcript = vec![Message::user_text("u"), Message::assistant_text("a")];
        save(&store, "r1", None, &transcript);
        save(&store, "r2", Some(("r1", 2)), &transcript);
        std::fs::remove_file(dir.path().join("r1.json")).unwrap();
        assert!(store.load("r2", "k", DAY, SystemTime::now()).is_none());
        save(&store, "loop", Some(("loop", 0)), &transcript);
        assert!(store.load("loop", "k", DAY, SystemTime::now()).is_none());
        std::fs::write(dir.path().join("bad.json"), b"[1,2").unwrap();
        assert!(store.load("bad", "k", DAY, SystemTime::now()).is_none());
        assert!(store.load("../x", "k", DAY, SystemTime::now()).is_none());
    }

    #[test]
    fn responses_expire_unless_their_chain_is_used_and_the_oldest_go_over_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let transcript = vec![Message::user_text("u"), Message::assistant_text("a")];
        save(&store, "r1", None, &transcript);
        save(&store, "r2", Some(("r1", 2)), &transcript);
        save(&store, "lone", None, &transcript);
        let later = SystemTime::now() + 20 * DAY;
        // Used at day 20: the chain r2 -> r1 is kept another 30 days; `lone` is not.
        assert!(store.load("r2", "k", 30 * DAY, later).is_some());
        let report = store.sweep(30 * DAY, u64::MAX, later + 15 * DAY);
        assert_eq!(report.expired, 1, "{report:?}");
        assert!(!dir.path().join("lone.json").exists());
        assert!(store.load("r2", "k", 30 * DAY, later + 15 * DAY).is_some());
        let report = store.sweep(30 * DAY, 1, later + 15 * DAY);
        assert_eq!(report.over_cap, 2);
        assert_eq!(report.bytes_left, 0);
    }

    #[test]
    fn files_of_earlier_versions_still_load_for_their_own_key() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path()).unwrap();
        let legacy = serde_json::json!({
            "namespace": "k", "hint": null, "system_prompt": "s",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
        });
        std::fs::write(dir.path().join("old.json"), legacy.to_string()).unwrap();
        let store = store(dir.path());
        assert_eq!(
            store
                .load("old", "k", DAY, SystemTime::now())
                .unwrap()
                .messages
                .len(),
            1
        );
        assert!(store.load("old", "j", DAY, SystemTime::now()).is_none());
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// A chain of any length, of any texts, loads back as the transcript it stored; any
        /// bytes in its place are refused without a panic.
        #[test]
        fn a_chain_loads_back_whole_and_any_bytes_are_refused(
            turns in proptest::collection::vec(("\\PC{0,20}", "\\PC{0,20}"), 1..8),
            bytes in proptest::collection::vec(any::<u8>(), 0..200),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let store = ResponseStore::new(dir.path().to_owned(), StateSecret::fixed([1; 32]));
            let mut transcript = Vec::new();
            let mut previous: Option<String> = None;
            for (n, (user, answer)) in turns.iter().enumerate() {
                let before = transcript.len();
                transcript.push(Message::user_text(user.clone()));
                transcript.push(Message::assistant_text(answer.clone()));
                let id = format!("r{n}");
                store.save(&id, &NewResponse {
                    namespace: "k",
                    hint: None,
                    system_prompt: "s",
                    previous: previous.as_deref().map(|p| (p, before)),
                    messages: &transcript,
                });
                previous = Some(id);
            }
            let last = previous.unwrap();
            let loaded = store.load(&last, "k", Duration::from_secs(60), SystemTime::now()).unwrap();
            prop_assert_eq!(loaded.messages, transcript);
            let _ = StoredFile::from_json(&bytes);
        }
    }
}
