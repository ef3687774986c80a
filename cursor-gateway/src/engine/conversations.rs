//! The conversations a gateway keeps: one `AgentSession` each, found by where their history
//! ends ([`crate::history`]), bounded in memory, recorded in the index on disk
//! ([`crate::state::index`]) so a new process or an evicted conversation is found again.
//!
//! Memory holds the conversations in use, and the turn ends of those only; anything else is
//! looked up on disk by fingerprint when a request needs it. Past `--max-conversations` one is
//! evicted, chosen within the client key that needs the room when that key holds any (else from
//! the key holding the most), idle ones before parked tool rounds. Parked tool rounds are capped
//! per key and gateway-wide the same way: one key parking a thousand rounds cancels its own
//! oldest, never another key's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use cursor_agent::session::AgentSession;

use crate::history::HistoryFp;
use crate::metrics::{Eviction, Metrics, RunSink};
use crate::state::index::{IndexStore, KEPT_TURNS, Record, Splice, TurnEnd, new_record};
use crate::sync::lock;

/// How many of a request's deepest history prefixes are looked up on disk when memory knows
/// none of them: a client continues where its conversation ended, a few units back at most
/// (the new user turn, or the results of one round of tool calls).
pub(crate) const DISK_LOOKUPS: usize = 8;

/// One conversation in memory.
struct Slot {
    session: AgentSession,
    sink: Arc<RunSink>,
    namespace: String,
    /// A request holds it now.
    held: bool,
    /// For LRU choices.
    last_used: Instant,
    /// For expiry, against the sweep's clock.
    last_used_at: SystemTime,
    /// Bumped by every claim, so an expiry timer from an earlier round does nothing.
    generation: u64,
    record: Record,
}

#[derive(Default)]
struct Inner {
    slots: HashMap<String, Slot>,
    /// Idle conversations in memory, by where their history ends.
    idle: HashMap<HistoryFp, Vec<String>>,
    /// Every recorded turn end of the conversations in memory.
    ends: HashMap<HistoryFp, String>,
}

impl Inner {
    fn forget_idle(&mut self, fp: HistoryFp, id: &str) {
        if let Some(ids) = self.idle.get_mut(&fp) {
            ids.retain(|other| other != id);
            if ids.is_empty() {
                self.idle.remove(&fp);
            }
        }
    }

    fn forget_end(&mut self, fp: HistoryFp, id: &str) {
        if self.ends.get(&fp).is_some_and(|owner| owner == id) {
            self.ends.remove(&fp);
        }
    }

    /// Drops `id` from memory and from the maps that point at it; its Run, if parked, is
    /// cancelled. Its index record and handle stay on disk.
    fn drop_slot(&mut self, id: &str) -> Option<Slot> {
        let slot = self.slots.remove(id)?;
        for turn in &slot.record.turns {
            self.forget_end(turn.fp, id);
        }
        if let Some(head) = slot.record.head() {
            self.forget_idle(head, id);
        }
        slot.session.cancel_waiting();
        Some(slot)
    }

    /// Registers a loaded or new slot's turn ends.
    fn index_slot(&mut self, id: &str) {
        let Some(slot) = self.slots.get(id) else {
            return;
        };
        let turns: Vec<HistoryFp> = slot.record.turns.iter().map(|t| t.fp).collect();
        let head = slot.record.head();
        let idle = !slot.held;
        for fp in turns {
            self.ends.insert(fp, id.to_owned());
        }
        if let (Some(head), true) = (head, idle) {
            let ids = self.idle.entry(head).or_default();
            if !ids.iter().any(|other| other == id) {
                ids.push(id.to_owned());
            }
        }
    }
}

/// The conversations: in memory, and on disk through the index.
pub(crate) struct Conversations {
    index: IndexStore,
    max_in_memory: usize,
    max_parked: usize,
    max_parked_per_key: usize,
    metrics: Arc<Metrics>,
    inner: Mutex<Inner>,
}

/// A conversation a request holds: its id and session. Hand it back with
/// [`Conversations::release`].
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
    /// Exchanges the remote conversation holds that the client never saw.
    pub(crate) splices: Vec<Splice>,
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

/// What a finished turn changes: where the history now ends, what Cursor counted there, and
/// an exchange the client did not see.
#[derive(Debug)]
pub(crate) struct Advance {
    pub(crate) at: HistoryFp,
    pub(crate) tokens: Option<u64>,
    pub(crate) splice: Option<Splice>,
}

/// A record to write for a conversation, with the turn ends it no longer keeps.
#[derive(Debug)]
pub(crate) struct Persist {
    pub(crate) id: String,
    pub(crate) record: Record,
    pub(crate) dropped: Vec<HistoryFp>,
}

/// What the disk knows of a request's prefixes, looked up off the async workers.
#[derive(Debug, Default)]
pub(crate) struct DiskHits(Vec<(String, Record)>);

/// Limits of the registry.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Caps {
    pub(crate) max_in_memory: usize,
    pub(crate) max_parked: usize,
    pub(crate) max_parked_per_key: usize,
}

impl Conversations {
    pub(crate) fn new(index: IndexStore, caps: Caps, metrics: Arc<Metrics>) -> Self {
        Self {
            index,
            max_in_memory: caps.max_in_memory.max(1),
            max_parked: caps.max_parked.max(1),
            max_parked_per_key: caps.max_parked_per_key.max(1),
            metrics,
            inner: Mutex::default(),
        }
    }

    pub(crate) fn index(&self) -> &IndexStore {
        &self.index
    }

    /// Whether memory already knows where a request with these prefixes continues (so the disk
    /// need not be asked).
    pub(crate) fn knows(&self, prefixes: &[HistoryFp]) -> bool {
        let inner = lock(&self.inner);
        prefixes
            .iter()
            .rev()
            .take(DISK_LOOKUPS)
            .any(|fp| inner.idle.contains_key(fp) || inner.ends.contains_key(fp))
    }

    /// The deepest prefixes' conversations on disk (blocking reads: call off the workers).
    pub(crate) fn look_up(index: &IndexStore, prefixes: &[HistoryFp]) -> DiskHits {
        let mut hits: Vec<(String, Record)> = Vec::new();
        for fp in prefixes.iter().rev().take(DISK_LOOKUPS) {
            if let Some((id, record)) = index.find(fp)
                && !hits.iter().any(|(known, _)| *known == id)
            {
                hits.push((id, record));
            }
        }
        DiskHits(hits)
    }

    /// Takes the conversation whose stored history is the longest of `prefixes` (each a
    /// prefix of the request's history) or that it branches from, or starts one with
    /// `new_session(id)`. `disk` adds the conversations the index found that are not in memory.
    pub(crate) fn claim(
        &self,
        namespace: &str,
        prefixes: &[HistoryFp],
        disk: DiskHits,
        new_session: impl Fn(&str, Arc<RunSink>) -> AgentSession,
        sink: impl Fn() -> RunSink,
    ) -> Claim {
        let mut inner = lock(&self.inner);
        for (id, record) in disk.0 {
            if inner.slots.contains_key(&id) {
                continue;
            }
            self.make_room(&mut inner, namespace);
            let sink = Arc::new(sink());
            let slot = Slot {
                session: new_session(&id, Arc::clone(&sink)),
                sink,
                namespace: namespace.to_owned(),
                held: false,
                last_used: Instant::now(),
                last_used_at: SystemTime::now(),
                generation: 0,
                record,
            };
            inner.slots.insert(id.clone(), slot);
            inner.index_slot(&id);
        }
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
            .filter(|i| inner.ends.contains_key(&prefixes[*i]));
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
            None => (crate::ids::conversation_id(), None),
        };
        let branched_from = branch.and_then(|b| inner.ends.get(&prefixes[b]).cloned());
        if !inner.slots.contains_key(&id) {
            self.make_room(&mut inner, namespace);
            let sink = Arc::new(sink());
            let record = new_record();
            let slot = Slot {
                session: new_session(&id, Arc::clone(&sink)),
                sink,
                namespace: namespace.to_owned(),
                held: true,
                last_used: Instant::now(),
                last_used_at: SystemTime::now(),
                generation: 0,
                record,
            };
            inner.slots.insert(id.clone(), slot);
        }
        let slot = inner.slots.get_mut(&id).expect("inserted above");
        slot.held = true;
        slot.last_used = Instant::now();
        slot.last_used_at = SystemTime::now();
        slot.generation += 1;
        Claim {
            session: slot.session.clone(),
            sink: Arc::clone(&slot.sink),
            generation: slot.generation,
            splices: slot.record.splices.clone(),
            id,
            found: was_at.is_some(),
            was_at,
            branched_from,
        }
    }

    /// Hands `claim` back. With `advance`, the conversation's history now ends there: the
    /// record to write is returned (write it before the client learns the turn ended, so its
    /// next request finds it in any process). Without, it is where it was found, and a
    /// conversation this request started is forgotten.
    pub(crate) fn release(&self, claim: &Claim, advance: Option<Advance>) -> Option<Persist> {
        let mut inner = lock(&self.inner);
        let slot = inner.slots.get_mut(&claim.id)?;
        if slot.generation != claim.generation {
            // Evicted and claimed again since: this claim no longer owns it.
            return None;
        }
        slot.held = false;
        slot.last_used = Instant::now();
        slot.last_used_at = SystemTime::now();
        let Some(advance) = advance else {
            if claim.was_at.is_none() && slot.record.turns.is_empty() {
                // Started for a request that failed: nothing to find it by.
                inner.slots.remove(&claim.id);
            } else {
                inner.index_slot(&claim.id);
            }
            return None;
        };
        let old_head = slot.record.head();
        let record = &mut slot.record;
        record.seq += 1;
        record.turns.retain(|turn| turn.fp != advance.at);
        record.turns.push(TurnEnd {
            fp: advance.at,
            tokens: advance.tokens,
        });
        let over = record.turns.len().saturating_sub(KEPT_TURNS);
        let dropped: Vec<HistoryFp> = record.turns.drain(..over).map(|t| t.fp).collect();
        if let Some(splice) = advance.splice {
            record.splices.push(splice);
            // Bounded: the oldest exchange is forgotten (a resume from before it then rebuilds).
            let over = record.splices.len().saturating_sub(KEPT_SPLICES);
            record.splices.drain(..over);
        }
        let persist = Persist {
            id: claim.id.clone(),
            record: record.clone(),
            dropped: dropped.clone(),
        };
        if let Some(old) = old_head {
            inner.forget_idle(old, &claim.id);
        }
        for fp in dropped {
            inner.forget_end(fp, &claim.id);
        }
        inner.index_slot(&claim.id);
        Some(persist)
    }

    /// After `claim`'s turn left its Run waiting for tool results: cancels parked rounds over
    /// the caps, the oldest of this key first, then (gateway-wide) the oldest of the key
    /// parking the most. Never `claim`'s own.
    pub(crate) fn enforce_parked_caps(&self, claim: &Claim, namespace: &str) {
        let mut inner = lock(&self.inner);
        let mut cancelled = 0;
        loop {
            let parked: Vec<(&String, &Slot)> = inner
                .slots
                .iter()
                .filter(|(id, slot)| {
                    !slot.held && **id != claim.id && slot.session.is_waiting_for_tools()
                })
                .collect();
            let mine = parked
                .iter()
                .filter(|(_, s)| s.namespace == namespace)
                .count()
                + 1;
            let all = parked.len() + 1;
            let victim_ns = if mine > self.max_parked_per_key {
                Some(namespace.to_owned())
            } else if all > self.max_parked {
                largest_namespace(parked.iter().map(|(_, s)| s.namespace.as_str()))
            } else {
                None
            };
            let Some(victim_ns) = victim_ns else { break };
            let victim = parked
                .iter()
                .filter(|(_, s)| s.namespace == victim_ns)
                .min_by_key(|(_, s)| s.last_used)
                .map(|(id, _)| (*id).clone());
            let Some(victim) = victim else { break };
            if let Some(slot) = inner.slots.get_mut(&victim) {
                slot.session.cancel_waiting();
                cancelled += 1;
                tracing::info!(conversation = %victim, "parked tool round cancelled to make room; its late results rebuild");
            }
        }
        drop(inner);
        self.metrics.evicted(Eviction::Parked, cancelled);
    }

    /// Cancels the conversation's waiting Run if it still waits from the round `ticket`
    /// handed back (nothing claimed it since). True when a Run was cancelled.
    pub(crate) fn expire_round(&self, ticket: &RoundTicket) -> bool {
        let inner = lock(&self.inner);
        let Some(slot) = inner.slots.get(&ticket.id) else {
            return false;
        };
        if slot.generation != ticket.generation || slot.held || !slot.session.is_waiting_for_tools()
        {
            return false;
        }
        slot.session.cancel_waiting();
        true
    }

    /// The longest of `prefixes` Cursor counted tokens for, among the conversations in memory
    /// and `disk`: its index and the count.
    pub(crate) fn counted(&self, prefixes: &[HistoryFp], disk: &DiskHits) -> Option<(usize, u64)> {
        let inner = lock(&self.inner);
        let tokens_at = |fp: &HistoryFp| {
            let in_memory = inner
                .ends
                .get(fp)
                .and_then(|id| inner.slots.get(id))
                .map(|slot| &slot.record);
            in_memory
                .into_iter()
                .chain(disk.0.iter().map(|(_, record)| record))
                .find_map(|record| {
                    record
                        .turns
                        .iter()
                        .find(|turn| turn.fp == *fp)
                        .and_then(|turn| turn.tokens)
                })
        };
        prefixes
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, fp)| tokens_at(fp).map(|tokens| (i, tokens)))
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

    /// Entries of the in-memory maps (bounded by the conversations in memory times the turns
    /// each keeps).
    pub(crate) fn map_entries(&self) -> usize {
        let inner = lock(&self.inner);
        inner.idle.len() + inner.ends.len()
    }

    /// Forgets `id` from memory for the sweep, unless a request holds it or it was used after
    /// `cutoff`; true when it may be deleted from disk.
    pub(crate) fn forget_if_idle_since(&self, id: &str, cutoff: SystemTime) -> bool {
        let mut inner = lock(&self.inner);
        match inner.slots.get(id) {
            Some(slot) if slot.held || slot.last_used_at >= cutoff => false,
            Some(_) => {
                inner.drop_slot(id);
                true
            }
            None => true,
        }
    }

    /// Makes room for one more conversation of `namespace` (see the module doc).
    fn make_room(&self, inner: &mut Inner, namespace: &str) {
        while inner.slots.len() >= self.max_in_memory {
            let Some((id, parked)) = choose_victim(inner, namespace) else {
                // Every conversation is held by a request: let the map grow past the bound
                // rather than refuse (turns are capped separately).
                return;
            };
            inner.drop_slot(&id);
            self.metrics.evicted(
                if parked {
                    Eviction::Parked
                } else {
                    Eviction::Idle
                },
                1,
            );
            tracing::debug!(conversation = %id, parked, "evicted from memory");
        }
    }
}

/// Splices kept per conversation.
const KEPT_SPLICES: usize = 16;

/// The conversation to evict: idle before parked; within `namespace` when it holds one of
/// that kind, else within the key holding the most; least recently used first.
fn choose_victim(inner: &Inner, namespace: &str) -> Option<(String, bool)> {
    for parked in [false, true] {
        let candidates: Vec<(&String, &Slot)> = inner
            .slots
            .iter()
            .filter(|(_, slot)| !slot.held && slot.session.is_waiting_for_tools() == parked)
            .collect();
        if candidates.is_empty() {
            continue;
        }
        let own = candidates.iter().any(|(_, s)| s.namespace == namespace);
        let from = if own {
            namespace.to_owned()
        } else {
            largest_namespace(candidates.iter().map(|(_, s)| s.namespace.as_str()))?
        };
        return candidates
            .iter()
            .filter(|(_, s)| s.namespace == from)
            .min_by_key(|(_, s)| s.last_used)
            .map(|(id, _)| ((*id).clone(), parked));
    }
    None
}

/// The namespace that occurs most often.
fn largest_namespace<'a>(namespaces: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for namespace in namespaces {
        *counts.entry(namespace).or_default() += 1;
    }
    counts
        .into_iter()
        .max_by_key(|(namespace, count)| (*count, std::cmp::Reverse(*namespace)))
        .map(|(namespace, _)| namespace.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cursor_agent::session::{Client, Origin, StaticToken};

    fn registry(max_in_memory: usize) -> Conversations {
        // Nothing is written: `release` returns the records, which these tests only read.
        Conversations::new(
            IndexStore::new(std::path::PathBuf::from("/nonexistent/index")),
            Caps {
                max_in_memory,
                max_parked: 100,
                max_parked_per_key: 100,
            },
            Arc::new(Metrics::default()),
        )
    }

    fn session() -> AgentSession {
        AgentSession::builder(
            Client::new().unwrap(),
            Origin::parse("http://127.0.0.1:9").unwrap(),
            Arc::new(StaticToken::new("t")),
        )
        .build()
    }

    /// Starts a conversation of `namespace` whose history ends at `n` and leaves it idle.
    fn idle(conversations: &Conversations, namespace: &str, n: u8) -> String {
        let fp = HistoryFp([n; 16]);
        let claim = conversations.claim(
            namespace,
            &[HistoryFp([n ^ 0xff; 16])],
            DiskHits::default(),
            |_, _| session(),
            || RunSink::new(Arc::new(Metrics::default())),
        );
        let persist = conversations.release(
            &claim,
            Some(Advance {
                at: fp,
                tokens: None,
                splice: None,
            }),
        );
        assert!(persist.is_some());
        claim.id
    }

    fn in_memory(conversations: &Conversations, id: &str) -> bool {
        lock(&conversations.inner).slots.contains_key(id)
    }

    #[tokio::test]
    async fn eviction_chooses_within_the_key_that_needs_the_room_else_from_the_largest() {
        let conversations = registry(3);
        let a1 = idle(&conversations, "a", 1);
        let a2 = idle(&conversations, "a", 2);
        let b1 = idle(&conversations, "b", 3);
        // b needs room and holds a conversation: its own goes, a's stay.
        let b2 = idle(&conversations, "b", 4);
        assert!(!in_memory(&conversations, &b1));
        assert!(in_memory(&conversations, &a1) && in_memory(&conversations, &a2));
        // c holds none: the key holding the most (a) gives up its least recently used.
        let c1 = idle(&conversations, "c", 5);
        assert!(!in_memory(&conversations, &a1), "a's oldest made room");
        assert!(in_memory(&conversations, &a2) && in_memory(&conversations, &b2));
        assert!(in_memory(&conversations, &c1));
        assert_eq!(conversations.counts().0, 3);
        // The maps hold only what is in memory.
        assert_eq!(conversations.map_entries(), 3 * 2);
    }

    #[tokio::test]
    async fn a_release_records_the_new_head_and_forgets_turns_past_the_kept_number() {
        let conversations = registry(10);
        let mut claim = conversations.claim(
            "a",
            &[HistoryFp([0; 16])],
            DiskHits::default(),
            |_, _| session(),
            || RunSink::new(Arc::new(Metrics::default())),
        );
        let mut dropped_total = 0;
        for n in 0..(KEPT_TURNS + 5) {
            let mut fp = [0u8; 16];
            fp[..8].copy_from_slice(&(n as u64 + 1).to_le_bytes());
            let persist = conversations
                .release(
                    &claim,
                    Some(Advance {
                        at: HistoryFp(fp),
                        tokens: Some(n as u64),
                        splice: None,
                    }),
                )
                .unwrap();
            dropped_total += persist.dropped.len();
            assert!(persist.record.turns.len() <= KEPT_TURNS);
            assert_eq!(persist.record.head(), Some(HistoryFp(fp)));
            claim = conversations.claim(
                "a",
                &[HistoryFp(fp)],
                DiskHits::default(),
                |_, _| session(),
                || RunSink::new(Arc::new(Metrics::default())),
            );
            assert!(
                claim.found,
                "turn {n}: the conversation is found where it ended"
            );
        }
        assert_eq!(dropped_total, 5);
        assert_eq!(
            conversations.map_entries(),
            KEPT_TURNS,
            "ends only (the claim holds it)"
        );
    }
}
