//! The texts that answer refused native requests: name the best host tool and hand the model a
//! copy-pasteable call (PROTOCOL-AGENT §5). A wall of tool names does not redirect a model; one
//! named tool with the exact call does.

use cursor_proto::ir::Tool;

use crate::intent::{Capability, Intent};
use crate::ranking::{PATH_KEYS, Pick, best_tool, command_key, schema_key};

/// Every redirect ends with this sentence, so the model (and an audit log) can tell that nothing ran.
pub(crate) const NOTHING_RAN: &str = "No operation was performed.";

const PATTERN_KEYS: [&str; 4] = ["pattern", "query", "regex", "glob"];
const URL_KEYS: [&str; 3] = ["url", "uri", "href"];

/// Builds redirect texts against the host's tool list.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Redirector<'a> {
    pub(crate) tools: &'a [Tool],
    /// `mcp_<provider>_`.
    pub(crate) prefix: &'a str,
    /// How the texts name the host ([`HostProfile::display_name`](crate::HostProfile::display_name)).
    pub(crate) host: &'a str,
}

impl Redirector<'_> {
    /// The reason text for a refused native request. `native` names the Cursor tool (`Shell`),
    /// `hardened` switches to the single imperative used once the model keeps missing.
    pub(crate) fn text(&self, native: &str, intent: &Intent, hardened: bool) -> String {
        let pick = intent.capability().map_or_else(
            || {
                self.tools
                    .first()
                    .map_or(Pick::NoTools, |first| Pick::Unmatched { first })
            },
            |capability| best_tool(self.tools, capability),
        );
        match pick {
            Pick::NoTools => format!(
                "Cursor native tool {native} is disabled in this session and {host} registered no tools. {NOTHING_RAN}",
                host = self.host
            ),
            Pick::Matched { tool, capability } => {
                let call = self.call(tool, capability, intent);
                if hardened {
                    format!(
                        "STOP calling Cursor native tools: they are disabled and nothing runs. Call {call} instead. {NOTHING_RAN}"
                    )
                } else {
                    let goal = intent.capability().map_or("do that", Capability::phrase);
                    format!(
                        "Cursor native tool {native} is disabled in this session: {host} runs local work only through its MCP tools. To {goal} from {host}, call {call}. {NOTHING_RAN}",
                        host = self.host
                    )
                }
            }
            Pick::Unmatched { first } => {
                let list = self.list();
                let first = self.model_name(first);
                if hardened {
                    format!(
                        "STOP calling Cursor native tools: they are disabled and nothing runs. Use {host}'s MCP tools ({list}), for example `{first}`. {NOTHING_RAN}",
                        host = self.host
                    )
                } else {
                    format!(
                        "Cursor native tool {native} is disabled in this session and no {host} tool matches that request. {host}'s MCP tools are: {list}; for example `{first}`. {NOTHING_RAN}",
                        host = self.host
                    )
                }
            }
        }
    }

    /// The model-facing name of the best command tool (the loop guard's next step).
    pub(crate) fn command_tool(&self) -> Option<String> {
        match best_tool(self.tools, Capability::Command) {
            Pick::Matched { tool, .. } | Pick::Unmatched { first: tool } => {
                Some(self.model_name(tool))
            }
            Pick::NoTools => None,
        }
    }

    fn model_name(&self, tool: &Tool) -> String {
        format!("{}{}", self.prefix, tool.name)
    }

    fn list(&self) -> String {
        let names: Vec<String> = self
            .tools
            .iter()
            .map(|tool| format!("`{}`", self.model_name(tool)))
            .collect();
        names.join(", ")
    }

    /// "the MCP tool `mcp_pi_bash` with {"command": "ls"}", or without arguments when the
    /// request cannot be expressed for that tool.
    fn call(&self, tool: &Tool, capability: Capability, intent: &Intent) -> String {
        let name = self.model_name(tool);
        match arguments(tool, capability, intent) {
            Some(args) => format!("the MCP tool `{name}` with {args}"),
            None => format!("the MCP tool `{name}`"),
        }
    }
}

/// The request's arguments in the chosen tool's own property names, rendered as JSON.
fn arguments(tool: &Tool, capability: Capability, intent: &Intent) -> Option<String> {
    let key = |candidates: &[&'static str], default: &'static str| {
        schema_key(tool, candidates).unwrap_or(default)
    };
    let pairs: Vec<(&str, &str)> = match (capability, intent) {
        (Capability::Command, intent) => {
            let command = intent.as_command()?;
            let key = command_key(tool).unwrap_or("command");
            return Some(render(&[(key, command.as_str())]));
        }
        (
            _,
            Intent::Read { path, .. }
            | Intent::Write { path, .. }
            | Intent::Edit { path, .. }
            | Intent::Delete { path }
            | Intent::List { path, .. },
        ) => vec![(key(&PATH_KEYS, "path"), path.as_str())],
        (_, Intent::Search { pattern, path, .. } | Intent::Find { pattern, path, .. }) => {
            let mut pairs = vec![(key(&PATTERN_KEYS, "pattern"), pattern.as_str())];
            if let Some(path) = path {
                pairs.push((key(&PATH_KEYS, "path"), path.as_str()));
            }
            pairs
        }
        (_, Intent::Fetch { url }) => vec![(key(&URL_KEYS, "url"), url.as_str())],
        (_, Intent::Command { .. } | Intent::Other) => return None,
    };
    Some(render(&pairs))
}

fn render(pairs: &[(&str, &str)]) -> String {
    let fields: Vec<String> = pairs
        .iter()
        .map(|(key, value)| {
            format!(
                "{}: {}",
                serde_json::Value::from(*key),
                serde_json::Value::from(*value)
            )
        })
        .collect();
    format!("{{{}}}", fields.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Vec<Tool> {
        vec![
            Tool::new("read", "Read a file", json!({"properties": {"path": {}}})),
            Tool::new(
                "ctx_shell",
                "Run things",
                json!({"properties": {"command": {}}}),
            ),
        ]
    }

    #[test]
    fn shell_redirect_embeds_a_copy_pasteable_call() {
        let tools = tools();
        let redirector = Redirector {
            tools: &tools,
            prefix: "mcp_pi_",
            host: "acme",
        };
        let intent = Intent::command("vainfo --display drm");
        assert_eq!(
            redirector.text("Shell", &intent, false),
            "Cursor native tool Shell is disabled in this session: acme runs local work only through its MCP tools. To run a command from acme, call the MCP tool `mcp_pi_ctx_shell` with {\"command\": \"vainfo --display drm\"}. No operation was performed."
        );
    }

    #[test]
    fn hardened_text_is_a_single_imperative() {
        let tools = tools();
        let redirector = Redirector {
            tools: &tools,
            prefix: "mcp_pi_",
            host: "acme",
        };
        let text = redirector.text("Read", &Intent::read("/etc/hosts"), true);
        assert_eq!(
            text,
            "STOP calling Cursor native tools: they are disabled and nothing runs. Call the MCP tool `mcp_pi_read` with {\"path\": \"/etc/hosts\"} instead. No operation was performed."
        );
    }

    #[test]
    fn delete_without_a_delete_tool_goes_through_the_command_tool() {
        let tools = tools();
        let redirector = Redirector {
            tools: &tools,
            prefix: "mcp_pi_",
            host: "acme",
        };
        let text = redirector.text(
            "Delete",
            &Intent::Delete {
                path: "a.txt".into(),
            },
            false,
        );
        assert!(
            text.contains(
                "`mcp_pi_ctx_shell` with {\"command\": \"sz=$(wc -c < 'a.txt') && rm -- 'a.txt' && "
            ),
            "{text}"
        );
    }

    #[test]
    fn total_miss_lists_every_tool_in_registration_order() {
        let tools = vec![
            Tool::new("alpha", "", json!({})),
            Tool::new("beta", "", json!({})),
        ];
        let redirector = Redirector {
            tools: &tools,
            prefix: "mcp_pi_",
            host: "acme",
        };
        let text = redirector.text(
            "Fetch",
            &Intent::Fetch {
                url: "https://x.example.com".into(),
            },
            false,
        );
        assert!(
            text.contains("`mcp_pi_alpha`, `mcp_pi_beta`; for example `mcp_pi_alpha`"),
            "{text}"
        );
        assert!(text.ends_with(NOTHING_RAN));
    }

    #[test]
    fn no_tools_still_says_nothing_ran() {
        let redirector = Redirector {
            tools: &[],
            prefix: "mcp_pi_",
            host: "acme",
        };
        let text = redirector.text("Shell", &Intent::command("ls"), false);
        assert!(text.ends_with(NOTHING_RAN));
        assert_eq!(redirector.command_tool(), None);
    }

    #[test]
    fn arguments_use_the_tools_own_property_names() {
        let tools = vec![Tool::new(
            "grep",
            "",
            json!({"properties": {"regex": {}, "directory": {}}}),
        )];
        let redirector = Redirector {
            tools: &tools,
            prefix: "mcp_pi_",
            host: "acme",
        };
        let intent = Intent::Search {
            pattern: "fn main".into(),
            path: Some("src".into()),
            glob: None,
            ignore_case: None,
            literal: None,
            context: None,
            limit: None,
        };
        let text = redirector.text("Grep", &intent, false);
        assert!(
            text.contains("{\"regex\": \"fn main\", \"directory\": \"src\"}"),
            "{text}"
        );
    }
}
