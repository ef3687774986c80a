//! The configuration file (`--config FILE`): TOML whose keys are the long flag names. It holds
//! no secret: client and admin keys come from the files it names, or from the environment.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Deserialize;

use super::LogFormatName;

/// What a configuration file may set; every key is optional, an unknown key is an error.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct FileConfig {
    pub(crate) listen: Option<String>,
    pub(crate) admin_listen: Option<String>,
    pub(crate) state: Option<PathBuf>,
    pub(crate) api_key_file: Option<PathBuf>,
    pub(crate) api_keys_file: Option<PathBuf>,
    pub(crate) admin_key_file: Option<PathBuf>,
    pub(crate) agent_origin: Option<String>,
    pub(crate) api_origin: Option<String>,
    pub(crate) log_format: Option<LogFormatName>,
    pub(crate) header_timeout: Option<f64>,
    pub(crate) body_timeout: Option<f64>,
    pub(crate) write_timeout: Option<f64>,
    pub(crate) tool_round_timeout: Option<f64>,
    pub(crate) shutdown_grace: Option<f64>,
    pub(crate) ping_interval: Option<f64>,
    pub(crate) response_retention: Option<f64>,
    pub(crate) conversation_retention: Option<f64>,
    pub(crate) sweep_interval: Option<f64>,
    pub(crate) body_wait: Option<f64>,
    pub(crate) model_alias: Option<Vec<String>>,
    pub(crate) max_connections: Option<u64>,
    pub(crate) max_connections_per_peer: Option<u64>,
    pub(crate) max_turns: Option<u64>,
    pub(crate) max_turns_per_key: Option<u64>,
    pub(crate) max_conversations: Option<u64>,
    pub(crate) max_parked_rounds: Option<u64>,
    pub(crate) max_parked_per_key: Option<u64>,
    pub(crate) max_body_bytes: Option<u64>,
    pub(crate) body_budget: Option<u64>,
    pub(crate) max_stored_response_bytes: Option<u64>,
}

impl FileConfig {
    /// Parses `text` (the file at `path`, for messages).
    pub(crate) fn parse(text: &str, path: &std::path::Path) -> Result<Self, String> {
        toml::from_str(text).map_err(|e| format!("--config {}: {e}", path.display()))
    }

    /// A listen address written in the file.
    pub(crate) fn address(value: Option<&str>, key: &str) -> Result<Option<SocketAddr>, String> {
        value
            .map(|text| {
                super::parse_listen(text).map_err(|e| format!("{key} in the config file: {e}"))
            })
            .transpose()
    }
}
