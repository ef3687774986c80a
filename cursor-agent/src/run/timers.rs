//! The clock: the first-frame and idle watchdogs, heartbeats, the tool-call debounce.

use super::*;

/// The idle watchdog: armed at `since` (the last work, or a leg's start). Its deadline is
/// computed when polled, so marking work on every frame is one store.
#[derive(Clone, Copy, Debug)]
pub(super) struct WorkDeadline {
    pub(super) since: Instant,
    pub(super) first_frame: bool,
}

impl WorkDeadline {
    fn waits(self, timers: &crate::Timers) -> std::time::Duration {
        if self.first_frame {
            timers.first_frame_timeout
        } else {
            timers.idle_timeout
        }
    }

    fn at(self, timers: &crate::Timers) -> Instant {
        self.since + self.waits(timers)
    }
}

impl AgentRun {
    /// When [`handle_timeout`](Self::handle_timeout) must be called next; `None` once finished.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.phase == Phase::Finished {
            return None;
        }
        let debounce = self.debounce_at.filter(|_| self.phase == Phase::Streaming);
        [
            debounce,
            self.work_deadline.map(|d| d.at(&self.config.timers)),
            self.heartbeat_at,
            self.exec_heartbeat_at,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Time passed: ends a debounced tool-call burst, fires the idle watchdog, sends heartbeats.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.phase == Phase::Finished {
            return;
        }
        if self.phase == Phase::Streaming
            && self.debounce_at.is_some_and(|at| now >= at)
            && !self.pending.is_empty()
        {
            self.yield_tool_use();
        }
        let timers = &self.config.timers;
        if let Some(deadline) = self.work_deadline.filter(|d| now >= d.at(timers)) {
            self.fail(AgentError::Idle {
                waited: deadline.waits(timers),
                first_frame: deadline.first_frame,
            });
            return;
        }
        if self.heartbeat_at.is_some_and(|at| now >= at) {
            self.transmits.push_back(frames::heartbeat());
            self.heartbeat_at = Some(now + self.config.timers.heartbeat_interval);
        }
        if self.exec_heartbeat_at.is_some_and(|at| now >= at) {
            let parked: Vec<u32> = self
                .pending
                .iter()
                .filter(|p| p.translation.is_some())
                .map(|p| p.id)
                .collect();
            for id in &parked {
                self.transmits.push_back(frames::exec_heartbeat(*id));
            }
            self.exec_heartbeat_at =
                (!parked.is_empty()).then(|| now + self.config.timers.exec_heartbeat_interval);
        }
    }
}
