//! pi as a host of the cursor crates: its [`HostProfile`] and the provider's environment
//! switches, read in one place.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use cursor_agent::{HostProfile, MAX_TIMER, Timers};
use cursor_proto::ir::{ErrorInfo, ErrorKind, NextStep};
use cursor_transport::CliIdentity;

/// Where resume handles live, overriding the default under `$HOME`.
pub const HANDLE_DIR_ENV: &str = "CURSOR_PROVIDER_HANDLE_DIR";
/// `1`: re-send `mcp_tools` on every resume, even when the tool set is unchanged.
pub const RESEND_MCP_ENV: &str = "CURSOR_PROVIDER_RESEND_MCP_ON_RESUME";
/// `1`: write debug records of each turn.
pub const DEBUG_ENV: &str = "CURSOR_PROVIDER_DEBUG";
/// An allowlisted agent origin replacing the discovered one.
pub const AGENT_ORIGIN_ENV: &str = "CURSOR_PROVIDER_AGENT_ORIGIN";
/// Milliseconds a turn may go without a work frame before it fails (PROTOCOL-AGENT §1;
/// default 120 000). Heartbeats are not work.
pub const IDLE_MS_ENV: &str = "CURSOR_PROVIDER_IDLE_MS";
/// Milliseconds a leg may wait for its first work frame (PROTOCOL-AGENT §1; default 30 000).
pub const FIRST_TOKEN_MS_ENV: &str = "CURSOR_PROVIDER_FIRST_TOKEN_MS";
/// The `x-cursor-client-version` to send instead of the built-in one (PROTOCOL-AGENT §1), so a user
/// can follow Cursor's version floor without waiting for a release (docs/PROTOCOL-AGENT.md §12.4).
pub const CLI_VERSION_ENV: &str = "CURSOR_CLI_VERSION";

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
    /// [`IDLE_MS_ENV`] as written, trimmed; empty counts as unset. [`timers`](Self::timers)
    /// parses it.
    pub idle_ms: Option<String>,
    /// [`FIRST_TOKEN_MS_ENV`] as written, trimmed; empty counts as unset.
    pub first_token_ms: Option<String>,
    /// [`CLI_VERSION_ENV`] as written, trimmed; empty counts as unset.
    /// [`identity`](Self::identity) checks it.
    pub cli_version: Option<String>,
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
        let text = |name: &str| {
            lookup(name)
                .map(|v| v.to_string_lossy().trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        Self {
            handle_dir,
            resend_mcp_on_resume: set(RESEND_MCP_ENV),
            debug: set(DEBUG_ENV),
            debug_file,
            agent_origin: text(AGENT_ORIGIN_ENV),
            idle_ms: text(IDLE_MS_ENV),
            first_token_ms: text(FIRST_TOKEN_MS_ENV),
            cli_version: text(CLI_VERSION_ENV),
        }
    }

    /// The CLI identity of every Cursor call: [`CLI_VERSION_ENV`] when set, the built-in
    /// version otherwise.
    ///
    /// # Errors
    ///
    /// A local error naming the variable when its value is not a Cursor CLI version.
    pub fn identity(&self) -> Result<CliIdentity, ErrorInfo> {
        let Some(version) = &self.cli_version else {
            return Ok(CliIdentity::default());
        };
        CliIdentity::parse(version).map_err(|error| {
            ErrorInfo::new(
                ErrorKind::Local,
                format!("{CLI_VERSION_ENV}: {error}"),
                NextStep::fix_config(format!(
                    "set {CLI_VERSION_ENV} to a Cursor CLI version such as {}, or unset it",
                    cursor_transport::headers::DEFAULT_CLI_VERSION
                )),
            )
        })
    }

    /// The Run timers: cursor-agent's defaults with [`IDLE_MS_ENV`] and [`FIRST_TOKEN_MS_ENV`]
    /// applied. The client heartbeats (15 s, exec 3 s) are lowered to half the shorter of the
    /// two timeouts when that is less, so they keep beating inside the silences they guard.
    ///
    /// # Errors
    ///
    /// A local error naming the variable when a value is not a whole number of milliseconds
    /// between 1 and one hour.
    pub fn timers(&self) -> Result<Timers, ErrorInfo> {
        let mut timers = Timers::default();
        if let Some(idle) = millis(IDLE_MS_ENV, self.idle_ms.as_deref())? {
            timers.idle_timeout = idle;
        }
        if let Some(first) = millis(FIRST_TOKEN_MS_ENV, self.first_token_ms.as_deref())? {
            timers.first_frame_timeout = first;
        }
        let half = timers.idle_timeout.min(timers.first_frame_timeout) / 2;
        timers.heartbeat_interval = timers.heartbeat_interval.min(half);
        timers.exec_heartbeat_interval = timers.exec_heartbeat_interval.min(half);
        timers.validate().map_err(|error| {
            timer_error(format!(
                "{IDLE_MS_ENV} and {FIRST_TOKEN_MS_ENV} give invalid timers: {error}"
            ))
        })?;
        Ok(timers)
    }
}

/// A timeout in whole milliseconds, `None` when unset.
fn millis(name: &str, raw: Option<&str>) -> Result<Option<Duration>, ErrorInfo> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    let max = MAX_TIMER.as_millis();
    match raw.parse::<u64>() {
        Ok(ms) if ms > 0 && u128::from(ms) <= max => Ok(Some(Duration::from_millis(ms))),
        _ => Err(timer_error(format!(
            "{name}={raw} is not a whole number of milliseconds between 1 and {max}"
        ))),
    }
}

fn timer_error(message: String) -> ErrorInfo {
    ErrorInfo::new(
        ErrorKind::Local,
        message,
        NextStep::fix_config(format!(
            "set {IDLE_MS_ENV} and {FIRST_TOKEN_MS_ENV} to milliseconds between 1 and {} \
             (or unset them for 120000 and 30000)",
            MAX_TIMER.as_millis()
        )),
    )
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
        assert_eq!(
            home.debug_file,
            Some(PathBuf::from(
                "/home/u/.config/pi/agent/cursor-provider/debug.jsonl"
            ))
        );
    }

    fn env_with(pairs: &[(&str, &str)]) -> PiEnv {
        PiEnv::from_lookup(crate::provider::test_env::lookup(pairs))
    }

    #[test]
    fn timeouts_come_from_the_environment_and_pull_the_heartbeats_inside_them() {
        assert_eq!(env_with(&[]).timers(), Ok(Timers::default()));
        let timers = env_with(&[(IDLE_MS_ENV, " 90000 "), (FIRST_TOKEN_MS_ENV, "4000")])
            .timers()
            .unwrap();
        assert_eq!(timers.idle_timeout, Duration::from_secs(90));
        assert_eq!(timers.first_frame_timeout, Duration::from_secs(4));
        assert_eq!(timers.heartbeat_interval, Duration::from_secs(2));
        assert_eq!(timers.exec_heartbeat_interval, Duration::from_secs(2));
        let long = env_with(&[(IDLE_MS_ENV, "3600000")]).timers().unwrap();
        assert_eq!(long.heartbeat_interval, Duration::from_secs(15));
    }

    #[test]
    fn bad_timeouts_are_a_local_error_naming_the_variable_and_the_fix() {
        for (name, value) in [
            (IDLE_MS_ENV, "abc"),
            (IDLE_MS_ENV, "0"),
            (FIRST_TOKEN_MS_ENV, "3600001"),
            (FIRST_TOKEN_MS_ENV, "-5"),
            (FIRST_TOKEN_MS_ENV, "1.5"),
        ] {
            let error = env_with(&[(name, value)]).timers().unwrap_err();
            assert_eq!(error.kind, ErrorKind::Local);
            assert!(
                error.message.contains(&format!("{name}={value}")),
                "{error:?}"
            );
            assert!(
                matches!(&error.next_step, NextStep::FixConfig { detail } if detail.contains(name)),
                "{error:?}"
            );
        }
    }

    #[test]
    fn the_cli_version_comes_from_the_environment_and_is_checked() {
        let default = env_with(&[]).identity().unwrap();
        assert_eq!(default, CliIdentity::default());
        let raised = env_with(&[(CLI_VERSION_ENV, " cli-2027.01.02-abcdef0 ")])
            .identity()
            .unwrap();
        assert_eq!(raised.client_version, "cli-2027.01.02-abcdef0");
        let bad = env_with(&[(CLI_VERSION_ENV, "2027.1")])
            .identity()
            .unwrap_err();
        assert_eq!(bad.kind, ErrorKind::Local);
        assert!(bad.message.contains(CLI_VERSION_ENV), "{bad:?}");
        assert!(
            matches!(&bad.next_step, NextStep::FixConfig { detail } if detail.contains(CLI_VERSION_ENV)),
            "{bad:?}"
        );
    }

    #[test]
    fn the_pi_profile_keeps_the_names_cursor_has_always_seen() {
        let profile = pi_profile();
        assert_eq!(profile.host_name, "pi");
        assert_eq!(profile.tool_prefix(), "mcp_pi_");
    }
}
