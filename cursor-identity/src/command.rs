//! The one table of commands this crate may run, and the only code in it that spawns a process.
//!
//! Each entry is a fixed argv with an absolute program path, so neither input nor `PATH` can
//! change what runs. Children get an empty environment (no token can reach them), a null stdin,
//! and a time limit after which they are killed.

use std::io::Read;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::{IdentityError, Platform};

/// How long a table command may run before it is killed.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// More output than any identity tool prints; a child writing past it stalls and times out.
const MAX_OUTPUT_BYTES: u64 = 1 << 20;

/// How often the parent checks whether the child has exited.
const EXIT_POLL_INTERVAL: Duration = Duration::from_millis(5);

/// A command the identity adapters may run: a fixed argv, never assembled from input.
///
/// Values exist only as the statics of this module. The fields are private and there is no
/// constructor, so nothing outside the crate can make the spawn path run another program.
#[derive(Debug, PartialEq, Eq)]
pub struct AllowedCommand {
    platform: Platform,
    argv: &'static [&'static str],
}

impl AllowedCommand {
    /// The full argv; the first element is the program.
    pub fn argv(&self) -> &'static [&'static str] {
        self.argv
    }

    /// The program (the first argv element).
    pub fn program(&self) -> &'static str {
        self.argv.first().copied().unwrap_or("")
    }

    /// The platform whose adapter uses this command.
    pub fn platform(&self) -> Platform {
        self.platform
    }
}

/// macOS: the platform expert device, whose `IOPlatformUUID` is the hardware id.
pub static IOREG_PLATFORM_EXPERT: AllowedCommand = AllowedCommand {
    platform: Platform::Darwin,
    argv: &["/usr/sbin/ioreg", "-rd1", "-c", "IOPlatformExpertDevice"],
};

/// Windows: the installation's `MachineGuid` registry value. `REG` resolves from the system
/// directory, which Windows searches even with an empty environment.
pub static REG_QUERY_MACHINE_GUID: AllowedCommand = AllowedCommand {
    platform: Platform::Windows,
    argv: &[
        "REG",
        "QUERY",
        r"HKLM\SOFTWARE\Microsoft\Cryptography",
        "/v",
        "MachineGuid",
    ],
};

/// FreeBSD: the SMBIOS system UUID from the kernel environment.
pub static KENV_SYSTEM_UUID: AllowedCommand = AllowedCommand {
    platform: Platform::FreeBsd,
    argv: &["/bin/kenv", "-q", "smbios.system.uuid"],
};

/// FreeBSD fallback: the kernel's host UUID.
pub static SYSCTL_HOST_UUID: AllowedCommand = AllowedCommand {
    platform: Platform::FreeBsd,
    argv: &["/sbin/sysctl", "-n", "kern.hostuuid"],
};

/// Linux fallback, used only when neither machine-id file exists.
pub static HOSTNAME: AllowedCommand = AllowedCommand {
    platform: Platform::Linux,
    argv: &["/bin/hostname"],
};

/// Every command this crate may run. A host's command allowlist needs exactly these.
pub static ALLOWED_COMMANDS: &[&AllowedCommand] = &[
    &IOREG_PLATFORM_EXPERT,
    &REG_QUERY_MACHINE_GUID,
    &KENV_SYSTEM_UUID,
    &SYSCTL_HOST_UUID,
    &HOSTNAME,
];

/// Test-only entries: they let the tests observe the child's environment and the time limit
/// through the very same spawn path.
#[cfg(test)]
pub(crate) mod test_commands {
    use super::{AllowedCommand, Platform};

    /// Prints the child's environment, one `NAME=value` per line.
    pub(crate) static PRINT_ENV: AllowedCommand = AllowedCommand {
        platform: Platform::Linux,
        argv: &["/usr/bin/env"],
    };
    /// Outlives any test time limit.
    pub(crate) static SLEEP: AllowedCommand = AllowedCommand {
        platform: Platform::Linux,
        argv: &["/bin/sleep", "5"],
    };
    /// Exits with status 1.
    pub(crate) static FALSE: AllowedCommand = AllowedCommand {
        platform: Platform::Linux,
        argv: &["/bin/false"],
    };
    /// A program that does not exist.
    pub(crate) static MISSING: AllowedCommand = AllowedCommand {
        platform: Platform::Linux,
        argv: &["/nonexistent/cursor-identity-test-program"],
    };

    pub(crate) static ALL: &[&AllowedCommand] = &[&PRINT_ENV, &SLEEP, &FALSE, &MISSING];
}

fn is_allowed(command: &AllowedCommand) -> bool {
    let in_table = ALLOWED_COMMANDS
        .iter()
        .any(|entry| std::ptr::eq(*entry, command));
    #[cfg(test)]
    let in_table = in_table
        || test_commands::ALL
            .iter()
            .any(|entry| std::ptr::eq(*entry, command));
    in_table
}

/// Runs one table entry and returns its stdout (lossily decoded; ids are ASCII).
///
/// This is the only function in the crate that creates a process.
pub(crate) fn run_allowed(
    command: &'static AllowedCommand,
    timeout: Duration,
) -> Result<String, IdentityError> {
    let program = command.program();
    if !is_allowed(command) {
        return Err(IdentityError::CommandNotAllowed { program });
    }
    let args = command.argv.get(1..).unwrap_or_default();
    let mut child = Command::new(program)
        .args(args)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| IdentityError::Spawn { program, source })?;

    // Drain stdout on a thread so a chatty child cannot block on a full pipe while we wait.
    let stdout = child.stdout.take();
    let reader = thread::spawn(move || {
        let mut output = Vec::new();
        if let Some(stdout) = stdout {
            // A read error leaves partial output, which the parser then rejects.
            let _ = stdout.take(MAX_OUTPUT_BYTES).read_to_end(&mut output);
        }
        output
    });

    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                // Kill errors only mean the child already exited; wait reaps it either way.
                let _ = child.kill();
                let _ = child.wait();
                return Err(IdentityError::Timeout { program, timeout });
            }
            Ok(None) => thread::sleep(EXIT_POLL_INTERVAL),
            Err(source) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(IdentityError::Spawn { program, source });
            }
        }
    };
    // The reader only panics if allocation fails; treat that as empty output.
    let output = reader.join().unwrap_or_default();
    if !status.success() {
        return Err(IdentityError::CommandFailed {
            program,
            status: status.to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&output).into_owned())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn child_environment_is_empty_although_the_parent_has_variables() {
        // Cargo always gives the test process variables; the child must see none of them.
        assert!(
            std::env::var_os("CARGO_PKG_NAME").is_some(),
            "precondition: parent env is set"
        );
        let printed = run_allowed(&test_commands::PRINT_ENV, COMMAND_TIMEOUT).expect("env runs");
        assert_eq!(printed, "", "child saw environment variables: {printed:?}");
    }

    #[test]
    fn a_command_past_its_time_limit_is_killed_and_reported() {
        let started = Instant::now();
        let error = run_allowed(&test_commands::SLEEP, Duration::from_millis(100))
            .expect_err("sleep 5 must exceed 100 ms");
        assert!(
            matches!(
                error,
                IdentityError::Timeout {
                    program: "/bin/sleep",
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "the child was not killed promptly"
        );
    }

    #[test]
    fn a_failing_command_is_a_typed_error() {
        let error = run_allowed(&test_commands::FALSE, COMMAND_TIMEOUT).expect_err("false fails");
        assert!(matches!(
            error,
            IdentityError::CommandFailed {
                program: "/bin/false",
                ..
            }
        ));
    }

    #[test]
    fn a_missing_program_is_a_spawn_error() {
        let error = run_allowed(&test_commands::MISSING, COMMAND_TIMEOUT).expect_err("absent");
        assert!(matches!(error, IdentityError::Spawn { .. }), "{error:?}");
    }

    #[test]
    fn the_real_hostname_entry_prints_a_name() {
        let printed = run_allowed(&HOSTNAME, COMMAND_TIMEOUT).expect("hostname runs");
        assert!(!printed.trim().is_empty());
    }

    #[test]
    fn a_lookalike_command_outside_the_table_is_refused() {
        static LOOKALIKE: AllowedCommand = AllowedCommand {
            platform: Platform::Linux,
            argv: &["/bin/hostname"],
        };
        let error = run_allowed(&LOOKALIKE, COMMAND_TIMEOUT).expect_err("not a table entry");
        assert!(matches!(error, IdentityError::CommandNotAllowed { .. }));
    }
}

#[cfg(test)]
mod table_tests {
    use super::*;

    #[test]
    fn every_table_entry_has_a_program_with_an_absolute_path_or_a_windows_system_tool() {
        for entry in ALLOWED_COMMANDS {
            let program = entry.program();
            let absolute = program.starts_with('/');
            let windows_system_tool = entry.platform() == Platform::Windows && program == "REG";
            assert!(
                absolute || windows_system_tool,
                "{program} may be resolved through PATH"
            );
        }
    }
}
