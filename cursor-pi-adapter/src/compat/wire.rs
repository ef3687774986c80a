//! pi's context JSON as it arrives at `streamSimple`, typed only as far as mapping needs.
//!
//! Fields that pi sets but the conversation model does not carry (`timestamp`, `usage`,
//! `api`, `durationMs`, `details`, `constrainedSampling`, ...) are ignored here, not rejected,
//! so a pi release that adds such fields keeps working. Content blocks stay JSON values and are
//! read in `context.rs`, where an unknown block type can be reported with its position.

use std::fmt;

use serde::Deserialize;
use serde::de::{MapAccess, Visitor};

/// The `context` argument of `streamSimple`, in either of pi's shapes.
///
/// - pi ≥ 0.86 (`TranscriptContext`): only `messages`; the prompt and tools ride in
///   `role: "system"` messages.
/// - pi 0.73–0.85 (`Context`): `systemPrompt` and `tools` beside `messages`, which then hold no
///   system messages. (pi ≥ 0.86 still accepts this shape as public input and normalizes it by
///   prepending one system message, which is also how it is read here.)
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WireContext {
    /// pi ≤ 0.85 only.
    #[serde(default)]
    pub(crate) system_prompt: Option<String>,
    /// pi ≤ 0.85 only.
    #[serde(default)]
    pub(crate) tools: Option<Vec<WireTool>>,
    pub(crate) messages: Vec<WireMessage>,
}

/// One transcript message of any role; which fields matter depends on `role`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WireMessage {
    pub(crate) role: String,
    /// A string (user and system messages may use it) or an array of typed blocks.
    #[serde(default)]
    pub(crate) content: Option<serde_json::Value>,
    /// System messages, pi ≥ 0.86: named prompt sections, patched by name; `null` removes one.
    #[serde(default)]
    pub(crate) sections: Option<Sections>,
    /// System messages, pi ≥ 0.86.
    #[serde(default)]
    pub(crate) tools_added: Option<Vec<WireTool>>,
    /// System messages, pi ≥ 0.86.
    #[serde(default)]
    pub(crate) tools_removed: Option<Vec<WireToolReference>>,
    /// Tool results.
    #[serde(default)]
    pub(crate) tool_call_id: Option<String>,
    /// Tool results.
    #[serde(default)]
    pub(crate) tool_name: Option<String>,
    /// Tool results.
    #[serde(default)]
    pub(crate) is_error: Option<bool>,
}

/// A tool declaration (`Tool` in pi-ai).
#[derive(Debug, Deserialize)]
pub(crate) struct WireTool {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) description: String,
    #[serde(default)]
    pub(crate) parameters: serde_json::Value,
}

/// A tool named for removal (`ToolReference`, pi ≥ 0.86).
#[derive(Debug, Deserialize)]
pub(crate) struct WireToolReference {
    pub(crate) name: String,
}

/// System-prompt sections in the order pi wrote them.
///
/// The order is the prompt's order (pi renders the values in insertion order), so this keeps
/// the map's entries as a list instead of going through `serde_json::Map`, which sorts its keys
/// unless serde_json's `preserve_order` feature is on.
#[derive(Debug, Default)]
pub(crate) struct Sections(pub(crate) Vec<(String, Option<String>)>);

impl<'de> Deserialize<'de> for Sections {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SectionsVisitor;

        impl<'de> Visitor<'de> for SectionsVisitor {
            type Value = Sections;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a map of section names to strings or null")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Sections, A::Error> {
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some((name, text)) = map.next_entry::<String, Option<String>>()? {
                    entries.push((name, text));
                }
                Ok(Sections(entries))
            }
        }

        deserializer.deserialize_map(SectionsVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_keep_the_order_they_were_written_in() {
        let message: WireMessage = serde_json::from_str(
            r#"{"role":"system","content":"","sections":{"zeta":"z","alpha":null,"mid":"m"}}"#,
        )
        .unwrap();
        let sections = message.sections.unwrap().0;
        assert_eq!(
            sections,
            vec![
                ("zeta".into(), Some("z".into())),
                ("alpha".into(), None),
                ("mid".into(), Some("m".into()))
            ]
        );
    }

    #[test]
    fn fields_other_roles_use_are_optional_and_unknown_fields_are_ignored() {
        let message: WireMessage = serde_json::from_str(
            r#"{"role":"user","content":"hi","timestamp":5,"futureField":{}}"#,
        )
        .unwrap();
        assert_eq!(message.role, "user");
        assert!(message.tool_call_id.is_none() && message.sections.is_none());
    }
}
