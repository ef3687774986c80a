//! The identity cache keeps the first success and never a failure.

use std::cell::Cell;
use std::io;
use std::path::Path;

use cursor_identity::{AllowedCommand, HostSource, IdentityCache, IdentityError, Platform};

/// A Linux host whose machine-id file appears after `absent_reads` reads.
struct AppearingMachineId {
    reads: Cell<u32>,
    absent_reads: u32,
}

impl HostSource for AppearingMachineId {
    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        if path != Path::new("/etc/machine-id") {
            return Err(io::ErrorKind::NotFound.into());
        }
        self.reads.set(self.reads.get() + 1);
        if self.reads.get() <= self.absent_reads {
            Err(io::ErrorKind::NotFound.into())
        } else {
            Ok(format!("id-{}\n", self.reads.get()))
        }
    }
    fn list_dir(&self, _path: &Path) -> io::Result<Vec<String>> {
        Err(io::ErrorKind::NotFound.into())
    }
    fn run(&self, command: &'static AllowedCommand) -> Result<String, IdentityError> {
        Err(IdentityError::CommandFailed {
            program: command.program(),
            status: "1".into(),
        })
    }
}

#[test]
fn a_failure_is_not_cached_and_the_first_success_is() {
    let cache = IdentityCache::new();
    let host = AppearingMachineId {
        reads: Cell::new(0),
        absent_reads: 1,
    };
    assert!(cache.get_or_resolve(Platform::Linux, &host).is_err());
    let first = cache
        .get_or_resolve(Platform::Linux, &host)
        .unwrap()
        .clone();
    let second = cache.get_or_resolve(Platform::Linux, &host).unwrap();
    assert_eq!(&first, second);
    assert_eq!(
        host.reads.get(),
        2,
        "the cached success must not read the source again"
    );
}
