//! Responses kept for `previous_response_id`: each completed answer of a request that did not
//! say `store: false`, as the whole transcript it ended with and the scope it belongs to, in
//! `state/responses/<id>.json` (written to a temporary file, then renamed).

use std::path::{Path, PathBuf};

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
pub(crate) fn load(state: &Path, id: &str, namespace: &str) -> Result<Stored, ApiError> {
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
    let text = std::fs::read(&path).map_err(|_| unknown())?;
    let stored: Stored = serde_json::from_slice(&text).map_err(|_| unknown())?;
    if stored.namespace != namespace {
        return Err(unknown());
    }
    Ok(stored)
}

/// Writes `stored` as response `id`; a failure is logged (the answer itself went out).
pub(crate) fn save(state: &Path, id: &str, stored: &Stored) {
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
}
