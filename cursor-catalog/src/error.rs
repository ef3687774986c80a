//! `CatalogError`: every failure of this crate, classified for the host.

use cursor_proto::ir::{Classify, ErrorInfo, ErrorKind, NextStep};
use cursor_transport::CursorError;

use crate::origin_source::AgentOriginSource;
use crate::{level::ThinkingLevel, rpc::Rpc, rpc::UsageRpc};

/// A catalog failure: what went wrong, its [`ErrorKind`] and the user's next step.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// A discovery call failed; the transport error carries the classification.
    #[error("{rpc} failed: {source}")]
    Rpc {
        /// Which call.
        rpc: Rpc,
        /// The classified transport failure.
        #[source]
        source: CursorError,
    },
    /// A usage call failed; the transport error carries the classification.
    #[error("{rpc} failed: {source}")]
    Usage {
        /// Which call.
        rpc: UsageRpc,
        /// The classified transport failure.
        #[source]
        source: CursorError,
    },
    /// The backend answered, but no usable model could be listed.
    #[error("Cursor listed no usable models ({usable} usable ids, none with catalog metadata)")]
    EmptyRoster {
        /// How many usable ids the account reported.
        usable: usize,
    },
    /// The model id is not in the catalog.
    #[error("unknown Cursor model {model_id:?}")]
    UnknownModel {
        /// The id asked for.
        model_id: String,
    },
    /// The family publishes no variant for this thinking level.
    #[error(
        "model {model_id:?} has no {level} thinking variant (it offers: {})",
        list_levels(supported)
    )]
    LevelUnsupported {
        /// The row id.
        model_id: String,
        /// The level asked for.
        level: ThinkingLevel,
        /// The levels the family offers.
        supported: Vec<ThinkingLevel>,
    },
    /// A persisted snapshot could not be read.
    #[error("catalog snapshot unreadable: {message}")]
    Snapshot {
        /// Why.
        message: String,
    },
    /// An agent origin is off the transport's allowlist.
    #[error("agent origin {origin:?} from {from} refused: {source}")]
    AgentOriginRefused {
        /// The origin as given.
        origin: String,
        /// Where it came from.
        from: AgentOriginSource,
        /// The transport's refusal.
        #[source]
        source: CursorError,
    },
}

impl CatalogError {
    pub(crate) fn rpc(rpc: Rpc, source: CursorError) -> Self {
        Self::Rpc { rpc, source }
    }

    pub(crate) fn usage(rpc: UsageRpc, source: CursorError) -> Self {
        Self::Usage { rpc, source }
    }
}

impl Classify for CatalogError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::Rpc { source, .. } | Self::Usage { source, .. } => source.kind(),
            Self::EmptyRoster { .. } => ErrorKind::RemoteRefusal,
            Self::UnknownModel { .. } | Self::LevelUnsupported { .. } | Self::Snapshot { .. } => {
                ErrorKind::Local
            }
            Self::AgentOriginRefused { from, .. } => match from {
                // Cursor naming a host we do not know is drift; a user override is local.
                AgentOriginSource::Discovered => ErrorKind::ProtocolDrift,
                _ => ErrorKind::Local,
            },
        }
    }

    fn next_step(&self) -> NextStep {
        match self {
            Self::Rpc { source, .. } | Self::Usage { source, .. } => source.next_step(),
            Self::EmptyRoster { .. } => NextStep::fix_config(
                "check that the Cursor account's plan includes models (cursor.com/dashboard), then refresh the model list",
            ),
            Self::UnknownModel { .. } | Self::LevelUnsupported { .. } => NextStep::PickModel,
            Self::Snapshot { .. } => NextStep::fix_local(
                "nothing: the stale snapshot is ignored and replaced by the next online refresh",
            ),
            Self::AgentOriginRefused { from, .. } => match from {
                AgentOriginSource::Override => NextStep::fix_config(
                    "set the agent origin override to https://agentn.api5.cursor.sh (or another agent host under api5.cursor.sh), or unset it",
                ),
                _ => NextStep::UpdateCrates,
            },
        }
    }

    fn connect_code(&self) -> Option<&str> {
        match self {
            Self::Rpc { source, .. }
            | Self::Usage { source, .. }
            | Self::AgentOriginRefused { source, .. } => source.connect_code(),
            _ => None,
        }
    }

    fn http_status(&self) -> Option<u16> {
        match self {
            Self::Rpc { source, .. }
            | Self::Usage { source, .. }
            | Self::AgentOriginRefused { source, .. } => source.http_status(),
            _ => None,
        }
    }
}

impl From<&CatalogError> for ErrorInfo {
    fn from(error: &CatalogError) -> Self {
        error.to_info()
    }
}

impl From<CatalogError> for ErrorInfo {
    fn from(error: CatalogError) -> Self {
        error.to_info()
    }
}

fn list_levels(levels: &[ThinkingLevel]) -> String {
    if levels.is_empty() {
        return "none".to_owned();
    }
    levels
        .iter()
        .map(|l| l.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rpc_failures_keep_the_transport_classification() {
        let err = CatalogError::rpc(Rpc::AvailableModels, CursorError::network_msg("refused"));
        assert_eq!(err.kind(), ErrorKind::Network);
        assert_eq!(err.next_step(), CursorError::network_msg("x").next_step());
        assert!(
            err.to_string().starts_with("AvailableModels failed"),
            "{err}"
        );
        let drift = CatalogError::rpc(Rpc::GetUsableModels, CursorError::drift("garbage"));
        assert_eq!(drift.kind(), ErrorKind::ProtocolDrift);
    }

    #[test]
    fn refused_agent_origin_blames_its_source() {
        let refused =
            || cursor_transport::Origin::parse("https://agentx.api5.cursor.sh").unwrap_err();
        let discovered = CatalogError::AgentOriginRefused {
            origin: "https://agentx.api5.cursor.sh".into(),
            from: AgentOriginSource::Discovered,
            source: refused(),
        };
        let overridden = CatalogError::AgentOriginRefused {
            origin: "https://agentx.api5.cursor.sh".into(),
            from: AgentOriginSource::Override,
            source: refused(),
        };
        assert_eq!(discovered.kind(), ErrorKind::ProtocolDrift);
        assert_eq!(overridden.kind(), ErrorKind::Local);
        assert_ne!(discovered.next_step(), overridden.next_step());
    }

    #[test]
    fn level_errors_list_what_is_offered() {
        let err = CatalogError::LevelUnsupported {
            model_id: "grok-4.7".into(),
            level: ThinkingLevel::Max,
            supported: vec![ThinkingLevel::Low, ThinkingLevel::High],
        };
        let info = ErrorInfo::from(&err);
        assert_eq!(info.kind, ErrorKind::Local);
        assert!(
            info.message.contains("offers: low, high"),
            "{}",
            info.message
        );
        assert_eq!(info.next_step, NextStep::PickModel);
    }
}
