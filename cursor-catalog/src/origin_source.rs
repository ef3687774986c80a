//! Where an agent origin came from (named by errors and by discovery alike).

/// Where an agent origin came from.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AgentOriginSource {
    /// An explicit override from the caller (a host's setting).
    Override,
    /// `GetServerConfig`, live or from the snapshot.
    Discovered,
    /// Nothing discovered yet: the documented default ([`Origin::default_agent`](cursor_transport::Origin::default_agent)).
    Default,
}

impl std::fmt::Display for AgentOriginSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Override => "the override",
            Self::Discovered => "GetServerConfig",
            Self::Default => "the built-in default",
        })
    }
}
