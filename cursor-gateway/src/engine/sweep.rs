//! Expiry of everything the gateway keeps: conversations idle past `--conversation-retention`
//! (their index record and pointers, resume handle and lock file, together), stored responses
//! unused past `--response-retention` or over `--max-stored-response-bytes`, and what crashes
//! left behind. A conversation a request holds, or that was used after the cutoff, is kept
//! whatever its files say.

use std::time::{Duration, SystemTime};

use super::Engine;
use crate::metrics::Eviction;

/// What one sweep deleted.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Conversations forgotten (index, handle and lock deleted).
    pub conversations: usize,
    /// Conversations past their retention that were kept because they are in use, or whose
    /// handle another process holds.
    pub kept_in_use: usize,
    /// Stored responses past their retention.
    pub responses_expired: usize,
    /// Stored responses deleted to fit the size cap.
    pub responses_over_cap: usize,
    /// Temporary files, orphaned pointers and set-aside handles deleted.
    pub debris: usize,
}

/// How old a temporary file must be before a sweep takes it for a crash's leftover.
const DEBRIS_AGE: Duration = Duration::from_secs(3600);

impl Engine {
    /// Deletes what expired as of `now` (see the module doc). Blocks: call it off the async
    /// workers.
    pub(crate) fn sweep_now(&self, now: SystemTime) -> SweepReport {
        let limits = *self.limits();
        let mut report = SweepReport::default();
        let cutoff = now
            .checked_sub(limits.conversation_retention)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let conversations = self.conversations();
        let index = conversations.index();
        let mut ids = index.idle_since(cutoff);
        // Handles with no record (kept by versions before 0.2, or whose record was lost) expire
        // by their own age.
        ids.extend(idle_handles(self.handles().dir(), cutoff));
        ids.sort();
        ids.dedup();
        for id in ids {
            if !conversations.forget_if_idle_since(&id, cutoff) {
                report.kept_in_use += 1;
                continue;
            }
            match self.handles().purge(&id) {
                Ok(()) => {}
                Err(error) => {
                    // Another process holds it: it is in use there, and the next sweep retries.
                    tracing::info!(conversation = %id, %error, "an expired conversation's handle is in use; kept");
                    report.kept_in_use += 1;
                    continue;
                }
            }
            if let Err(error) = index.purge(&id) {
                tracing::warn!(conversation = %id, %error, "could not delete an expired index record");
            }
            report.conversations += 1;
        }
        let debris_cutoff = now
            .checked_sub(DEBRIS_AGE)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        report.debris += index.sweep_debris(debris_cutoff);
        report.debris += handle_debris(self.handles().dir(), debris_cutoff, cutoff);
        let responses = self.responses().sweep(
            limits.response_retention,
            limits.max_stored_response_bytes,
            now,
        );
        report.responses_expired = responses.expired;
        report.responses_over_cap = responses.over_cap;
        let metrics = self.metrics();
        metrics.evicted(Eviction::Expired, report.conversations as u64);
        metrics.responses_deleted((responses.expired + responses.over_cap) as u64);
        if report != SweepReport::default() {
            tracing::info!(?report, "expired state deleted");
        }
        report
    }

    /// Sweeps every `--sweep-interval`, and once shortly after start-up, until dropped.
    pub(crate) async fn sweep_periodically(self) {
        let every = self.limits().sweep_interval;
        let first = every.min(Duration::from_secs(60));
        tokio::time::sleep(first).await;
        loop {
            let engine = self.clone();
            let _ = super::blocking::run(move || engine.sweep_now(SystemTime::now())).await;
            tokio::time::sleep(every).await;
        }
    }

    /// Sweeps stored responses now when this process has written past their size cap.
    pub(crate) fn sweep_responses_if_over_cap(&self) {
        let limits = *self.limits();
        if !self.responses().over(limits.max_stored_response_bytes) {
            return;
        }
        let engine = self.clone();
        drop(tokio::task::spawn_blocking(move || {
            let report = engine.responses().sweep(
                limits.response_retention,
                limits.max_stored_response_bytes,
                SystemTime::now(),
            );
            engine
                .metrics()
                .responses_deleted((report.expired + report.over_cap) as u64);
        }));
    }
}

/// Ids of handles last written before `before`.
fn idle_handles(dir: &std::path::Path, before: SystemTime) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name();
            let id = name.to_str()?.strip_suffix(".json")?.to_owned();
            let modified = entry.metadata().ok()?.modified().ok()?;
            (crate::state::index::valid_id(&id) && modified < before).then_some(id)
        })
        .collect()
}

/// Deletes the handle store's leftovers: temporary files older than `debris_before` (a crash
/// mid-write), handles set aside as corrupt older than `retention_cutoff`, and lock files with
/// no handle beside them older than `retention_cutoff` (taken with the lock, by a purge).
fn handle_debris(
    dir: &std::path::Path,
    debris_before: SystemTime,
    retention_cutoff: SystemTime,
) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy().into_owned();
        let Some(modified) = entry.metadata().ok().and_then(|m| m.modified().ok()) else {
            continue;
        };
        if name.contains(".json.tmp-") && modified < debris_before
            || name.contains(".json.corrupt-") && modified < retention_cutoff
        {
            if std::fs::remove_file(entry.path()).is_ok() {
                removed += 1;
            }
        } else if let Some(id) = name.strip_suffix(".lock")
            && modified < retention_cutoff
            && !dir.join(format!("{id}.json")).exists()
        {
            let store = cursor_agent::HandleStore::new(dir);
            if store.purge(id).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}
