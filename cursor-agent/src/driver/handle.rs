//! [`RunHandle`]: the host's commands to a driven Run.

use cursor_proto::ir::{Tool, ToolResult};
use tokio::sync::{mpsc, oneshot};

use crate::AgentError;

/// One host command, applied by the task between two inputs.
#[derive(Debug)]
pub(crate) enum Command {
    Submit {
        results: Vec<ToolResult>,
        reply: oneshot::Sender<Result<(), AgentError>>,
    },
    UpdateTools(Vec<Tool>),
    Cancel,
}

/// Commands for a driven Run. Cheap to clone; every clone talks to the same run.
///
/// Dropping every handle while the run waits for tool results cancels it (nobody can submit
/// them any more); otherwise the run goes on to its end.
#[derive(Clone, Debug)]
pub struct RunHandle {
    commands: mpsc::UnboundedSender<Command>,
}

impl RunHandle {
    pub(crate) fn new(commands: mpsc::UnboundedSender<Command>) -> Self {
        Self { commands }
    }

    /// Submits the host's results for the tool calls of the leg that ended with `ToolUse`;
    /// they are written on the same stream and the next leg's events follow on the event
    /// stream. See [`AgentRun::submit_tool_results`](crate::AgentRun::submit_tool_results) for
    /// the errors; a run that is already over answers
    /// [`AgentError::NotAwaitingTools`].
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe as far as the run goes: once called, the results reach the run whether or not
    /// the returned future is polled further; dropping it only loses the answer (the run's next
    /// events still follow).
    pub async fn submit_tool_results(&self, results: Vec<ToolResult>) -> Result<(), AgentError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::Submit { results, reply })
            .map_err(|_| AgentError::NotAwaitingTools)?;
        answer.await.unwrap_or(Err(AgentError::NotAwaitingTools))
    }

    /// Replaces the host's live tool registry (see
    /// [`AgentRun::update_tools`](crate::AgentRun::update_tools)).
    pub fn update_tools(&self, tools: Vec<Tool>) {
        // A finished run has no use for tools; nothing to report.
        let _ = self.commands.send(Command::UpdateTools(tools));
    }

    /// Cancels the run: the current leg ends with `Aborted` and the stream is reset.
    pub fn cancel(&self) {
        let _ = self.commands.send(Command::Cancel);
    }

    /// True once the run's task is gone (finished or dropped).
    pub fn is_closed(&self) -> bool {
        self.commands.is_closed()
    }
}
