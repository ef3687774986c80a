//! Capability ranking of host tools: which registered tool best serves a native request.
//!
//! Signals, strongest first (PROTOCOL-AGENT §5): the tool's name is an exact alias, a capability
//! word appears in its name, (commands only) its JSON Schema has a command-like property, a
//! capability word appears in its description. Ties keep registration order.

use cursor_proto::ir::Tool;
use serde_json::Value;

use crate::intent::Capability;

/// Properties that mark a tool as taking a shell command.
pub(crate) const COMMAND_KEYS: [&str; 3] = ["command", "cmd", "script"];

/// Schema properties that take a file or directory path, most common first: what both the
/// translated call and the redirect's example call fill.
pub(crate) const PATH_KEYS: [&str; 8] = [
    "path",
    "file_path",
    "filePath",
    "file",
    "filename",
    "directory",
    "dir",
    "target",
];

/// The tool chosen for a request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Pick<'a> {
    /// A tool matched `capability` (the requested one or one of its fallbacks).
    Matched {
        tool: &'a Tool,
        capability: Capability,
    },
    /// No tool matched any signal: the first registered tool, to be shown with the full list.
    Unmatched { first: &'a Tool },
    /// The host registered no tools.
    NoTools,
}

/// The best tool for `capability`, following its fallback chain before giving up.
pub(crate) fn best_tool(tools: &[Tool], capability: Capability) -> Pick<'_> {
    let Some(first) = tools.first() else {
        return Pick::NoTools;
    };
    let mut current = Some(capability);
    while let Some(capability) = current {
        if let Some(tool) = best_for(tools, capability) {
            return Pick::Matched { tool, capability };
        }
        current = capability.fallback();
    }
    Pick::Unmatched { first }
}

/// The highest-scoring tool for exactly `capability` (no fallback), registration order on ties.
pub(crate) fn best_for(tools: &[Tool], capability: Capability) -> Option<&Tool> {
    let mut best: Option<(&Tool, u8)> = None;
    for tool in tools {
        let score = score(tool, capability);
        // Strictly greater keeps the earliest registered tool on ties.
        if score > 0 && best.is_none_or(|(_, s)| score > s) {
            best = Some((tool, score));
        }
    }
    best.map(|(tool, _)| tool)
}

fn score(tool: &Tool, capability: Capability) -> u8 {
    // A code-mode tool can do anything, so its description would win every match (§5.1).
    if is_codemode(tool) {
        return 0;
    }
    let name = tool.name.to_ascii_lowercase();
    if capability.aliases().contains(&name.as_str()) {
        return 4;
    }
    let name_words = words(&tool.name);
    if capability
        .words()
        .iter()
        .any(|w| name_words.iter().any(|n| n == w))
    {
        return 3;
    }
    if capability == Capability::Command && command_key(tool).is_some() {
        return 2;
    }
    let description_words = words(&tool.description);
    if capability
        .words()
        .iter()
        .any(|w| description_words.iter().any(|d| d == w))
    {
        return 1;
    }
    0
}

/// The tool's command-like schema property, if it has one.
pub(crate) fn command_key(tool: &Tool) -> Option<&'static str> {
    schema_key(tool, &COMMAND_KEYS)
}

/// The first of `candidates` that the tool's JSON Schema declares as a property.
pub(crate) fn schema_key(tool: &Tool, candidates: &[&'static str]) -> Option<&'static str> {
    let properties = tool.parameters.get("properties")?.as_object()?;
    candidates
        .iter()
        .copied()
        .find(|key| properties.contains_key(*key))
}

/// Lower-case words of a name or text: split on non-alphanumerics and camelCase humps.
pub(crate) fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_lowercase() || c.is_numeric();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Tool names ordered by how many words they share with `requested` (an unregistered name the
/// model called), registration order on ties: the `available_tools` of a not-found reply.
pub(crate) fn rank_by_shared_words(tools: &[Tool], requested: &str) -> Vec<String> {
    let wanted = words(requested);
    let mut scored: Vec<(usize, usize, &Tool)> = tools
        .iter()
        .enumerate()
        .map(|(index, tool)| {
            let have = words(&tool.name);
            let shared = wanted.iter().filter(|w| have.contains(w)).count();
            (shared, index, tool)
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .map(|(_, _, tool)| tool.name.clone())
        .collect()
}

/// True for a tool whose schema takes `code` and whose name or description says code mode.
pub(crate) fn is_codemode(tool: &Tool) -> bool {
    let takes_code = tool
        .parameters
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| p.contains_key("code"));
    if !takes_code {
        return false;
    }
    let name = words(&tool.name);
    let description = words(&tool.description);
    let says = |w: &[String]| {
        w.iter().any(|w| w == "codemode")
            || w.windows(2)
                .any(|pair| pair[0] == "code" && pair[1] == "mode")
    };
    says(&name) || says(&description)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn code_mode_needs_both_the_code_property_and_the_words() {
        let codemode = Tool::new(
            "codemode",
            "Run JavaScript",
            json!({"properties": {"code": {}}}),
        );
        assert!(is_codemode(&codemode));
        let described = Tool::new(
            "js",
            "Code mode runner",
            json!({"properties": {"code": {}}}),
        );
        assert!(is_codemode(&described));
        let editor = Tool::new("code_search", "", json!({"properties": {"query": {}}}));
        assert!(!is_codemode(&editor));
    }

    fn tool(name: &str, description: &str, parameters: Value) -> Tool {
        Tool::new(name, description, parameters)
    }

    fn names(pick: Pick<'_>) -> Option<&str> {
        match pick {
            Pick::Matched { tool, .. } => Some(tool.name.as_str()),
            Pick::Unmatched { .. } | Pick::NoTools => None,
        }
    }

    #[test]
    fn exact_alias_beats_a_word_in_another_name() {
        let tools = [
            tool("shell_history", "", json!({})),
            tool("bash", "", json!({})),
        ];
        assert_eq!(names(best_tool(&tools, Capability::Command)), Some("bash"));
    }

    #[test]
    fn name_word_beats_schema_and_description() {
        let tools = [
            tool(
                "runner",
                "Executes a shell command",
                json!({"properties": {"script": {}}}),
            ),
            tool("ctx_shell", "", json!({})),
        ];
        assert_eq!(
            names(best_tool(&tools, Capability::Command)),
            Some("ctx_shell")
        );
    }

    #[test]
    fn command_property_in_schema_is_found_without_any_naming_hint() {
        let tools = [
            tool("alpha", "does things", json!({})),
            tool(
                "beta",
                "does other things",
                json!({"properties": {"cmd": {"type": "string"}}}),
            ),
        ];
        assert_eq!(names(best_tool(&tools, Capability::Command)), Some("beta"));
    }

    #[test]
    fn description_word_is_the_weakest_signal() {
        let tools = [
            tool("alpha", "", json!({})),
            tool("beta", "Search file contents", json!({})),
        ];
        assert_eq!(names(best_tool(&tools, Capability::Search)), Some("beta"));
    }

    #[test]
    fn missing_capability_falls_back_to_the_command_tool() {
        let tools = [tool("read", "", json!({})), tool("bash", "", json!({}))];
        let pick = best_tool(&tools, Capability::Delete);
        assert!(matches!(
            pick,
            Pick::Matched {
                capability: Capability::Command,
                ..
            }
        ));
        assert_eq!(names(pick), Some("bash"));
    }

    #[test]
    fn total_miss_keeps_registration_order() {
        let tools = [tool("alpha", "", json!({})), tool("beta", "", json!({}))];
        assert!(matches!(
            best_tool(&tools, Capability::Fetch),
            Pick::Unmatched { first } if first.name == "alpha"
        ));
        assert_eq!(best_tool(&[], Capability::Command), Pick::NoTools);
    }

    #[test]
    fn words_split_snake_kebab_and_camel_case() {
        assert_eq!(
            words("mcp_acme-webSearch2"),
            ["mcp", "acme", "web", "search2"]
        );
        assert_eq!(words("HTTPFetch"), ["httpfetch"]);
    }

    #[test]
    fn not_found_list_puts_shared_words_first() {
        let tools = [
            tool("read", "", json!({})),
            tool("bash", "", json!({})),
            tool("sudo_exec", "", json!({})),
        ];
        assert_eq!(
            rank_by_shared_words(&tools, "sudo_shell"),
            ["sudo_exec", "read", "bash"]
        );
    }
}
