//! The conversation index on disk, under `--state/conversations`: how a request finds the
//! conversation it continues after a restart, or after the conversation left memory.
//!
//! - `<id>.a.json` and `<id>.b.json`, one record per conversation in two slots: where each of
//!   its recent turns ended (history fingerprints, the last one its head), Cursor's token count
//!   there, and any exchanges the remote conversation holds that its client never saw (a
//!   format's corrective turn).
//! - `ends/<fingerprint>`, one small file per recorded turn end, holding the id of the
//!   conversation whose turn ended there: a lookup by fingerprint reads one file, so start-up
//!   reads nothing and memory holds only the conversations in use.
//!
//! A save writes the slot holding the older version afresh (deleted, then created), so a reader
//! always has one whole version: it takes the valid slot with the higher sequence number (a
//! write cut short by a crash is not valid JSON). A record is never renamed over an existing
//! file, which on ext4 forces the file's data to disk first and cost every turn most of a
//! millisecond. Nothing is synced: a lost update costs one rebuild. A record's modification time
//! is when its conversation was last used; the sweep deletes conversations idle past the
//! retention. Every read is bounded in size, and a damaged file is treated as
//! missing (that conversation rebuilds once), never trusted.

use std::path::PathBuf;
use std::time::SystemTime;

use cursor_agent::ir::Message;
use serde::{Deserialize, Serialize};

use super::files::{
    Durability, is_temporary, read_bounded, remove_if_present, replace_private,
    write_afresh_private, write_once_private,
};
use crate::history::HistoryFp;

/// Turn ends kept per conversation (the agent's handle keeps the checkpoints of at most 64
/// recent turns and 64 branch points).
pub(crate) const KEPT_TURNS: usize = 128;

/// The largest record read (splices hold whole messages).
const MAX_RECORD_BYTES: u64 = 16 << 20;

/// The record format this version writes.
const VERSION: u32 = 1;

/// One conversation's index record.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Record {
    /// The record format.
    pub(crate) v: u32,
    /// Bumped by every save: of the two slots, the higher is the record.
    #[serde(default)]
    pub(crate) seq: u64,
    /// Where recent turns ended, oldest first; the last is where the history ends now.
    pub(crate) turns: Vec<TurnEnd>,
    /// Exchanges the remote conversation holds that the client's history does not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) splices: Vec<Splice>,
}

/// Where one turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TurnEnd {
    #[serde(with = "fp_hex")]
    pub(crate) fp: HistoryFp,
    /// Tokens Cursor counted for the history ending here (input and output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tokens: Option<u64>,
}

/// Messages the remote conversation holds before the client's message `at` (an index into
/// the client's history), which the client never saw.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Splice {
    pub(crate) at: usize,
    pub(crate) messages: Vec<Message>,
}

impl Record {
    /// Where the conversation's history ends now.
    pub(crate) fn head(&self) -> Option<HistoryFp> {
        self.turns.last().map(|turn| turn.fp)
    }

    /// Parses a record file; `None` for anything that is not a record this version reads.
    pub(crate) fn from_json(bytes: &[u8]) -> Option<Self> {
        let record: Self = serde_json::from_slice(bytes).ok()?;
        (record.v == VERSION && record.turns.len() <= KEPT_TURNS).then_some(record)
    }

    fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

mod fp_hex {
    use serde::{Deserialize as _, Deserializer, Serializer};

    use crate::history::HistoryFp;

    pub(super) fn serialize<S: Serializer>(fp: &HistoryFp, out: S) -> Result<S::Ok, S::Error> {
        out.serialize_str(&fp.to_hex())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(input: D) -> Result<HistoryFp, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(input)?;
        HistoryFp::from_hex(&text).ok_or_else(|| serde::de::Error::custom("not a fingerprint"))
    }
}

/// The index directory.
#[derive(Clone, Debug)]
pub(crate) struct IndexStore {
    dir: PathBuf,
}

/// Conversation ids are file names: what [`crate::ids`] makes, and legacy ones alike.
pub(crate) fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
}

impl IndexStore {
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// The two slots of `id`'s record.
    fn record_paths(&self, id: &str) -> [PathBuf; 2] {
        [
            self.dir.join(format!("{id}.a.json")),
            self.dir.join(format!("{id}.b.json")),
        ]
    }

    fn end_path(&self, fp: &HistoryFp) -> PathBuf {
        self.dir.join("ends").join(fp.to_hex())
    }

    /// The record of `id`, if it has a readable one: the valid slot with the higher sequence.
    pub(crate) fn record(&self, id: &str) -> Option<Record> {
        if !valid_id(id) {
            return None;
        }
        let mut found: Option<Record> = None;
        let mut damaged = false;
        for path in self.record_paths(id) {
            match read_bounded(&path, MAX_RECORD_BYTES) {
                Ok(Some(bytes)) => match Record::from_json(&bytes) {
                    Some(record) if found.as_ref().is_none_or(|f| record.seq > f.seq) => {
                        found = Some(record);
                    }
                    Some(_) => {}
                    None => damaged = true,
                },
                Ok(None) => {}
                Err(error) => {
                    tracing::warn!(conversation = id, %error, "an index record could not be read");
                    damaged = true;
                }
            }
        }
        if found.is_none() && damaged {
            tracing::warn!(
                conversation = id,
                "an index record is unreadable; that conversation will rebuild"
            );
        }
        found
    }

    /// The conversation a turn of which ended at `fp`, with its record.
    pub(crate) fn find(&self, fp: &HistoryFp) -> Option<(String, Record)> {
        let bytes = read_bounded(&self.end_path(fp), 256).ok()??;
        let id = std::str::from_utf8(&bytes).ok()?.trim();
        let record = self.record(id)?;
        // A pointer left by a turn the record has since dropped does not count.
        record
            .turns
            .iter()
            .any(|turn| turn.fp == *fp)
            .then(|| (id.to_owned(), record))
    }

    /// Writes `record` as `id`'s and points its newest turn end at it; the pointers of `dropped`
    /// turn ends are deleted where they still name `id`. Best effort: a failure is logged, and
    /// costs that conversation a rebuild in a new process.
    pub(crate) fn save(&self, id: &str, record: &Record, dropped: &[HistoryFp]) {
        if !valid_id(id) {
            return;
        }
        let slot = &self.record_paths(id)[(record.seq % 2) as usize];
        let written =
            write_afresh_private(slot, &record.to_json()).and_then(|()| match record.head() {
                // A turn end's pointer is written once, when its turn ends.
                Some(head) => write_once_private(&self.end_path(&head), id.as_bytes()),
                None => Ok(()),
            });
        if let Err(error) = written {
            tracing::warn!(conversation = id, %error, "could not write the conversation index");
        }
        for fp in dropped {
            self.unpoint(fp, id);
        }
    }

    /// Deletes the pointer of `fp` if it still names `id`.
    fn unpoint(&self, fp: &HistoryFp, id: &str) {
        let path = self.end_path(fp);
        let names_id = read_bounded(&path, 256)
            .ok()
            .flatten()
            .is_some_and(|bytes| bytes == id.as_bytes());
        if names_id && let Err(error) = remove_if_present(&path) {
            tracing::warn!(%error, "could not delete an index pointer");
        }
    }

    /// Ids of conversations whose record was last written before `before`.
    pub(crate) fn idle_since(&self, before: SystemTime) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name();
                let name = name.to_str()?;
                let id = name
                    .strip_suffix(".a.json")
                    .or_else(|| name.strip_suffix(".b.json"))?
                    .to_owned();
                let modified = entry.metadata().ok()?.modified().ok()?;
                valid_id(&id).then_some((id, modified))
            })
            .fold(
                std::collections::HashMap::<String, SystemTime>::new(),
                |mut newest, (id, modified)| {
                    let at = newest.entry(id).or_insert(modified);
                    *at = (*at).max(modified);
                    newest
                },
            )
            .into_iter()
            .filter(|(_, modified)| *modified < before)
            .map(|(id, _)| id)
            .collect()
    }

    /// Deletes `id`'s record and the pointers that still name it.
    pub(crate) fn purge(&self, id: &str) -> std::io::Result<()> {
        if !valid_id(id) {
            return Ok(());
        }
        if let Some(record) = self.record(id) {
            for turn in &record.turns {
                self.unpoint(&turn.fp, id);
            }
        }
        for path in self.record_paths(id) {
            remove_if_present(&path)?;
        }
        Ok(())
    }

    /// Deletes temporary files a crash left, and pointers naming no record, written before
    /// `before`; returns how many.
    pub(crate) fn sweep_debris(&self, before: SystemTime) -> usize {
        let mut removed = 0;
        for dir in [self.dir.clone(), self.dir.join("ends")] {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                let old = entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|modified| modified < before);
                if !old {
                    continue;
                }
                let debris = is_temporary(&name)
                    || (dir.ends_with("ends") && {
                        let target = read_bounded(&entry.path(), 256).ok().flatten();
                        target.is_none_or(|id| {
                            std::str::from_utf8(&id).map_or(true, |id| {
                                !self.record_paths(id.trim()).iter().any(|p| p.exists())
                            })
                        })
                    });
                if debris && std::fs::remove_file(entry.path()).is_ok() {
                    removed += 1;
                }
            }
        }
        removed
    }

    /// Converts the index files of versions before 0.2 (`<id>.fp`, the head, and `<id>.turns`,
    /// every turn end appended) into records, once; returns how many conversations.
    pub(crate) fn migrate_legacy(&self) -> usize {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        let mut migrated = 0;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".fp")) else {
                continue;
            };
            let head = read_bounded(&entry.path(), 256)
                .ok()
                .flatten()
                .and_then(|bytes| HistoryFp::from_hex(&String::from_utf8_lossy(&bytes)));
            let turns_path = self.dir.join(format!("{id}.turns"));
            let text = read_bounded(&turns_path, 64 << 20)
                .ok()
                .flatten()
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                .unwrap_or_default();
            let mut turns: Vec<TurnEnd> = text
                .lines()
                .filter_map(HistoryFp::from_hex)
                .map(|fp| TurnEnd { fp, tokens: None })
                .collect();
            if let Some(head) = head {
                turns.retain(|turn| turn.fp != head);
                turns.push(TurnEnd {
                    fp: head,
                    tokens: None,
                });
            }
            let keep = turns.len().saturating_sub(KEPT_TURNS);
            turns.drain(..keep);
            if valid_id(id) && !turns.is_empty() {
                let record = Record {
                    v: VERSION,
                    seq: 1,
                    turns,
                    splices: Vec::new(),
                };
                for turn in &record.turns {
                    let _ = replace_private(
                        &self.end_path(&turn.fp),
                        id.as_bytes(),
                        Durability::Atomic,
                    );
                }
                self.save(id, &record, &[]);
                migrated += 1;
            }
            let _ = remove_if_present(&entry.path());
            let _ = remove_if_present(&turns_path);
        }
        migrated
    }
}

/// A record that is new.
pub(crate) fn new_record() -> Record {
    Record {
        v: VERSION,
        ..Record::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(n: u8) -> HistoryFp {
        HistoryFp([n; 16])
    }

    fn record(fps: &[u8]) -> Record {
        let mut record = new_record();
        record.seq = fps.len() as u64;
        record.turns = fps
            .iter()
            .map(|n| TurnEnd {
                fp: fp(*n),
                tokens: Some(u64::from(*n)),
            })
            .collect();
        record
    }

    #[test]
    fn a_turn_end_finds_its_conversation_until_the_record_drops_it() {
        let dir = tempfile::tempdir().unwrap();
        let index = IndexStore::new(dir.path().to_owned());
        index.save("c-1", &record(&[1]), &[]);
        index.save("c-1", &record(&[1, 2]), &[]);
        let (id, found) = index.find(&fp(2)).unwrap();
        assert_eq!((id.as_str(), found.head()), ("c-1", Some(fp(2))));
        assert!(
            index.find(&fp(1)).is_some(),
            "an earlier turn is a branch point"
        );
        index.save("c-1", &record(&[2, 3]), &[fp(1)]);
        assert!(index.find(&fp(1)).is_none());
        assert!(!dir.path().join("ends").join(fp(1).to_hex()).exists());
        assert!(index.find(&fp(9)).is_none());
    }

    #[test]
    fn damaged_and_foreign_files_are_treated_as_missing() {
        let dir = tempfile::tempdir().unwrap();
        let index = IndexStore::new(dir.path().to_owned());
        index.save("c-1", &record(&[1]), &[]);
        for slot in ["c-1.a.json", "c-1.b.json"] {
            std::fs::write(
                dir.path().join(slot),
                b"{\"v\": 1, \"turns\": [{\"fp\": \"zz\"}]}",
            )
            .unwrap();
        }
        assert!(index.find(&fp(1)).is_none());
        for slot in ["c-1.a.json", "c-1.b.json"] {
            std::fs::write(dir.path().join(slot), b"{\"v\": 99, \"turns\": []}").unwrap();
        }
        assert!(index.record("c-1").is_none());
        std::fs::write(
            dir.path().join("ends").join(fp(1).to_hex()),
            b"../../etc/passwd",
        )
        .unwrap();
        assert!(index.find(&fp(1)).is_none());
        assert!(Record::from_json(&[0xff, 0x00]).is_none());
    }

    #[test]
    fn a_save_cut_short_leaves_the_previous_version_readable() {
        let dir = tempfile::tempdir().unwrap();
        let index = IndexStore::new(dir.path().to_owned());
        index.save("c-1", &record(&[1]), &[]);
        index.save("c-1", &record(&[1, 2]), &[]);
        assert_eq!(index.record("c-1").unwrap().head(), Some(fp(2)));
        // The next save (sequence 3) writes slot b afresh; a crash cuts it short.
        let newer = record(&[1, 2, 3]);
        let bytes = newer.to_json();
        std::fs::write(dir.path().join("c-1.b.json"), &bytes[..bytes.len() / 2]).unwrap();
        assert_eq!(
            index.record("c-1").unwrap().head(),
            Some(fp(2)),
            "the whole older slot"
        );
        index.save("c-1", &newer, &[]);
        assert_eq!(index.record("c-1").unwrap().head(), Some(fp(3)));
        assert_eq!(
            index.idle_since(SystemTime::now() + std::time::Duration::from_secs(1)),
            ["c-1"]
        );
    }

    #[test]
    fn purge_removes_the_record_and_only_the_pointers_that_still_name_it() {
        let dir = tempfile::tempdir().unwrap();
        let index = IndexStore::new(dir.path().to_owned());
        index.save("c-1", &record(&[1, 2]), &[]);
        index.save("c-2", &record(&[2]), &[]);
        index.purge("c-1").unwrap();
        assert!(index.record("c-1").is_none());
        assert_eq!(
            index.find(&fp(2)).unwrap().0,
            "c-2",
            "c-2 owns that end now"
        );
    }

    #[test]
    fn legacy_index_files_become_records_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("c-old.fp"), fp(5).to_hex()).unwrap();
        std::fs::write(
            dir.path().join("c-old.turns"),
            format!("{}\n{}\n", fp(4).to_hex(), fp(5).to_hex()),
        )
        .unwrap();
        let index = IndexStore::new(dir.path().to_owned());
        assert_eq!(index.migrate_legacy(), 1);
        assert_eq!(index.migrate_legacy(), 0);
        assert_eq!(index.find(&fp(5)).unwrap().1.head(), Some(fp(5)));
        assert!(index.find(&fp(4)).is_some());
        assert!(!dir.path().join("c-old.fp").exists());
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// What the gateway writes, it reads back the same; anything else is refused.
        #[test]
        fn a_record_round_trips_and_any_bytes_are_read_without_a_panic(
            turns in proptest::collection::vec((any::<[u8; 16]>(), proptest::option::of(any::<u64>())), 0..KEPT_TURNS),
            splice_at in proptest::option::of(0usize..1000),
            text in "\\PC{0,40}",
            bytes in proptest::collection::vec(any::<u8>(), 0..200),
        ) {
            let mut record = new_record();
            record.turns = turns
                .into_iter()
                .map(|(fp, tokens)| TurnEnd { fp: HistoryFp(fp), tokens })
                .collect();
            if let Some(at) = splice_at {
                record.splices.push(Splice { at, messages: vec![Message::user_text(text)] });
            }
            prop_assert_eq!(Record::from_json(&record.to_json()), Some(record));
            let _ = Record::from_json(&bytes);
        }
    }
}
