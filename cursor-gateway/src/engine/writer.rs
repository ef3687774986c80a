//! The conversation index is written by one thread of its own, in the order turns end: writes
//! of many turns ending at once do not each take a thread of the blocking pool and then contend
//! for the same directories, and a conversation's records reach the disk in order.

use std::sync::mpsc;

use tokio::sync::oneshot;

use crate::history::HistoryFp;
use crate::state::index::{IndexStore, Record};

/// One record to write, and who waits for it.
struct Job {
    id: String,
    record: Record,
    dropped: Vec<HistoryFp>,
    done: oneshot::Sender<()>,
}

/// The index's writer thread; it ends when the engine is dropped.
#[derive(Debug)]
pub(crate) struct IndexWriter {
    jobs: mpsc::Sender<Job>,
    index: IndexStore,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl IndexWriter {
    pub(crate) fn start(index: IndexStore) -> Self {
        let (jobs, queue) = mpsc::channel::<Job>();
        let writes = index.clone();
        let spawned = std::thread::Builder::new()
            .name("cursor-gateway-index".into())
            .spawn(move || {
                for job in queue {
                    writes.save(&job.id, &job.record, &job.dropped);
                    let _ = job.done.send(());
                }
            });
        if let Err(error) = spawned {
            // Writes then fall back to the blocking pool (see `save`).
            tracing::warn!(%error, "no thread for the index writer");
        }
        Self { jobs, index }
    }

    /// Writes `record` as `id`'s and returns once it is written.
    pub(crate) async fn save(&self, id: String, record: Record, dropped: Vec<HistoryFp>) {
        let (done, written) = oneshot::channel();
        let job = Job {
            id,
            record,
            dropped,
            done,
        };
        match self.jobs.send(job) {
            Ok(()) => {
                let _ = written.await;
            }
            Err(mpsc::SendError(job)) => {
                let index = self.index.clone();
                let _ =
                    super::blocking::run(move || index.save(&job.id, &job.record, &job.dropped))
                        .await;
            }
        }
    }
}
