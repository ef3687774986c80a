//! The handle lock across real processes: this test binary re-executes itself as the other
//! process (`child_main` with `HANDLE_LOCK_CHILD` set), so the OS lock is contended by two
//! PIDs, not two threads.

use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant, SystemTime};

use cursor_agent::{HandleStore, StoreError};

const ROLE: &str = "HANDLE_LOCK_CHILD";
const DIR: &str = "HANDLE_LOCK_DIR";
const NAME: &str = "HANDLE_LOCK_NAME";
const SESSION: &str = "s1";

/// The other process. Without `HANDLE_LOCK_CHILD` it does nothing.
#[test]
fn child_main() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let dir = PathBuf::from(std::env::var(DIR).unwrap());
    let name = std::env::var(NAME).unwrap();
    let store = HandleStore::new(&dir);
    match role.as_str() {
        "race" => {
            wait_for(&dir.join("go"));
            for _ in 0..5 {
                store
                    .with_lock(SESSION, || {
                        log(&dir, &format!("enter {name}"));
                        std::thread::sleep(Duration::from_millis(30));
                        log(&dir, &format!("exit {name}"));
                    })
                    .unwrap();
            }
        }
        "hold" => {
            store
                .with_lock(SESSION, || {
                    fs::write(dir.join("held"), "").unwrap();
                    wait_for(&dir.join("release"));
                })
                .unwrap();
        }
        other => panic!("unknown role {other}"),
    }
}

fn spawn(dir: &Path, role: &str, name: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["child_main", "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(DIR, dir)
        .env(NAME, name)
        .spawn()
        .unwrap()
}

fn wait_for(path: &Path) {
    let started = Instant::now();
    while !path.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{path:?} never appeared"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn log(dir: &Path, line: &str) {
    let mut file = OpenOptions::new()
        .append(true)
        .create(true)
        .open(dir.join("log"))
        .unwrap();
    writeln!(file, "{line}").unwrap();
}

/// A lock file a crashed holder left an hour ago.
fn leave_old_lock_file(dir: &Path) {
    fs::create_dir_all(dir).unwrap();
    let lock = fs::File::create(dir.join(format!("{SESSION}.lock"))).unwrap();
    lock.set_modified(SystemTime::now() - Duration::from_secs(3600))
        .unwrap();
}

#[test]
fn two_processes_racing_past_an_old_lock_file_never_hold_the_lock_together() {
    let dir = tempfile::tempdir().unwrap();
    leave_old_lock_file(dir.path());
    let children = [
        spawn(dir.path(), "race", "a"),
        spawn(dir.path(), "race", "b"),
    ];
    fs::write(dir.path().join("go"), "").unwrap();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let log = fs::read_to_string(dir.path().join("log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 20, "{log}");
    for pair in lines.chunks(2) {
        let holder = pair[0].strip_prefix("enter ").expect(&log);
        assert_eq!(pair[1], format!("exit {holder}"), "interleaved:\n{log}");
    }
}

#[test]
fn a_live_holders_lock_is_never_broken_however_old_its_file_looks() {
    let dir = tempfile::tempdir().unwrap();
    let mut holder = spawn(dir.path(), "hold", "h");
    wait_for(&dir.path().join("held"));
    // Older than the 30 s after which the old lock counted as a crashed holder's.
    fs::File::options()
        .write(true)
        .open(dir.path().join(format!("{SESSION}.lock")))
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(3600))
        .unwrap();
    let mut store = HandleStore::new(dir.path());
    store.lock_timeout = Duration::from_millis(300);
    let result = store.with_lock(SESSION, || ());
    assert!(
        matches!(result, Err(StoreError::LockTimeout(_))),
        "{result:?}"
    );
    fs::write(dir.path().join("release"), "").unwrap();
    assert!(holder.wait().unwrap().success());
    store.with_lock(SESSION, || ()).unwrap();
}

#[test]
fn a_crashed_holders_lock_is_released_by_the_os() {
    let dir = tempfile::tempdir().unwrap();
    let mut holder = spawn(dir.path(), "hold", "h");
    wait_for(&dir.path().join("held"));
    holder.kill().unwrap();
    holder.wait().unwrap();
    let mut store = HandleStore::new(dir.path());
    store.lock_timeout = Duration::from_millis(300);
    store.with_lock(SESSION, || ()).unwrap();
}
