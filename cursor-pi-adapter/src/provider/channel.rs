//! Which Cursor channel answers pi's turns, chosen once by `CURSOR_PROVIDER_CHANNEL`.

use cursor_proto::ir::{ErrorInfo, ErrorKind, NextStep};

use super::CHANNEL_ENV;

/// A Cursor channel. The choice is explicit: a failure on one never falls back to the other.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ChannelKind {
    /// `agent.v1.AgentService/Run`, the default.
    #[default]
    Agent,
    /// `aiserver.v1.InferenceService/RunInference`.
    Inference,
}

impl ChannelKind {
    /// The value `CURSOR_PROVIDER_CHANNEL` takes for this channel.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Agent => "agent",
            Self::Inference => "inference",
        }
    }

    /// Reads a value of `CURSOR_PROVIDER_CHANNEL`: unset or empty means [`ChannelKind::Agent`].
    ///
    /// # Errors
    ///
    /// A [`ErrorKind::Local`] error naming the accepted values for anything else (no guess,
    /// no fallback).
    pub fn parse(value: Option<&str>) -> Result<Self, ErrorInfo> {
        match value.map(str::trim) {
            None | Some("") => Ok(Self::Agent),
            Some(value) if value.eq_ignore_ascii_case("agent") => Ok(Self::Agent),
            Some(value) if value.eq_ignore_ascii_case("inference") => Ok(Self::Inference),
            Some(other) => Err(ErrorInfo::new(
                ErrorKind::Local,
                format!("{CHANNEL_ENV}={other:?} names no Cursor channel"),
                NextStep::fix_config(format!(
                    "set {CHANNEL_ENV} to agent or inference, or unset it for agent"
                )),
            )),
        }
    }

    /// Reads `CURSOR_PROVIDER_CHANNEL` from this process's environment.
    ///
    /// # Errors
    ///
    /// As [`ChannelKind::parse`]; a value that is not UTF-8 is refused the same way.
    pub fn from_env() -> Result<Self, ErrorInfo> {
        match std::env::var(CHANNEL_ENV) {
            Ok(value) => Self::parse(Some(&value)),
            Err(std::env::VarError::NotPresent) => Self::parse(None),
            Err(std::env::VarError::NotUnicode(_)) => Self::parse(Some("<not UTF-8>")),
        }
    }
}

impl std::fmt::Display for ChannelKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_or_empty_selects_the_agent_channel() {
        assert_eq!(ChannelKind::parse(None), Ok(ChannelKind::Agent));
        assert_eq!(ChannelKind::parse(Some(" ")), Ok(ChannelKind::Agent));
    }

    #[test]
    fn both_channel_names_parse_regardless_of_case() {
        assert_eq!(ChannelKind::parse(Some("agent")), Ok(ChannelKind::Agent));
        assert_eq!(
            ChannelKind::parse(Some("Inference")),
            Ok(ChannelKind::Inference)
        );
    }

    #[test]
    fn an_unknown_channel_is_a_local_error_naming_the_choices() {
        let error = ChannelKind::parse(Some("auto")).unwrap_err();
        assert_eq!(error.kind, ErrorKind::Local);
        assert!(error.message.contains("\"auto\""), "{}", error.message);
        assert!(
            error.next_step.to_string().contains("agent or inference"),
            "{}",
            error.next_step
        );
    }
}
