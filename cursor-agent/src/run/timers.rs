//! The clock: one table of the Run's deadlines (the first-frame and idle watchdog, heartbeats,
//! exec heartbeats, the tool-call debounce), and the handlers that read it.

use std::time::{Duration, Instant};

use super::{AgentRun, Phase};
use crate::{AgentError, Timers, frames};

/// The Run's timers, each one slot of a [`TimerTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Timer {
    /// Quiet time after the last host tool call of a burst: the leg then ends with `ToolUse`.
    Debounce,
    /// The first-frame or idle watchdog (see [`Watchdog`]).
    Watchdog,
    /// The next `ClientHeartbeat`.
    Heartbeat,
    /// The next `ExecClientHeartbeat`s for translated execs parked on the host.
    ExecHeartbeat,
}

impl Timer {
    const ALL: [Self; 4] = [
        Self::Debounce,
        Self::Watchdog,
        Self::Heartbeat,
        Self::ExecHeartbeat,
    ];
}

/// Which wait the watchdog slot measures from the instant it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Watchdog {
    /// A leg's first work frame is due within `first_frame_timeout`.
    FirstFrame,
    /// The next work frame is due within `idle_timeout`.
    Idle,
}

impl Watchdog {
    pub(super) fn waits(self, timers: &Timers) -> Duration {
        match self {
            Self::FirstFrame => timers.first_frame_timeout,
            Self::Idle => timers.idle_timeout,
        }
    }
}

/// Every deadline of a Run, indexed by [`Timer`].
///
/// Each slot holds when its timer fires, except the watchdog's: it holds when the watchdog was
/// last armed (the last work, or a leg's start) and its deadline adds the wait [`Watchdog`]
/// names, so marking work on every frame is one store.
#[derive(Clone, Debug)]
pub(super) struct TimerTable {
    slots: [Option<Instant>; 4],
    watchdog: Watchdog,
}

impl TimerTable {
    /// A new Run's table: the first-frame watchdog and the heartbeat armed at `now`.
    pub(super) fn new(now: Instant, timers: &Timers) -> Self {
        let mut table = Self {
            slots: [None; 4],
            watchdog: Watchdog::FirstFrame,
        };
        table.arm_watchdog(now, Watchdog::FirstFrame);
        table.set(Timer::Heartbeat, now + timers.heartbeat_interval);
        table
    }

    /// Arms `timer` to fire at `at` (for the watchdog use [`arm_watchdog`](Self::arm_watchdog)).
    pub(super) fn set(&mut self, timer: Timer, at: Instant) {
        debug_assert_ne!(timer, Timer::Watchdog);
        self.slots[timer as usize] = Some(at);
    }

    /// Disarms `timer`.
    pub(super) fn stop(&mut self, timer: Timer) {
        self.slots[timer as usize] = None;
    }

    /// Whether `timer` is armed.
    pub(super) fn is_armed(&self, timer: Timer) -> bool {
        self.slots[timer as usize].is_some()
    }

    /// Arms the watchdog for `wait`, counted from `since`.
    #[inline(always)]
    pub(super) fn arm_watchdog(&mut self, since: Instant, wait: Watchdog) {
        self.slots[Timer::Watchdog as usize] = Some(since);
        self.watchdog = wait;
    }

    /// The wait the watchdog measures.
    pub(super) fn watchdog(&self) -> Watchdog {
        self.watchdog
    }

    /// When `timer` fires, if it is armed.
    pub(super) fn deadline(&self, timer: Timer, timers: &Timers) -> Option<Instant> {
        let slot = self.slots[timer as usize]?;
        Some(match timer {
            Timer::Watchdog => slot + self.watchdog.waits(timers),
            _ => slot,
        })
    }

    /// Whether `timer` is armed and due at `now`.
    pub(super) fn is_due(&self, timer: Timer, now: Instant, timers: &Timers) -> bool {
        self.deadline(timer, timers).is_some_and(|at| now >= at)
    }

    /// The earliest armed deadline.
    pub(super) fn next_timeout(&self, timers: &Timers) -> Option<Instant> {
        Timer::ALL
            .into_iter()
            .filter_map(|timer| self.deadline(timer, timers))
            .min()
    }
}

impl AgentRun {
    /// When [`handle_timeout`](Self::handle_timeout) must be called next; `None` once finished.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.phase.is_finished() {
            return None;
        }
        self.deadlines.next_timeout(&self.config.timers)
    }

    /// Time passed: ends a debounced tool-call burst, fires the idle watchdog, sends heartbeats.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.phase.is_finished() {
            return;
        }
        if let Phase::Streaming(calls) = &self.phase
            && self
                .deadlines
                .is_due(Timer::Debounce, now, &self.config.timers)
            && !calls.is_empty()
        {
            self.yield_tool_use();
        }
        let timers = &self.config.timers;
        if self.deadlines.is_due(Timer::Watchdog, now, timers) {
            let watchdog = self.deadlines.watchdog();
            self.fail(AgentError::Idle {
                waited: watchdog.waits(timers),
                first_frame: watchdog == Watchdog::FirstFrame,
            });
            return;
        }
        if self.deadlines.is_due(Timer::Heartbeat, now, timers) {
            self.transmits.push_back(frames::heartbeat());
            self.deadlines
                .set(Timer::Heartbeat, now + timers.heartbeat_interval);
        }
        if self.deadlines.is_due(Timer::ExecHeartbeat, now, timers) {
            let mut parked = 0;
            if let Some(calls) = self.phase.calls() {
                for id in calls.translated_ids() {
                    self.transmits.push_back(frames::exec_heartbeat(id));
                    parked += 1;
                }
            }
            if parked == 0 {
                self.deadlines.stop(Timer::ExecHeartbeat);
            } else {
                self.deadlines
                    .set(Timer::ExecHeartbeat, now + timers.exec_heartbeat_interval);
            }
        }
    }
}
