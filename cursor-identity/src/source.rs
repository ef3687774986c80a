//! Where the adapters get their raw facts: files, directory listings and table commands.

use std::io;
use std::path::Path;

use crate::IdentityError;
use crate::command::{self, AllowedCommand};

/// The host facts the platform adapters read, behind one seam so tests can substitute fakes.
///
/// [`SystemSource`] is the real implementation. A fake can only be asked to "run" entries of
/// the allowed table, so tests exercise exactly the commands production would run.
pub trait HostSource {
    /// Reads a whole file as text. An absent file must be an error of kind
    /// [`io::ErrorKind::NotFound`], which adapters treat as "try the next source".
    fn read_to_string(&self, path: &Path) -> io::Result<String>;

    /// Lists the entry names of a directory (not full paths), in any order.
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>>;

    /// Runs one entry of the allowed command table and returns its stdout.
    fn run(&self, command: &'static AllowedCommand) -> Result<String, IdentityError>;
}

/// The real host: the file system and the allowed command table.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemSource;

impl HostSource for SystemSource {
    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        std::fs::read_to_string(path)
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        std::fs::read_dir(path)?
            .map(|entry| entry.map(|entry| entry.file_name().to_string_lossy().into_owned()))
            .collect()
    }

    fn run(&self, command: &'static AllowedCommand) -> Result<String, IdentityError> {
        command::run_allowed(command, command::COMMAND_TIMEOUT)
    }
}
