//! Arguments in the host tool's own property names, read from its JSON Schema.
//!
//! Each value has a list of accepted property names (`path`, `file_path`, `filePath`, ...). The
//! first one the schema declares wins; a schema without `properties` gets the first name. A tool
//! whose schema requires a property this mapping cannot fill is not capable of the operation.

use cursor_proto::ir::Tool;
use serde_json::{Map, Value, json};

use crate::intent::Intent;
use crate::ranking::{COMMAND_KEYS, PATH_KEYS};
use crate::shell::in_directory;

const CONTENT_KEYS: [&str; 5] = ["content", "contents", "file_text", "text", "data"];
const PATTERN_KEYS: [&str; 3] = ["pattern", "query", "regex"];
const FIND_KEYS: [&str; 4] = ["pattern", "glob", "query", "name"];
const GLOB_KEYS: [&str; 4] = ["glob", "include", "file_pattern", "filePattern"];
const OLD_KEYS: [&str; 5] = ["oldText", "old_text", "old_string", "oldString", "old"];
const NEW_KEYS: [&str; 5] = ["newText", "new_text", "new_string", "newString", "new"];
const IGNORE_CASE_KEYS: [&str; 3] = ["ignoreCase", "ignore_case", "case_insensitive"];
const LITERAL_KEYS: [&str; 2] = ["literal", "fixed_strings"];
const CONTEXT_KEYS: [&str; 2] = ["context", "context_lines"];
const CWD_KEYS: [&str; 5] = [
    "cwd",
    "working_directory",
    "workingDirectory",
    "workdir",
    "directory",
];

/// The arguments for calling `tool` to perform `intent` directly, or `None` when the tool's
/// schema cannot express it. A delete is never direct: only the command form reports the
/// pre-delete size the backend needs.
pub(crate) fn direct(tool: &Tool, intent: &Intent) -> Option<Value> {
    let schema = Schema::of(tool);
    let mut args = Map::new();
    match intent {
        Intent::Command { command, cwd } => match (cwd, schema.declared(&CWD_KEYS)) {
            (Some(dir), Some(key)) => {
                schema.put(&mut args, &COMMAND_KEYS, json!(command))?;
                args.insert(key.to_owned(), json!(dir));
            }
            // No directory argument: the command changes directory itself.
            (Some(dir), None) => {
                schema.put(&mut args, &COMMAND_KEYS, json!(in_directory(dir, command)))?;
            }
            (None, _) => schema.put(&mut args, &COMMAND_KEYS, json!(command))?,
        },
        Intent::Read {
            path,
            offset,
            limit,
        } => {
            schema.put(&mut args, &PATH_KEYS, json!(path))?;
            schema.put_optional(&mut args, &["offset"], offset.map(Value::from))?;
            schema.put_optional(&mut args, &["limit"], limit.map(Value::from))?;
        }
        Intent::Write { path, content } => {
            schema.put(&mut args, &PATH_KEYS, json!(path))?;
            schema.put(&mut args, &CONTENT_KEYS, json!(content))?;
        }
        Intent::Edit { path, edits } => {
            schema.put(&mut args, &PATH_KEYS, json!(path))?;
            if schema.declares("edits") {
                let old = schema.item_key("edits", &OLD_KEYS);
                let new = schema.item_key("edits", &NEW_KEYS);
                let list: Vec<Value> = edits
                    .iter()
                    .map(|e| json!({ old: e.old_text, new: e.new_text }))
                    .collect();
                args.insert("edits".into(), Value::Array(list));
            } else {
                // A single-replacement tool can only take a single replacement.
                let [edit] = edits.as_slice() else {
                    return None;
                };
                schema.put(&mut args, &OLD_KEYS, json!(edit.old_text))?;
                schema.put(&mut args, &NEW_KEYS, json!(edit.new_text))?;
            }
        }
        Intent::Search {
            pattern,
            path,
            glob,
            ignore_case,
            literal,
            context,
            limit,
        } => {
            schema.put(&mut args, &PATTERN_KEYS, json!(pattern))?;
            schema.put_optional(&mut args, &PATH_KEYS, path.clone().map(Value::from))?;
            schema.put_optional(&mut args, &GLOB_KEYS, glob.clone().map(Value::from))?;
            schema.put_optional(&mut args, &IGNORE_CASE_KEYS, ignore_case.map(Value::from))?;
            schema.put_optional(&mut args, &LITERAL_KEYS, literal.map(Value::from))?;
            schema.put_optional(&mut args, &CONTEXT_KEYS, context.map(Value::from))?;
            schema.put_optional(&mut args, &["limit"], limit.map(Value::from))?;
        }
        Intent::Find {
            pattern,
            path,
            limit,
        } => {
            schema.put(&mut args, &FIND_KEYS, json!(pattern))?;
            schema.put_optional(&mut args, &PATH_KEYS, path.clone().map(Value::from))?;
            schema.put_optional(&mut args, &["limit"], limit.map(Value::from))?;
        }
        Intent::List { path, limit } => {
            schema.put(&mut args, &PATH_KEYS, json!(path))?;
            schema.put_optional(&mut args, &["limit"], limit.map(Value::from))?;
        }
        Intent::Delete { .. } | Intent::Fetch { .. } | Intent::Other => return None,
    }
    schema.satisfied_by(&args).then_some(Value::Object(args))
}

/// The arguments for running `command` through a command tool.
pub(crate) fn command(tool: &Tool, command: &str) -> Option<Value> {
    direct(tool, &Intent::command(command))
}

/// The arguments in canonical property names, for a tool whose schema is unknown (code mode);
/// `None` for what no tool does directly.
pub(crate) fn canonical(intent: &Intent) -> Option<Value> {
    // Without a schema every required value takes its first name.
    direct(&Tool::new("", "", Value::Null), intent)
}

/// The parts of a JSON Schema the mapping reads.
struct Schema<'a> {
    properties: Option<&'a Map<String, Value>>,
    required: Vec<&'a str>,
}

impl<'a> Schema<'a> {
    fn of(tool: &'a Tool) -> Self {
        let properties = tool.parameters.get("properties").and_then(Value::as_object);
        let required = tool
            .parameters
            .get("required")
            .and_then(Value::as_array)
            .map(|list| list.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        Self {
            properties,
            required,
        }
    }

    fn declares(&self, key: &str) -> bool {
        self.properties.is_some_and(|p| p.contains_key(key))
    }

    /// The first of `candidates` the schema declares.
    fn declared(&self, candidates: &[&'static str]) -> Option<&'static str> {
        candidates.iter().copied().find(|k| self.declares(k))
    }

    /// The declared key among `candidates`; the first candidate when the schema declares none.
    fn key(&self, candidates: &[&'static str]) -> Option<&'static str> {
        match self.properties {
            Some(properties) if !properties.is_empty() => candidates
                .iter()
                .copied()
                .find(|k| properties.contains_key(*k)),
            _ => candidates.first().copied(),
        }
    }

    /// Puts a value the operation cannot do without: fails when the schema has no place for it.
    fn put(
        &self,
        args: &mut Map<String, Value>,
        keys: &[&'static str],
        value: Value,
    ) -> Option<()> {
        let key = self.key(keys)?;
        args.insert(key.to_owned(), value);
        Some(())
    }

    /// Puts an optional value only where the schema declares it (never fails).
    fn put_optional(
        &self,
        args: &mut Map<String, Value>,
        keys: &[&'static str],
        value: Option<Value>,
    ) -> Option<()> {
        if let Some(value) = value
            && let Some(key) = keys.iter().copied().find(|k| self.declares(k))
        {
            args.insert(key.to_owned(), value);
        }
        Some(())
    }

    /// The property name inside the items of the array property `array`.
    fn item_key(&self, array: &str, candidates: &[&'static str]) -> &'static str {
        let declared = self
            .properties
            .and_then(|p| p.get(array))
            .and_then(|a| a.get("items"))
            .and_then(|i| i.get("properties"))
            .and_then(Value::as_object);
        declared
            .and_then(|p| candidates.iter().copied().find(|k| p.contains_key(*k)))
            .unwrap_or(candidates[0])
    }

    fn satisfied_by(&self, args: &Map<String, Value>) -> bool {
        self.required.iter().all(|key| args.contains_key(*key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intent::Replacement;

    fn tool(parameters: Value) -> Tool {
        Tool::new("t", "", parameters)
    }

    #[test]
    fn property_names_come_from_the_schema() {
        let view = tool(json!({"properties": {"file_path": {}}, "required": ["file_path"]}));
        let op = Intent::Read {
            path: "a.rs".into(),
            offset: None,
            limit: None,
        };
        assert_eq!(direct(&view, &op), Some(json!({"file_path": "a.rs"})));
        let exec = tool(json!({"properties": {"cmd": {}}}));
        assert_eq!(command(&exec, "ls"), Some(json!({"cmd": "ls"})));
    }

    #[test]
    fn an_unfillable_required_property_disqualifies_the_tool() {
        let picky =
            tool(json!({"properties": {"path": {}, "mode": {}}, "required": ["path", "mode"]}));
        let op = Intent::List {
            path: ".".into(),
            limit: None,
        };
        assert_eq!(direct(&picky, &op), None);
        let no_path = tool(json!({"properties": {"url": {}}}));
        assert_eq!(direct(&no_path, &op), None);
    }

    #[test]
    fn edits_follow_the_array_item_schema() {
        let edit = tool(
            json!({"properties": {"path": {}, "edits": {"type": "array", "items": {"properties": {"old_string": {}, "new_string": {}}}}}}),
        );
        let op = Intent::Edit {
            path: "f".into(),
            edits: vec![Replacement {
                old_text: "a".into(),
                new_text: "b".into(),
            }],
        };
        assert_eq!(
            direct(&edit, &op),
            Some(json!({"path": "f", "edits": [{"old_string": "a", "new_string": "b"}]}))
        );
    }

    #[test]
    fn optional_values_appear_only_where_declared() {
        let grep = tool(json!({"properties": {"pattern": {}, "path": {}, "ignoreCase": {}}}));
        let op = Intent::Search {
            pattern: "x".into(),
            path: Some("src".into()),
            glob: Some("*.rs".into()),
            ignore_case: Some(true),
            literal: Some(true),
            context: None,
            limit: None,
        };
        assert_eq!(
            direct(&grep, &op),
            Some(json!({"pattern": "x", "path": "src", "ignoreCase": true}))
        );
        assert_eq!(
            canonical(&Intent::command("ls")),
            Some(json!({"command": "ls"}))
        );
        assert_eq!(canonical(&Intent::Delete { path: "x".into() }), None);
    }
}
