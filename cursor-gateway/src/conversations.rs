//! The conversations a gateway keeps: one `AgentSession` each, found through the history
//! index ([`crate::history`]), persisted under `--state/conversations` so a new process finds
//! them, bounded in memory, and with their waiting tool rounds expiring.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use cursor_agent::session::AgentSession;

use crate::history::HistoryFp;
use crate::metrics::RunSink;

/// Locks `mutex`; a panic elsewhere does not make the map unusable.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One conversation in memory.
struct Slot {
    session: AgentSession,
    sink: Arc<RunSink>,
    /// A request holds it now.
    held: bool,
    last_used: Instant,
    /// Bumped by every claim, so an expiry timer from an earlier round does nothing.
    generation: u64,
}

/// Every conversation this process knows: the index (history → conversation id) and the
/// sessions in memory.
pub(crate) struct Conversations {
    dir: PathBuf,
    max_in_memory: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Conversations nobody holds, by where their history ends.
    idle: HashMap<HistoryFp, Vec<String>>,
    slots: HashMap<String, Slot>,
    /// Tokens Cursor counted for the history ending at a fingerprint (the last turn's input
    /// and output), for `count_tokens`.
    tokens: HashMap<HistoryFp, u64>,
    /// Every history a conversation's turn ended at, with the conversation: where a client
    /// that edits or rewinds branches from (docs/PROTOCOL-AGENT.md §10.1). Fingerprints carry
    /// the scope, so a branch is only ever found by the scope that made it.
    turns: HashMap<HistoryFp, String>,
}

/// How many turn fingerprints per conversation are read back from disk (the agent handle keeps
/// the checkpoints of at most 64 recent turns and 64 branch points).
const KEPT_TURN_FPS: usize = 128;

/// A conversation a request holds: its id and session. Hand it back with
/// [`Conversations::release`]; the history it was found at is restored if it is not.
pub(crate) struct Claim {
    pub(crate) id: String,
    pub(crate) session: AgentSession,
    /// The sink of the session's debug records.
    pub(crate) sink: Arc<RunSink>,
    /// Whether it was found (true) or started for this request.
    pub(crate) found: bool,
    /// Started for this request as a branch of this conversation, whose turn ended at the
    /// request's history up to its new input.
    pub(crate) branched_from: Option<String>,
    /// The history it was found at.
    pub(crate) was_at: Option<HistoryFp>,
    pub(crate) generation: u64,
}

impl std::fmt::Debug for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claim")
            .field("id", &self.id)
            .field("found", &self.found)
            .finish_non_exhaustive()
    }
}

/// Names one waiting tool round: the conversation and the claim that left it waiting.
#[derive(Clone, Debug)]
pub(crate) struct RoundTicket {
    pub(crate) id: String,
    generation: u64,
}

impl Claim {
    /// The ticket of the tool round this claim leaves waiting.
    pub(crate) fn ticket(&self) -> RoundTicket {
        RoundTicket {
            id: self.id.clone(),
            generation: self.generation,
        }
    }
}

impl Conversations {
    /// The index under `dir` (read now), keeping at most `max_in_memory` sessions.
    pub(crate) fn open(dir: PathBuf, max_in_memory: usize) -> Self {
        let mut inner = Inner::default();
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".fp")) else {
                    continue;
                };
                // An unreadable or corrupt entry only costs that conversation one rebuild.
                if let Some(fp) = std::fs::read_to_string(entry.path())
                    .ok()
                    .and_then(|text| HistoryFp::from_hex(&text))
                {
                    inner.idle.entry(fp).or_default().push(id.to_owned());
                }
                if let Ok(text) = std::fs::read_to_string(dir.join(format!("{id}.turns"))) {
                    let lines: Vec<&str> = text.lines().collect();
                    let recent = &lines[lines.len().saturating_sub(KEPT_TURN_FPS)..];
                    for fp in recent.iter().filter_map(|line| HistoryFp::from_hex(line)) {
                        inner.turns.insert(fp, id.to_owned());
                    }
                }
            }
        }
        Self {
            dir,
            max_in_memory: max_in_memory.max(1),
            inner: Mutex::new(inner),
        }
    }

    /// Takes the conversation whose stored history is the longest of `prefixes` (each a
    /// prefix of the request's history), or starts one with `new_session(id)`.
    pub(crate) fn claim(
        &self,
        prefixes: &[HistoryFp],
        new_session: impl FnOnce(&str, Arc<RunSink>) -> AgentSession,
        sink: impl FnOnce() -> RunSink,
    ) -> Claim {
        let mut inner = lock(&self.inner);
        // The longest prefix an idle conversation ends at, and whether this history is a branch
        // of a conversation whose turn ended exactly where its new input starts (an edit, a
        // rewind, a retry with a changed last turn). A turn that ended earlier is no branch
        // point: the messages after it (an edited answer, say) are not in its checkpoint, and a
        // resume replays nothing. A branch point deeper than the idle match wins: continuing
        // the shorter conversation would rebuild.
        let idle_at = prefixes
            .iter()
            .rposition(|fp| inner.idle.get(fp).is_some_and(|ids| !ids.is_empty()));
        let branch_at = prefixes
            .len()
            .checked_sub(2)
            .filter(|i| inner.turns.contains_key(&prefixes[*i]));
        let branch = match (branch_at, idle_at) {
            (Some(b), Some(i)) if b > i => Some(b),
            (Some(b), None) => Some(b),
            _ => None,
        };
        let found = idle_at.filter(|_| branch.is_none()).and_then(|i| {
            let fp = prefixes[i];
            let ids = inner.idle.get_mut(&fp)?;
            let id = ids.pop()?;
            if ids.is_empty() {
                inner.idle.remove(&fp);
            }
            Some((id, fp))
        });
        let (id, was_at) = match found {
            Some((id, fp)) => (id, Some(fp)),
            None => (new_id(), None),
        };
        let branched_from = branch.and_then(|b| inner.turns.get(&prefixes[b]).cloned());
        if !inner.slots.contains_key(&id) {
            self.evict_for_one(&mut inner);
        }
        let slot = inner.slots.entry(id.clone()).or_insert_with(|| {
            let sink = Arc::new(sink());
            Slot {
                session: new_session(&id, Arc::clone(&sink)),
                sink,
                held: true,
                last_used: Instant::now(),
                generation: 0,
            }
        });
        slot.held = true;
        slot.last_used = Instant::now();
        slot.generation += 1;
        Claim {
            session: slot.session.clone(),
            sink: Arc::clone(&slot.sink),
            generation: slot.generation,
            id,
            found: was_at.is_some(),
            was_at,
            branched_from,
        }
    }

    /// Hands `claim` back, its history now ending at `at` (`None`: where it was found, or
    /// nowhere for a conversation this request started). The index entry is written to disk.
    pub(crate) fn release(&self, claim: &Claim, at: Option<HistoryFp>) {
        self.release_counted(claim, at, None);
    }

    /// [`release`](Self::release), remembering that Cursor counted `tokens` for the history
    /// ending at `at`.
    pub(crate) fn release_counted(
        &self,
        claim: &Claim,
        at: Option<HistoryFp>,
        tokens: Option<u64>,
    ) {
        if let (Some(fp), Some(tokens)) = (at, tokens) {
            let mut inner = lock(&self.inner);
            if let Some(old) = claim.was_at {
                inner.tokens.remove(&old);
            }
            inner.tokens.insert(fp, tokens);
        }
        let at = at.or(claim.was_at);
        {
            let mut inner = lock(&self.inner);
            if at.is_none() {
                // Started for a request that failed: nothing to find it by.
                inner.slots.remove(&claim.id);
            } else if let Some(slot) = inner.slots.get_mut(&claim.id) {
                slot.held = false;
                slot.last_used = Instant::now();
            }
            if let Some(fp) = at {
                inner.idle.entry(fp).or_default().push(claim.id.clone());
                inner.turns.insert(fp, claim.id.clone());
            }
        }
        if let Some(fp) = at {
            self.persist(&claim.id, fp);
        }
    }

    /// Cancels the conversation's waiting Run if it still waits from the round `claim`
    /// handed back (nothing claimed it since). True when a Run was cancelled.
    pub(crate) fn expire_round(&self, claim: &RoundTicket) -> bool {
        let inner = lock(&self.inner);
        let Some(slot) = inner.slots.get(&claim.id) else {
            return false;
        };
        if slot.generation != claim.generation || slot.held || !slot.session.is_waiting_for_tools()
        {
            return false;
        }
        slot.session.cancel_waiting();
        true
    }

    /// The longest of `prefixes` Cursor counted tokens for: its index and the count.
    pub(crate) fn counted(&self, prefixes: &[HistoryFp]) -> Option<(usize, u64)> {
        let inner = lock(&self.inner);
        prefixes
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, fp)| inner.tokens.get(fp).map(|tokens| (i, *tokens)))
    }

    /// Conversations in memory, and how many of them wait for tool results.
    pub(crate) fn counts(&self) -> (usize, usize) {
        let inner = lock(&self.inner);
        let waiting = inner
            .slots
            .values()
            .filter(|slot| slot.session.is_waiting_for_tools())
            .count();
        (inner.slots.len(), waiting)
    }

    /// Makes room for one more session: drops the least recently used idle one nobody
    /// holds, else the least recently used waiting one, whose Run is cancelled (its index entry stays, so its next request
    /// rebuilds from the transcript).
    fn evict_for_one(&self, inner: &mut Inner) {
        while inner.slots.len() >= self.max_in_memory {
            // Idle ones first (they resume from their handles for free), then the oldest
            // waiting one (its late results rebuild).
            let oldest = inner
                .slots
                .iter()
                .filter(|(_, slot)| !slot.held)
                .min_by_key(|(_, slot)| (slot.session.is_waiting_for_tools(), slot.last_used))
                .map(|(id, _)| id.clone());
            let Some(id) = oldest else {
                // Every session is held by a request: let the map grow past the bound
                // rather than refuse (turns are capped separately).
                return;
            };
            if let Some(slot) = inner.slots.remove(&id) {
                slot.session.cancel_waiting();
                tracing::debug!(conversation = %id, "evicted from memory");
            }
        }
    }

    /// Writes one index entry atomically (a temporary file renamed over the old one).
    fn persist(&self, id: &str, fp: HistoryFp) {
        let path = self.dir.join(format!("{id}.fp"));
        let tmp = self.dir.join(format!(".{id}.fp.tmp"));
        let written = std::fs::create_dir_all(&self.dir)
            .and_then(|()| std::fs::write(&tmp, fp.to_hex()))
            .and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(error) = written {
            // The conversation still works in this process; a new one would rebuild it once.
            tracing::warn!(conversation = %id, %error, "could not write the conversation index");
        }
        // Where this turn ended, for branches a new process finds (best effort, like the index).
        let turns = self.dir.join(format!("{id}.turns"));
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&turns)
            .and_then(|mut file| {
                use std::io::Write as _;
                writeln!(file, "{}", fp.to_hex())
            });
        if let Err(error) = appended {
            tracing::warn!(conversation = %id, %error, "could not write the conversation's turns");
        }
    }
}

/// A fresh conversation id: 16 random bytes, hex.
fn new_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No entropy: fall back to the clock, still unique within this process.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_nanos();
        bytes.copy_from_slice(&nanos.to_le_bytes());
    }
    let hex = cursor_proto::hex::encode(&bytes);
    format!("c-{hex}")
}
