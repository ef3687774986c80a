//! What one RunInference turn is about: the model, the ids, the output budget.

use crate::InferenceError;

/// The settings of one turn.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InferenceConfig {
    /// The model slug sent as `requested_model.model_id`, with no effort or context
    /// parameters (an effort slug there is answered `not_found`).
    pub model_id: String,
    /// The run's `conversation_id`: the key the server routes the run by.
    pub conversation_id: String,
    /// The `invocation_id` of the turn's one model call.
    pub invocation_id: String,
    /// `model_config.max_tokens`, when the host sets an output budget.
    pub max_tokens: Option<u32>,
}

impl InferenceConfig {
    /// A config for `model_id` with fresh random conversation and invocation ids.
    ///
    /// # Errors
    ///
    /// [`InferenceError::InvalidRequest`] when the system has no randomness to offer.
    pub fn new(model_id: impl Into<String>) -> Result<Self, InferenceError> {
        Ok(Self::with_ids(model_id, fresh_id()?, fresh_id()?))
    }

    /// A config with the given ids (tests, or hosts that keep their own).
    pub fn with_ids(
        model_id: impl Into<String>,
        conversation_id: impl Into<String>,
        invocation_id: impl Into<String>,
    ) -> Self {
        Self {
            model_id: model_id.into(),
            conversation_id: conversation_id.into(),
            invocation_id: invocation_id.into(),
            max_tokens: None,
        }
    }

    /// Sets the output budget.
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }
}

/// A random version-4 UUID in its usual text form.
///
/// # Errors
///
/// [`InferenceError::InvalidRequest`] when the system has no randomness to offer.
pub fn fresh_id() -> Result<String, InferenceError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|error| InferenceError::invalid(format!("no randomness for an id: {error}")))?;
    Ok(cursor_proto::uuid::v4_from_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_ids_are_distinct_version_4_uuids() {
        let a = fresh_id().unwrap();
        let b = fresh_id().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(a.as_bytes()[14], b'4');
    }
}
