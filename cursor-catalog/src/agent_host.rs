//! Agent host discovery: `GetServerConfig.agent_url_config`, the env override, the allowlist.
//!
//! The right agent host depends on account and region; a wrong one answers 200 and closes at once
//! (docs/PROTOCOL.md §7). Every origin is checked by the transport's [`Origin::parse`]; a host
//! off the allowlist is an error, never replaced by a silent default.

use cursor_proto::aiserver::v1::GetServerConfigResponse;
use cursor_transport::Origin;

use crate::error::CatalogError;
use crate::origin_source::AgentOriginSource;

/// An agent origin and where it came from.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentOrigin {
    /// The allowlisted origin.
    pub origin: Origin,
    /// Its source.
    pub source: AgentOriginSource,
}

/// The agent origin `GetServerConfig` names for this account: `agent_url` in privacy mode,
/// `agentn_url` otherwise, the other one if the preferred one is empty.
///
/// `Ok(None)` when the response names no agent host; an error when it names one off the
/// allowlist. `use_nlb_for_nal` is not consulted: public clients that fixed the wrong-host
/// symptom use the named URL whenever it is present.
pub fn agent_origin_from_server_config(
    config: &GetServerConfigResponse,
    privacy_mode: bool,
) -> Result<Option<Origin>, CatalogError> {
    let Some(urls) = &config.agent_url_config else {
        return Ok(None);
    };
    let (preferred, other) = if privacy_mode {
        (&urls.agent_url, &urls.agentn_url)
    } else {
        (&urls.agentn_url, &urls.agent_url)
    };
    let chosen = [preferred, other]
        .into_iter()
        .map(|u| u.trim())
        .find(|u| !u.is_empty());
    chosen
        .map(|url| parse(url, AgentOriginSource::Discovered))
        .transpose()
}

/// Picks the agent origin: the override if given, else the discovered one, else the default.
///
/// Every candidate is checked against the allowlist; a refused override or discovered origin is
/// an error, not a fallback to the default.
pub fn resolve_agent_origin(
    override_origin: Option<&str>,
    discovered: Option<&str>,
) -> Result<AgentOrigin, CatalogError> {
    if let Some(value) = override_origin {
        return Ok(AgentOrigin {
            origin: parse(value, AgentOriginSource::Override)?,
            source: AgentOriginSource::Override,
        });
    }
    if let Some(value) = discovered {
        return Ok(AgentOrigin {
            origin: parse(value, AgentOriginSource::Discovered)?,
            source: AgentOriginSource::Discovered,
        });
    }
    Ok(AgentOrigin {
        origin: Origin::default_agent(),
        source: AgentOriginSource::Default,
    })
}

/// Only an override may name a loopback (plain http) origin; a discovered one may not.
fn parse(value: &str, from: AgentOriginSource) -> Result<Origin, CatalogError> {
    let parsed = match from {
        AgentOriginSource::Override => Origin::parse_override(value),
        AgentOriginSource::Discovered | AgentOriginSource::Default => Origin::parse(value),
    };
    parsed.map_err(|source| CatalogError::AgentOriginRefused {
        origin: value.to_owned(),
        from,
        source,
    })
}

#[cfg(test)]
mod tests {
    use cursor_proto::ir::Classify as _;
    use cursor_proto::{aiserver::v1::AgentUrlConfig, ir::ErrorKind};

    use super::*;

    fn config(agent: &str, agentn: &str) -> GetServerConfigResponse {
        GetServerConfigResponse {
            agent_url_config: Some(AgentUrlConfig {
                agent_url: agent.into(),
                agentn_url: agentn.into(),
            }),
            ..GetServerConfigResponse::default()
        }
    }

    #[test]
    fn privacy_mode_picks_the_agent_host_and_otherwise_agentn() {
        let both = config(
            "https://agent.global.api5.cursor.sh",
            "https://agentn.global.api5.cursor.sh/",
        );
        let private = agent_origin_from_server_config(&both, true)
            .unwrap()
            .unwrap();
        let open = agent_origin_from_server_config(&both, false)
            .unwrap()
            .unwrap();
        assert_eq!(private.host(), "agent.global.api5.cursor.sh");
        assert_eq!(open.host(), "agentn.global.api5.cursor.sh");
    }

    #[test]
    fn an_empty_preferred_url_falls_to_the_other_and_none_is_none() {
        let only_n = config("", "https://agentn.us.api5.cursor.sh");
        assert_eq!(
            agent_origin_from_server_config(&only_n, true).unwrap(),
            Some(Origin::default_agent())
        );
        assert_eq!(
            agent_origin_from_server_config(&config("", " "), false).unwrap(),
            None
        );
        assert_eq!(
            agent_origin_from_server_config(&GetServerConfigResponse::default(), false).unwrap(),
            None
        );
    }

    #[test]
    fn a_discovered_host_off_the_allowlist_is_an_error() {
        let off_list = config(
            "https://agent.a.b.api5.cursor.sh",
            "https://agentx.api5.cursor.sh",
        );
        let err = agent_origin_from_server_config(&off_list, false).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ProtocolDrift);
        let err =
            resolve_agent_origin(None, Some("http://agentn.us.api5.cursor.sh:80")).unwrap_err();
        assert!(matches!(
            err,
            CatalogError::AgentOriginRefused {
                from: AgentOriginSource::Discovered,
                ..
            }
        ));
    }

    #[test]
    fn override_beats_discovery_and_is_checked_too() {
        let picked = resolve_agent_origin(
            Some("http://127.0.0.1:9"),
            Some("https://agentn.global.api5.cursor.sh"),
        )
        .unwrap();
        assert_eq!(picked.source, AgentOriginSource::Override);
        assert_eq!(picked.origin, Origin::loopback(9));
        let err = resolve_agent_origin(Some("https://api3.cursor.sh"), None).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Local);
    }

    #[test]
    fn nothing_known_resolves_to_the_documented_default() {
        let picked = resolve_agent_origin(None, None).unwrap();
        assert_eq!(picked.source, AgentOriginSource::Default);
        assert_eq!(picked.origin, Origin::default_agent());
    }
}
