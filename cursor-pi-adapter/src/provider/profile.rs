//! pi as a host of the cursor crates: its [`HostProfile`] and the provider's environment
//! switches, read in one place.

use std::ffi::OsString;
use std::path::PathBuf;

use cursor_agent::HostProfile;

/// Where resume handles live, overriding the default under `$HOME`.
pub const HANDLE_DIR_ENV: &str = "CURSOR_PROVIDER_HANDLE_DIR";
/// `1`: re-send `mcp_tools` on every resume, even when the tool set is unchanged.
pub const RESEND_MCP_ENV: &str = "CURSOR_PROVIDER_RESEND_MCP_ON_RESUME";
/// `1`: write debug records of each turn.
pub const DEBUG_ENV: &str = "CURSOR_PROVIDER_DEBUG";
/// An allowlisted agent origin replacing the discovered one.
pub const AGENT_ORIGIN_ENV: &str = "CURSOR_PROVIDER_AGENT_ORIGIN";

/// The provider's environment switches (PROTOCOL-AGENT §5.1, §10).
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PiEnv {
    /// [`HANDLE_DIR_ENV`], else `$HOME/.config/pi/agent/cursor-provider/handles`; `None` when
    /// neither is set.
    pub handle_dir: Option<PathBuf>,
    /// [`RESEND_MCP_ENV`]` = 1`.
    pub resend_mcp_on_resume: bool,
    /// [`DEBUG_ENV`]` = 1`.
    pub debug: bool,
    /// Where debug records go when [`debug`](Self::debug) is on:
    /// `$HOME/.config/pi/agent/cursor-provider/debug.jsonl`, else beside the handles.
    pub debug_file: Option<PathBuf>,
    /// [`AGENT_ORIGIN_ENV`], trimmed; empty counts as unset.
    pub agent_origin: Option<String>,
}

impl PiEnv {
    /// Reads the process environment.
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var_os(name))
    }

    /// Reads the switches through `lookup` (tests pass their own).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> Self {
        let set = |name: &str| lookup(name).is_some_and(|v| v == "1");
        let base = lookup("HOME")
            .filter(|v| !v.is_empty())
            .map(|home| PathBuf::from(home).join(".config/pi/agent/cursor-provider"));
        let handle_dir = lookup(HANDLE_DIR_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| base.as_ref().map(|base| base.join("handles")));
        let debug_file = base
            .or_else(|| handle_dir.clone())
            .map(|dir| dir.join("debug.jsonl"));
        let agent_origin = lookup(AGENT_ORIGIN_ENV)
            .map(|v| v.to_string_lossy().trim().to_owned())
            .filter(|v| !v.is_empty());
        Self {
            handle_dir,
            resend_mcp_on_resume: set(RESEND_MCP_ENV),
            debug: set(DEBUG_ENV),
            debug_file,
            agent_origin,
        }
    }

    /// pi's host profile with these switches applied.
    pub fn profile(&self) -> HostProfile {
        let profile = pi_profile();
        match &self.handle_dir {
            Some(dir) => profile.with_handle_dir(dir),
            None => profile,
        }
    }
}

/// pi as Cursor and the model see it: client name `pi`, tools under the MCP provider `pi`
/// (`mcp_pi_<tool>`), and model-facing texts that speak of "pi's MCP tools".
pub fn pi_profile() -> HostProfile {
    HostProfile::new("pi")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_beats_home_and_flags_need_exactly_one() {
        let env = PiEnv::from_lookup(|name| match name {
            HANDLE_DIR_ENV => Some("/x/handles".into()),
            "HOME" => Some("/home/u".into()),
            RESEND_MCP_ENV => Some("1".into()),
            DEBUG_ENV => Some("true".into()),
            AGENT_ORIGIN_ENV => Some("  ".into()),
            _ => None,
        });
        assert_eq!(env.handle_dir, Some(PathBuf::from("/x/handles")));
        assert!(env.resend_mcp_on_resume);
        assert!(!env.debug);
        assert_eq!(env.agent_origin, None);
        let home = PiEnv::from_lookup(|name| (name == "HOME").then(|| "/home/u".into()));
        assert_eq!(
            home.handle_dir,
            Some(PathBuf::from(
                "/home/u/.config/pi/agent/cursor-provider/handles"
            ))
        );
        assert_eq!(home.profile().handle_dir, home.handle_dir);
        assert_eq!(
            home.debug_file,
            Some(PathBuf::from(
                "/home/u/.config/pi/agent/cursor-provider/debug.jsonl"
            ))
        );
    }

    #[test]
    fn the_pi_profile_keeps_the_names_cursor_has_always_seen() {
        let profile = pi_profile();
        assert_eq!(profile.host_name, "pi");
        assert_eq!(profile.tool_prefix(), "mcp_pi_");
    }
}
