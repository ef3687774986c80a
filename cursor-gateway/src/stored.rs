//! Responses kept for `previous_response_id`: each completed answer of a request that did not
//! say `store: false`, as the whole transcript it ended with and the scope it belongs to, in
//! `state/responses/<id>.json` (written to a temporary file, then renamed).
//!
//! They expire: one older than the retention (`--response-retention`, by the file's
//! modification time) is not served, and a save sweeps the directory of expired files at most
//! once an hour (the `.swept` file's time says when, so processes sharing a state directory
//! share the schedule).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use cursor_agent::ir::Message;
use serde::{Deserialize, Serialize};

use crate::ApiError;

/// One stored response.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Stored {
    /// The client key's namespace: another key's request cannot continue it.
    pub(crate) namespace: String,
    pub(crate) hint: Option<String>,
    /// Without a response format's instruction (each request states its own).
    pub(crate) system_prompt: String,
    /// The transcript, the answer's assistant message last.
    pub(crate) messages: Vec<Message>,
}

fn path(state: &Path, id: &str) -> Option<PathBuf> {
    let safe = !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    safe.then(|| state.join("responses").join(format!("{id}.json")))
}

/// The stored response `id` of `namespace`. Unknown, `store: false` (never written) and
/// another key's are the same 400, so a key learns nothing of another's responses.
pub(crate) fn load(
    state: &Path,
    id: &str,
    namespace: &str,
    retention: Duration,
) -> Result<Stored, ApiError> {
    let unknown = || {
        ApiError::bad_request(
            "previous_response_not_found",
            format!(
                "previous_response_id: no stored response {id} for this key (responses sent with \
                 store: false are never stored); send the whole conversation in `input` instead"
            ),
        )
        .with_param("previous_response_id")
    };
    let path = path(state, id).ok_or_else(unknown)?;
    if expired(&path, retention, SystemTime::now()) {
        let _ = std::fs::remove_file(&path);
        return Err(unknown());
    }
    let text = std::fs::read(&path).map_err(|_| unknown())?;
    let stored: Stored = serde_json::from_slice(&text).map_err(|_| unknown())?;
    if stored.namespace != namespace {
        return Err(unknown());
    }
    Ok(stored)
}

/// Writes `stored` as response `id`, then sweeps expired ones when the last sweep is an hour
/// old; a failure is logged (the answer itself went out).
pub(crate) fn save(state: &Path, id: &str, stored: &Stored, retention: Duration) {
    let Some(path) = path(state, id) else { return };
    let write = || -> std::io::Result<()> {
        let dir = state.join("responses");
        std::fs::create_dir_all(&dir)?;
        let temp = dir.join(format!(".{id}.tmp"));
        std::fs::write(
            &temp,
            serde_json::to_vec(stored).map_err(std::io::Error::other)?,
        )?;
        std::fs::rename(&temp, &path)
    };
    if let Err(error) = write() {
        tracing::warn!(response = id, %error, "could not store the response");
    }
    let dir = state.join("responses");
    let now = SystemTime::now();
    let marker = dir.join(".swept");
    if expired(&marker, SWEEP_EVERY, now) || !marker.exists() {
        let _ = std::fs::write(&marker, b"");
        let removed = sweep(&dir, retention, now);
        if removed > 0 {
            tracing::info!(removed, "expired stored responses deleted");
        }
    }
}

/// How often a save sweeps the directory.
const SWEEP_EVERY: Duration = Duration::from_secs(3600);

/// True when `path` was last modified more than `age` before `now` (a missing file is not).
fn expired(path: &Path, age: Duration, now: SystemTime) -> bool {
    std::fs::metadata(path)
        .and_then(|meta| meta.modified())
        .is_ok_and(|modified| now.duration_since(modified).is_ok_and(|old| old > age))
}

/// Deletes the stored responses (and temporary files a crash left) in `dir` older than
/// `retention`; returns how many.
fn sweep(dir: &Path, retention: Duration, now: SystemTime) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            (name.ends_with(".json") || name.ends_with(".tmp")) && expired(path, retention, now)
        })
        .filter(|path| std::fs::remove_file(path).is_ok())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(namespace: &str) -> Stored {
        Stored {
            namespace: namespace.into(),
            hint: None,
            system_prompt: String::new(),
            messages: vec![Message::user_text("hi")],
        }
    }

    fn age(path: &Path, by: Duration) {
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(SystemTime::now() - by).unwrap();
    }

    #[test]
    fn a_response_past_its_retention_is_not_served_and_is_deleted() {
        let state = tempfile::tempdir().unwrap();
        let day = Duration::from_secs(86_400);
        save(state.path(), "resp_a", &stored("k"), day);
        assert!(load(state.path(), "resp_a", "k", day).is_ok());
        assert!(load(state.path(), "resp_a", "other-key", day).is_err());
        let file = state.path().join("responses/resp_a.json");
        age(&file, 2 * day);
        assert!(load(state.path(), "resp_a", "k", day).is_err());
        assert!(!file.exists());
    }

    #[test]
    fn a_save_sweeps_expired_responses_at_most_once_an_hour() {
        let state = tempfile::tempdir().unwrap();
        let day = Duration::from_secs(86_400);
        let dir = state.path().join("responses");
        save(state.path(), "old", &stored("k"), day);
        age(&dir.join("old.json"), 2 * day);
        // The first save swept a moment ago: the old file stays until the hour passed.
        save(state.path(), "new", &stored("k"), day);
        assert!(dir.join("old.json").exists());
        age(&dir.join(".swept"), SWEEP_EVERY + Duration::from_secs(1));
        save(state.path(), "newer", &stored("k"), day);
        assert!(!dir.join("old.json").exists());
        assert!(dir.join("new.json").exists() && dir.join("newer.json").exists());
    }
}
