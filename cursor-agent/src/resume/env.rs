//! The environment switches of resume, read in one place callers can bypass.

use std::ffi::OsString;
use std::path::PathBuf;

/// Resume settings from the environment (PROTOCOL-AGENT §5.1, §10).
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResumeEnv {
    /// Where handles live: `CURSOR_PROVIDER_HANDLE_DIR`, else
    /// `$HOME/.config/pi/agent/cursor-provider/handles`; `None` when neither is set.
    pub handle_dir: Option<PathBuf>,
    /// `CURSOR_PROVIDER_RESEND_MCP_ON_RESUME=1`: always re-send `mcp_tools` on resume.
    pub resend_mcp_on_resume: bool,
    /// `CURSOR_PROVIDER_DEBUG=1`: emit [`Plan::debug_record`](crate::Plan::debug_record)s.
    pub debug: bool,
}

impl ResumeEnv {
    /// Reads the process environment.
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var_os(name))
    }

    /// Reads the settings through `lookup` (tests and embedders pass their own).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> Self {
        let set = |name: &str| lookup(name).is_some_and(|v| v == "1");
        let handle_dir = lookup("CURSOR_PROVIDER_HANDLE_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                lookup("HOME").filter(|v| !v.is_empty()).map(|home| {
                    PathBuf::from(home).join(".config/pi/agent/cursor-provider/handles")
                })
            });
        Self {
            handle_dir,
            resend_mcp_on_resume: set("CURSOR_PROVIDER_RESEND_MCP_ON_RESUME"),
            debug: set("CURSOR_PROVIDER_DEBUG"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_beats_home_and_flags_need_exactly_one() {
        let env = ResumeEnv::from_lookup(|name| match name {
            "CURSOR_PROVIDER_HANDLE_DIR" => Some("/x/handles".into()),
            "HOME" => Some("/home/u".into()),
            "CURSOR_PROVIDER_RESEND_MCP_ON_RESUME" => Some("1".into()),
            "CURSOR_PROVIDER_DEBUG" => Some("true".into()),
            _ => None,
        });
        assert_eq!(env.handle_dir, Some(PathBuf::from("/x/handles")));
        assert!(env.resend_mcp_on_resume);
        assert!(!env.debug);
        let home = ResumeEnv::from_lookup(|name| (name == "HOME").then(|| "/home/u".into()));
        assert_eq!(
            home.handle_dir,
            Some(PathBuf::from(
                "/home/u/.config/pi/agent/cursor-provider/handles"
            ))
        );
    }
}
