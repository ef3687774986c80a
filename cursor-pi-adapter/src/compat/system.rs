//! Folding pi's system messages into one prompt and one tool set.
//!
//! pi ≥ 0.86 carries the system prompt and the tools in `role: "system"` messages: the leading
//! one holds the base prompt and the initial tools, later ones patch them mid-conversation.
//! The Cursor channels take one prompt and one tool list, so every system message is replayed
//! here in order, the way pi-ai's `collapseSystemMessages` / `getCurrentSystemPrompt` /
//! `getCurrentTools` do it (checked against pi-ai 0.99.1, 1.0.3 and 1.6.0, whose
//! `utils/transcript.js` and `utils/text.js` agree on these rules):
//!
//! - every non-empty `content` text is kept, and the prompt starts with them joined by a blank line;
//! - `sections` are patched by name: a string sets (keeping an existing section's position),
//!   `null` removes; their values follow the content, each separated by a blank line;
//! - tools: first `toolsRemoved` are dropped by name, then `toolsAdded` are set by name
//!   (a redefinition keeps the tool's original position).

use cursor_proto::ir::Tool;

/// The prompt pieces and tools after replaying system messages so far.
#[derive(Debug, Default)]
pub(crate) struct SystemState {
    contents: Vec<String>,
    sections: Vec<(String, String)>,
    tools: Vec<Tool>,
}

impl SystemState {
    /// Appends one system message's content text (empty text adds nothing).
    pub(crate) fn add_content(&mut self, text: String) {
        if !text.is_empty() {
            self.contents.push(text);
        }
    }

    /// Sets (`Some`) or removes (`None`) a named section.
    pub(crate) fn patch_section(&mut self, name: String, text: Option<String>) {
        let existing = self.sections.iter().position(|(known, _)| *known == name);
        match (existing, text) {
            (Some(at), Some(text)) => self.sections[at].1 = text,
            (Some(at), None) => {
                self.sections.remove(at);
            }
            (None, Some(text)) => self.sections.push((name, text)),
            (None, None) => {}
        }
    }

    /// Drops the named tool, if declared.
    pub(crate) fn remove_tool(&mut self, name: &str) {
        self.tools.retain(|tool| tool.name != name);
    }

    /// Declares a tool, replacing an earlier declaration of the same name in place.
    pub(crate) fn add_tool(&mut self, tool: Tool) {
        match self.tools.iter_mut().find(|known| known.name == tool.name) {
            Some(known) => *known = tool,
            None => self.tools.push(tool),
        }
    }

    /// The rendered prompt and the current tools.
    pub(crate) fn finish(self) -> (String, Vec<Tool>) {
        let content = self.contents.join("\n\n");
        let parts = std::iter::once(content)
            .chain(self.sections.into_iter().map(|(_, text)| text))
            .filter(|part| !part.is_empty());
        let prompt = parts.collect::<Vec<_>>().join("\n\n");
        (prompt, self.tools)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, description: &str) -> Tool {
        Tool::new(name, description, json!({"type": "object"}))
    }

    #[test]
    fn prompt_is_contents_then_sections_separated_by_blank_lines() {
        let mut state = SystemState::default();
        state.add_content("base".into());
        state.patch_section("rules".into(), Some("be terse".into()));
        state.add_content(String::new());
        state.add_content("later".into());
        state.patch_section("cwd".into(), Some("/x".into()));
        assert_eq!(state.finish().0, "base\n\nlater\n\nbe terse\n\n/x");
    }

    #[test]
    fn section_update_keeps_position_and_removal_then_readd_moves_to_end() {
        let mut state = SystemState::default();
        state.patch_section("a".into(), Some("1".into()));
        state.patch_section("b".into(), Some("2".into()));
        state.patch_section("c".into(), Some("3".into()));
        state.patch_section("a".into(), Some("1'".into()));
        state.patch_section("b".into(), None);
        state.patch_section("b".into(), Some("2'".into()));
        state.patch_section("gone".into(), None);
        assert_eq!(state.finish().0, "1'\n\n3\n\n2'");
    }

    #[test]
    fn tools_are_removed_by_name_and_redefinitions_keep_their_slot() {
        let mut state = SystemState::default();
        for name in ["read", "bash", "edit"] {
            state.add_tool(tool(name, "v1"));
        }
        state.remove_tool("read");
        state.add_tool(tool("bash", "v2"));
        state.add_tool(tool("read", "v2"));
        let (_, tools) = state.finish();
        let names: Vec<(&str, &str)> = tools
            .iter()
            .map(|t| (t.name.as_str(), t.description.as_str()))
            .collect();
        assert_eq!(names, [("bash", "v2"), ("edit", "v1"), ("read", "v2")]);
    }

    #[test]
    fn no_system_messages_give_an_empty_prompt_and_no_tools() {
        let (prompt, tools) = SystemState::default().finish();
        assert!(prompt.is_empty() && tools.is_empty());
    }
}
