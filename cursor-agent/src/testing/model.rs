//! The replica's deterministic "model": what a user text asks for, and the answer.

/// What one user turn asks the model to do.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Intent {
    /// Answer with this text right away.
    Answer(String),
    /// Run a shell command through a native exec, then report its output.
    Shell(String),
    /// Call host MCP tools, then report their results: one `tool:` line is one call, several
    /// lines are parallel calls (all requested before any result is awaited).
    Tools(Vec<Call>),
    /// Send one native exec request of every kind, then report how each was answered.
    Natives,
}

const RECALL: &str = "what did i ask you to remember";
const NATIVES: &str = "try every native tool";

/// One tool call the model asks for.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Call {
    pub(super) name: String,
    pub(super) arguments: serde_json::Value,
}

/// Reads the user's turn; `earlier` are the user texts of the conversation before it. Context
/// a host wraps in `<system-reminder>` tags (Claude Code's reminders and environment facts) is
/// not the user's words, and a model reads past it.
pub(super) fn intent(user_text: &str, earlier: &[String]) -> Intent {
    let own = without_reminders(user_text);
    let earlier: Vec<String> = earlier.iter().map(|t| without_reminders(t)).collect();
    let earlier = earlier.as_slice();
    let text = own.trim();
    let lower = text.to_lowercase();
    if lower == "ping" {
        return Intent::Answer("pong".into());
    }
    if lower == NATIVES {
        return Intent::Natives;
    }
    // `say: A` answers A; with a `then: B` line, A now and B to the next user turn (whatever it
    // says), so a test can script a first reply and a corrected one.
    if let Some((first, _)) = say_of(text) {
        return Intent::Answer(first.to_owned());
    }
    if let Some((_, Some(second))) = earlier.last().and_then(|t| say_of(t)) {
        return Intent::Answer(second.to_owned());
    }
    if let Some(command) = strip_prefix_ci(text, "run:") {
        return Intent::Shell(command.trim().to_owned());
    }
    if strip_prefix_ci(text, "tool:").is_some() {
        return match tool_lines(text)
            .into_iter()
            .map(|call| parse_call(&call))
            .collect()
        {
            Ok(calls) => Intent::Tools(calls),
            Err(e) => Intent::Answer(format!("Those tool arguments are not JSON: {e}.")),
        };
    }
    if fact_of(text).is_some() {
        return Intent::Answer("OK, I will remember that.".into());
    }
    if lower.contains(RECALL) {
        let facts: Vec<&str> = earlier.iter().filter_map(|t| fact_of(t)).collect();
        return Intent::Answer(if facts.is_empty() {
            "You did not ask me to remember anything.".into()
        } else {
            format!("You asked me to remember: {}.", facts.join("; "))
        });
    }
    Intent::Answer(format!("You said: {text}"))
}

/// `text` cut before every line that starts with `tool:` (arguments may span lines).
fn tool_lines(text: &str) -> Vec<String> {
    let mut calls: Vec<String> = Vec::new();
    for line in text.lines() {
        match (
            strip_prefix_ci(line.trim_start(), "tool:"),
            calls.last_mut(),
        ) {
            (Some(call), _) => calls.push(call.to_owned()),
            (None, Some(current)) => {
                current.push('\n');
                current.push_str(line);
            }
            (None, None) => {}
        }
    }
    calls
}

fn parse_call(call: &str) -> Result<Call, serde_json::Error> {
    let call = call.trim();
    let (name, arguments) = call.split_once(char::is_whitespace).unwrap_or((call, "{}"));
    Ok(Call {
        name: name.to_owned(),
        arguments: serde_json::from_str(arguments.trim())?,
    })
}

/// The two answers of `say: A` / `say: A\nthen: B`.
fn say_of(text: &str) -> Option<(&str, Option<&str>)> {
    let rest = strip_prefix_ci(text.trim(), "say:")?;
    Some(match rest.split_once("\nthen:") {
        Some((first, second)) => (first.trim(), Some(second.trim())),
        None => (rest.trim(), None),
    })
}

/// `text` without its `<system-reminder>…</system-reminder>` blocks.
fn without_reminders(text: &str) -> String {
    const OPEN: &str = "<system-reminder>";
    const CLOSE: &str = "</system-reminder>";
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        out.push_str(&rest[..start]);
        match rest[start..].find(CLOSE) {
            Some(end) => rest = &rest[start + end + CLOSE.len()..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The fact in `remember <fact>`, if the text is one.
fn fact_of(text: &str) -> Option<&str> {
    let rest = strip_prefix_ci(text.trim(), "remember")?;
    let fact = rest.trim_start_matches([':', ' ']).trim();
    (!fact.is_empty() && !rest.starts_with(char::is_alphanumeric)).then_some(fact)
}

fn strip_prefix_ci<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// The answer streamed in word-sized deltas (each keeps its trailing space).
pub(super) fn deltas(answer: &str) -> Vec<String> {
    answer.split_inclusive(' ').map(str::to_owned).collect()
}

/// How the replica's model names the host tool it calls (see
/// [`Replica::set_tool_naming`](super::Replica::set_tool_naming)). Live servers were seen
/// using each (PROTOCOL-AGENT §13.1).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ToolNaming {
    /// The name as advertised (`bash`).
    #[default]
    Bare,
    /// `mcp_<provider_identifier>_<name>` (`mcp_acme_bash`).
    Mcp,
    /// `<provider_identifier>-<name>` (`acme-bash`).
    Dash,
}

impl ToolNaming {
    /// `tool` named this way for `provider`.
    pub fn name(self, provider: &str, tool: &str) -> String {
        match self {
            Self::Bare => tool.to_owned(),
            Self::Mcp => format!("mcp_{provider}_{tool}"),
            Self::Dash => format!("{provider}-{tool}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn commands_tools_and_pings_are_recognized() {
        assert_eq!(intent("ping", &[]), Intent::Answer("pong".into()));
        assert_eq!(intent("run: echo hi", &[]), Intent::Shell("echo hi".into()));
        assert_eq!(
            intent(r#"tool: add {"a": 1}"#, &[]),
            Intent::Tools(vec![Call {
                name: "add".into(),
                arguments: json!({"a": 1})
            }])
        );
        assert_eq!(
            intent("tool: now", &[]),
            Intent::Tools(vec![Call {
                name: "now".into(),
                arguments: json!({})
            }])
        );
        assert!(matches!(intent("tool: add {", &[]), Intent::Answer(t) if t.contains("not JSON")));
    }

    #[test]
    fn several_tool_lines_are_parallel_calls_and_arguments_may_span_lines() {
        assert_eq!(
            intent("tool: add {\"a\": 1}\nTOOL: mul {\n  \"b\": 2\n}\n", &[]),
            Intent::Tools(vec![
                Call {
                    name: "add".into(),
                    arguments: json!({"a": 1})
                },
                Call {
                    name: "mul".into(),
                    arguments: json!({"b": 2})
                },
            ])
        );
        assert!(matches!(
            intent("tool: add {}\ntool: mul {", &[]),
            Intent::Answer(t) if t.contains("not JSON")
        ));
    }

    #[test]
    fn recall_lists_every_fact_stated_earlier_in_order() {
        let earlier = vec![
            "remember the pass phrase XK-PLATYPUS-77 / 林蓓".to_owned(),
            "ping".to_owned(),
            "Remember: the door is blue".to_owned(),
            "remembering is hard".to_owned(),
        ];
        assert_eq!(
            intent("What did I ask you to remember?", &earlier),
            Intent::Answer(
                "You asked me to remember: the pass phrase XK-PLATYPUS-77 / 林蓓; the door is blue."
                    .into()
            )
        );
        assert_eq!(
            intent(
                "<system-reminder>\nremember nothing\n</system-reminder>\nremember the otter",
                &[]
            ),
            Intent::Answer("OK, I will remember that.".into())
        );
        assert_eq!(
            intent(
                "<system-reminder>x</system-reminder>\nwhat did I ask you to remember?",
                &["<system-reminder>env</system-reminder>\nremember the otter".to_owned()]
            ),
            Intent::Answer("You asked me to remember: the otter.".into())
        );
        assert_eq!(
            intent("what did I ask you to remember?", &[]),
            Intent::Answer("You did not ask me to remember anything.".into())
        );
    }

    #[test]
    fn say_answers_its_text_and_then_answers_the_next_turn() {
        assert_eq!(
            intent("say: {\"a\": 1}", &[]),
            Intent::Answer("{\"a\": 1}".into())
        );
        let first = "say: not json\nthen: {\"a\": 1}".to_owned();
        assert_eq!(intent(&first, &[]), Intent::Answer("not json".into()));
        assert_eq!(
            intent("that was wrong", &[first]),
            Intent::Answer("{\"a\": 1}".into())
        );
    }

    #[test]
    fn deltas_rejoin_to_the_answer() {
        let answer = "You said: a b  c";
        assert_eq!(deltas(answer).concat(), answer);
        assert_eq!(deltas("pong"), vec!["pong"]);
    }
}
