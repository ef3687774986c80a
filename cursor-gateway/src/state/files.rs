//! Files the gateway keeps: private from the moment they exist, and replaced atomically.
//!
//! Directories are created mode 0700 and files mode 0600 by the call that creates them (never
//! created open and tightened afterwards, which leaves a window in which another local user can
//! open them). A file is replaced by writing a temporary file created with `create_new` beside
//! it and renaming it over the old one, so a reader sees the old contents or the new, never
//! half of either, and a leftover temporary from a crash is never reused.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Creates `dir` and its missing parents, each new one mode 0700.
pub(crate) fn private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Makes an existing directory that an older version created with the umask's mode private
/// (0700), and says whether it had to. Done once at start-up, before anything is served.
pub(crate) fn tighten_dir(dir: &Path) -> io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = fs::metadata(dir)?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            fs::set_permissions(dir, fs::Permissions::from_mode(mode & 0o700))?;
            return Ok(true);
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(false)
}

/// Opens a new file at `path` for writing, mode 0600; fails if anything exists there.
pub(crate) fn create_private(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// How much a replacement survives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Durability {
    /// Synced before the rename, and the directory after it: the new contents survive a power
    /// loss once the call returns (credentials, keys).
    Synced,
    /// Atomic but not synced: a crash may lose the newest version, never corrupt one (index
    /// entries and stored responses, which only cost a rebuild when lost).
    Atomic,
}

/// Replaces `path` with `contents`, mode 0600, atomically (see the module doc); creates the
/// directory (0700) when missing.
pub(crate) fn replace_private(
    path: &Path,
    contents: &[u8],
    durability: Durability,
) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let temp = temporary_beside(path);
    let written = (|| {
        // The directory exists nearly always: made only when the first write finds it missing.
        let mut file = match create_private(&temp) {
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                private_dir(dir)?;
                create_private(&temp)?
            }
            other => other?,
        };
        file.write_all(contents)?;
        if durability == Durability::Synced {
            file.sync_all()?;
        }
        drop(file);
        fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written?;
    if durability == Durability::Synced {
        sync_dir(dir);
    }
    Ok(())
}

/// A name for a temporary file beside `path` that no other writer uses: this process's id and
/// a counter (a crash's leftovers have other names and are swept as `.tmp` files).
fn temporary_beside(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let unique = NEXT.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}.{}-{unique}.tmp", std::process::id()))
}

/// Whether `name` is one of the temporary files [`replace_private`] writes.
pub(crate) fn is_temporary(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".tmp")
}

/// Makes a rename in `dir` durable (best effort: not every platform can sync a directory).
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// Writes a small file that is never rewritten in place, mode 0600, without the rename
/// [`replace_private`] needs: a new file is written directly (a crash can leave it short, which
/// its reader takes for damaged), and an existing one that already holds `contents` is left
/// alone. Anything else is replaced atomically.
pub(crate) fn write_once_private(path: &Path, contents: &[u8]) -> io::Result<()> {
    let created = match create_private(path) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            let dir = path.parent().unwrap_or_else(|| Path::new("."));
            private_dir(dir)?;
            create_private(path)
        }
        other => other,
    };
    match created {
        Ok(mut file) => file.write_all(contents),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
            if read_bounded(path, contents.len() as u64)
                .ok()
                .flatten()
                .is_some_and(|held| held == contents)
            {
                return Ok(());
            }
            replace_private(path, contents, Durability::Atomic)
        }
        Err(error) => Err(error),
    }
}

/// Writes `contents` as a new file at `path`, mode 0600, deleting what was there first: for a
/// file kept in two slots whose reader tells a whole one from a cut one (see
/// [`crate::state::index`]), where a rename over the old file would cost a flush.
pub(crate) fn write_afresh_private(path: &Path, contents: &[u8]) -> io::Result<()> {
    remove_if_present(path)?;
    let mut file = match create_private(path) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            private_dir(path.parent().unwrap_or_else(|| Path::new(".")))?;
            create_private(path)?
        }
        other => other?,
    };
    file.write_all(contents)
}

/// Removes `path`; a file that is already gone is not an error.
pub(crate) fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// Reads `path` if it is at most `limit` bytes; `Ok(None)` when it does not exist. A larger
/// file is an `InvalidData` error rather than an allocation of whatever size it claims.
pub(crate) fn read_bounded(path: &Path, limit: u64) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read as _;
    let file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error),
    };
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is larger than {limit} bytes", path.display()),
        ));
    }
    Ok(Some(bytes))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn new_directories_and_replaced_files_are_private_whatever_the_umask_allows() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("a/b/file.json");
        replace_private(&file, b"one", Durability::Atomic).unwrap();
        replace_private(&file, b"two", Durability::Synced).unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"two");
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(&root.path().join("a")), 0o700);
        assert_eq!(mode(&root.path().join("a/b")), 0o700);
        let leftovers: Vec<_> = fs::read_dir(root.path().join("a/b"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers.len(), 1, "{leftovers:?}");
    }

    #[test]
    fn a_directory_an_older_version_left_open_is_tightened_once() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("state");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        assert!(tighten_dir(&dir).unwrap());
        assert_eq!(mode(&dir), 0o700);
        assert!(!tighten_dir(&dir).unwrap());
    }

    #[test]
    fn a_file_over_the_read_limit_is_refused_before_it_is_read_whole() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("big");
        fs::write(&file, vec![b'x'; 100]).unwrap();
        assert!(read_bounded(&file, 99).is_err());
        assert_eq!(read_bounded(&file, 100).unwrap().unwrap().len(), 100);
        assert!(
            read_bounded(&root.path().join("missing"), 1)
                .unwrap()
                .is_none()
        );
    }
}
