//! What one RunInference turn is about: the model, the ids, the output budget.

use std::time::Duration;

use crate::InferenceError;

/// How long the server may take to answer the run request with `run_ready` (the default of
/// [`InferenceTimers::run_ready`](crate::InferenceTimers::run_ready)).
pub const RUN_READY_TIMEOUT: Duration = Duration::from_secs(65);
/// How long the model may take to produce its first token after the invocation.
pub const FIRST_TOKEN_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the stream may stay without a work frame once tokens flow. Heartbeats do not
/// count: they prove the connection, not progress.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// The longest any watchdog may be: past an hour is a unit mistake, not a wish.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);

/// The watchdogs of one turn (docs/PROTOCOL.md §6.3).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InferenceTimers {
    /// How long the server may take to answer the run request with `run_ready` (65 s).
    pub run_ready: Duration,
    /// How long the model may take to produce its first token (30 s).
    pub first_token: Duration,
    /// How long the stream may go without a work frame once tokens flow (120 s).
    pub idle: Duration,
}

impl Default for InferenceTimers {
    fn default() -> Self {
        Self {
            run_ready: RUN_READY_TIMEOUT,
            first_token: FIRST_TOKEN_TIMEOUT,
            idle: IDLE_TIMEOUT,
        }
    }
}

impl InferenceTimers {
    /// Checks that every watchdog is above zero and at most [`MAX_TIMEOUT`].
    ///
    /// # Errors
    ///
    /// [`InferenceError::Config`] naming the watchdog and its value.
    pub fn validate(&self) -> Result<(), InferenceError> {
        for (name, value) in [
            ("run_ready", self.run_ready),
            ("first_token", self.first_token),
            ("idle", self.idle),
        ] {
            if value.is_zero() || value > MAX_TIMEOUT {
                return Err(InferenceError::Config {
                    message: format!(
                        "the {name} timeout is {value:?}; it must be above zero and at most \
                         {MAX_TIMEOUT:?}"
                    ),
                });
            }
        }
        Ok(())
    }
}

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
    /// `requested_model.max_mode`: set when the model runs in max mode only (the catalog's
    /// `MaxMode::Required`), or when the host asks for it.
    pub max_mode: bool,
    /// Checked when set: see [`with_timers`](Self::with_timers).
    timers: InferenceTimers,
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
            max_mode: false,
            timers: InferenceTimers::default(),
        }
    }

    /// The turn's watchdogs.
    pub fn timers(&self) -> InferenceTimers {
        self.timers
    }

    /// Sets the watchdogs.
    ///
    /// # Errors
    ///
    /// [`InferenceError::Config`] when a value is zero or absurd ([`InferenceTimers::validate`]);
    /// the config is not changed.
    pub fn with_timers(mut self, timers: InferenceTimers) -> Result<Self, InferenceError> {
        timers.validate()?;
        self.timers = timers;
        Ok(self)
    }

    /// Sets `requested_model.max_mode`.
    #[must_use]
    pub fn with_max_mode(mut self, max_mode: bool) -> Self {
        self.max_mode = max_mode;
        self
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
    fn timers_are_settable_and_zero_or_absurd_ones_are_config_errors() {
        let config = InferenceConfig::with_ids("m", "c", "i");
        assert_eq!(config.timers(), InferenceTimers::default());
        let short = InferenceTimers {
            first_token: Duration::from_secs(5),
            ..InferenceTimers::default()
        };
        let config = config.with_timers(short).unwrap();
        assert_eq!(config.timers().first_token, Duration::from_secs(5));
        for bad in [
            InferenceTimers {
                idle: Duration::ZERO,
                ..short
            },
            InferenceTimers {
                run_ready: Duration::from_secs(7200),
                ..short
            },
        ] {
            let error = config.clone().with_timers(bad).unwrap_err();
            assert!(matches!(error, InferenceError::Config { .. }), "{error:?}");
            assert_eq!(
                cursor_proto::ir::Classify::kind(&error),
                cursor_proto::ir::ErrorKind::Local
            );
        }
    }

    #[test]
    fn fresh_ids_are_distinct_version_4_uuids() {
        let a = fresh_id().unwrap();
        let b = fresh_id().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(a.as_bytes()[14], b'4');
    }
}
