//! Native exec translation (PROTOCOL-AGENT §5.1): a translatable native request (shell, read,
//! write, delete, grep/glob, ls and the `pi_*` arms) becomes an ordinary host tool call, chosen
//! by capability against the tools the host registered (never by a fixed name), and the host's
//! result is encoded back into the native result shape. The host's permission system stays the
//! only execution authority; nothing runs in this process.
//!
//! Routes, in order: a dedicated tool for the operation's capability whose schema can express
//! it; the capability's fallbacks (a command tool running an equivalent command); a code-mode
//! tool running a synthesized script. With none, the caller refuses as before.

mod args;
mod codemode;
mod encode;
mod native;
#[cfg(test)]
mod option_guard;

use std::time::Duration;

use cursor_proto::agent::v1::exec_client_message::Message as Reply;
use cursor_proto::ir::{Tool, ToolResult};
use serde_json::json;

#[cfg(feature = "fuzzing")]
pub(crate) use encode::read_footer;
pub(crate) use native::{Native, ShellReply};

use crate::intent::Capability;
use crate::ranking::{best_for, is_codemode};

/// How a translation reaches the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// A tool for the operation's own capability (or a non-command fallback).
    Direct,
    /// A command tool running the equivalent command.
    Command,
    /// A code-mode tool running a synthesized script.
    Codemode,
}

/// A planned translation: the host tool call to make and how to read its result.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Translation {
    pub(crate) native: Native,
    pub(crate) route: Route,
    pub(crate) tool: String,
    pub(crate) arguments: serde_json::Value,
}

/// Plans the host tool call for `native`, or `None` when no registered tool can serve it.
pub(crate) fn plan(native: &Native, tools: &[Tool]) -> Option<Translation> {
    let op = native.intent();
    let own = op.capability();
    let mut current = own;
    while let Some(capability) = current {
        if let Some(tool) = best_for(tools, capability) {
            let (route, arguments) = if Some(capability) == own {
                (Route::Direct, args::direct(tool, &op))
            } else if capability == Capability::Command {
                (
                    Route::Command,
                    op.as_command().and_then(|c| args::command(tool, &c)),
                )
            } else {
                (Route::Direct, None)
            };
            if let Some(arguments) = arguments {
                return Some(Translation {
                    native: native.clone(),
                    route,
                    tool: tool.name.clone(),
                    arguments,
                });
            }
        }
        current = capability.fallback();
    }
    let codemode = tools.iter().find(|tool| is_codemode(tool))?;
    Some(Translation {
        arguments: json!({ "code": codemode::script(&op, &codemode.name) }),
        native: native.clone(),
        route: Route::Codemode,
        tool: codemode.name.clone(),
    })
}

impl Translation {
    /// The native replies answering the host's `result` (the caller appends `stream_close`).
    ///
    /// The text is capped by the same rule as an MCP result's ([`crate::mcp::cap_bytes`]):
    /// a host tool's output of any size becomes a reply the transport can carry.
    pub(crate) fn encode(
        &self,
        result: &ToolResult,
        elapsed: Duration,
        workspace_root: &str,
        cap: &crate::mcp::TextCap<'_>,
    ) -> Vec<Reply> {
        let text = cap.apply(&result.joined_text());
        let output = match self.route {
            Route::Codemode => {
                let (text, failed) = codemode::unwrap(&text);
                encode::Output {
                    text,
                    is_error: failed || result.is_error,
                }
            }
            Route::Direct | Route::Command => encode::Output {
                text,
                is_error: result.is_error,
            },
        };
        encode::encode(&self.native, &output, elapsed, workspace_root)
    }

    /// The replies for a call the host returned nothing for.
    pub(crate) fn encode_missing(&self, workspace_root: &str, host: &str) -> Vec<Reply> {
        let output = encode::Output {
            text: format!("{host} returned no result for this tool call."),
            is_error: true,
        };
        encode::encode(&self.native, &output, Duration::ZERO, workspace_root)
    }
}

/// The path of the first workspace root (`file:///work` → `/work`), the key of grep results.
pub(crate) fn workspace_root(uris: &[String]) -> String {
    uris.first()
        .map(|uri| crate::file_uri::to_path_str(uri).unwrap_or_else(|| uri.clone()))
        .unwrap_or_else(|| ".".into())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_workspace_url_with_escapes_is_the_directory_it_names() {
        let uris = vec!["file:///home/me/my%20project".to_owned()];
        assert_eq!(super::workspace_root(&uris), "/home/me/my project");
        assert_eq!(super::workspace_root(&[]), ".");
    }
}
