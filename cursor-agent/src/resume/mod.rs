//! Cross-process resume (PROTOCOL-AGENT §0, §10; DESIGN §3.1, §5).
//!
//! The remote conversation is the primary timeline. Per host session a [`Handle`] remembers
//! the remote conversation id, the last checkpoint, the run's blobs, the [`Fingerprint`] of the
//! completed user turns and the [`ToolsetKey`]. A [`ResumePlanner`] plans each Run from it: when the
//! fingerprint matches, a resume (same id, checkpoint overlaid, only the current rules added to
//! the root prompt, no history replay, `mcp_tools` omitted while the tool set is unchanged);
//! otherwise a rebuild (new id, empty turns, full root prompt). A stale resume discovered
//! mid-run is rebuilt once, with a `Reset`; a miss during a rebuild fails closed.
//! [`HandleStore`] keeps handles on disk.
//!
//! A handle keeps the checkpoint of every recent turn (format version 2), so a host that branches
//! resumes from the turn it branched at ([`ResumeFrom`]; PROTOCOL-AGENT §10.1).

mod fingerprint;
mod handle;
mod plan;
mod store;

pub use fingerprint::{Fingerprint, ToolsetKey};
pub use handle::{
    HANDLE_FORMAT_VERSION, Handle, HandleFileError, KEPT_BRANCH_POINTS, KEPT_TURNS, TurnPoint,
};
pub use plan::{Plan, ResumeFrom, ResumePlanner, RunLabel, StaleReason};
pub use store::{HandleRepository, HandleStore, Loaded, StoreError, StoreWarning};
