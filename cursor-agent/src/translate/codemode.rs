//! Code-mode hosts: when plain shell/read/write tools are hidden behind one tool that runs a
//! `{code}` script (a code-mode host's single tool), a translation becomes a synthesized script that picks its
//! executor at run time from the script's own `ALL_TOOLS` (PROTOCOL-AGENT §5.1).

use serde_json::{Value, json};

use super::args;
use crate::intent::{Capability, Intent};

/// A script for the code-mode tool that performs `op`: it tries each capability of the
/// operation's chain in order, picks the best-scoring tool of `ALL_TOOLS` for it (the same
/// signals as the host-side ranking, minus the schema), calls it and prints its output. With
/// no candidate it fails with the full tool roster.
pub(crate) fn script(op: &Intent, codemode_name: &str) -> String {
    let mut steps = Vec::new();
    let own = op.capability();
    let mut current = own;
    while let Some(capability) = current {
        let step_args = if Some(capability) == own {
            args::canonical(op)
        } else if capability == Capability::Command {
            op.as_command().map(|command| json!({ "command": command }))
        } else {
            None
        };
        if let Some(step_args) = step_args {
            steps.push(json!({
                "aliases": capability.aliases(),
                "words": capability.words(),
                "args": step_args,
            }));
        }
        current = capability.fallback();
    }
    let plan = Value::Array(steps);
    let phrase = own.map_or("do that", Capability::phrase);
    let skip = Value::from(codemode_name);
    format!(
        "// translated from a Cursor native tool request\n\
const plan = {plan};\n\
const words = (s) => String(s ?? \"\").replace(/([a-z0-9])([A-Z])/g, \"$1 $2\").toLowerCase().split(/[^a-z0-9]+/).filter(Boolean);\n\
let pick = null;\n\
for (const step of plan) {{\n\
  let best = null, bestScore = 0;\n\
  for (const tool of ALL_TOOLS) {{\n\
    if (tool.name === {skip}) continue;\n\
    const name = String(tool.name).toLowerCase();\n\
    const score = step.aliases.includes(name) ? 3\n\
      : words(tool.name).some((w) => step.words.includes(w)) ? 2\n\
      : words(tool.description).some((w) => step.words.includes(w)) ? 1 : 0;\n\
    if (score > bestScore) {{ best = tool; bestScore = score; }}\n\
  }}\n\
  if (best) {{ pick = {{ name: best.name, args: step.args }}; break; }}\n\
}}\n\
if (!pick) throw new Error(\"no tool can {phrase}; tools: \" + ALL_TOOLS.map((t) => t.name).join(\", \"));\n\
const out = await tools[pick.name](pick.args);\n\
text(typeof out === \"string\" ? out : JSON.stringify(out));\n"
    )
}

/// Strips the `Script completed` / `Script failed` header of a code-mode result; the flag is
/// true when the script failed.
pub(crate) fn unwrap(text: &str) -> (String, bool) {
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    let header = first.trim();
    if header.starts_with("Script completed") {
        (rest.to_owned(), false)
    } else if header.starts_with("Script failed") {
        // The header may be the only place the error is stated.
        let detail = if rest.trim().is_empty() { header } else { rest };
        (detail.to_owned(), true)
    } else {
        (text.to_owned(), false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_embeds_the_capability_chain_and_the_roster_failure() {
        let op = Intent::Read {
            path: "a.txt".into(),
            offset: None,
            limit: None,
        };
        let script = script(&op, "codemode");
        assert!(script.contains(r#""args":{"path":"a.txt"}"#), "{script}");
        assert!(
            script.contains(r#""args":{"command":"cat -- 'a.txt'"}"#),
            "{script}"
        );
        assert!(script.contains("ALL_TOOLS.map((t) => t.name)"));
        assert!(script.contains("no tool can read a file"));
    }

    #[test]
    fn headers_are_unwrapped() {
        assert_eq!(unwrap("Script completed\nhello"), ("hello".into(), false));
        assert_eq!(unwrap("Script failed: boom\nerr"), ("err".into(), true));
        assert_eq!(
            unwrap("Script failed: boom"),
            ("Script failed: boom".into(), true)
        );
        assert_eq!(unwrap("plain"), ("plain".into(), false));
    }
}
