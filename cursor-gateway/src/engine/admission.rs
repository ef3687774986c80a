//! What a request must hold before the engine spends anything on it: room in the body budget
//! (request bytes being read, parsed or held by a running turn, gateway-wide, a key holding at
//! most its share) and a turn slot (gateway-wide, and within its key's share).
//!
//! The budget is what bounds the gateway's memory under hostile load: a request reserves its
//! declared length before a byte of its body is read, more while a chunked body grows, and the
//! estimated size of any JSON value before it is built from its text. Over the budget a request
//! waits briefly (`--body-wait`), then is answered 503 with `Retry-After`; a key over its share
//! is answered 429, so other keys keep being served.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cursor_agent::ir::{AssistantContent, Conversation, Message, ToolResultContent, UserContent};
use serde_json::Value;
use tokio::sync::Notify;

use crate::ApiError;
use crate::metrics::{Metrics, Refusal};
use crate::sync::lock;

/// What one key holds now.
#[derive(Debug, Default)]
struct KeyUse {
    body_bytes: usize,
    turns: usize,
}

#[derive(Debug, Default)]
struct Held {
    body_bytes: usize,
    turns: usize,
    keys: HashMap<String, KeyUse>,
}

impl Held {
    /// Forgets a key that holds nothing (the map only ever holds keys with requests running).
    fn tidy(&mut self, key: &str) {
        if self
            .keys
            .get(key)
            .is_some_and(|used| used.body_bytes == 0 && used.turns == 0)
        {
            self.keys.remove(key);
        }
    }
}

/// The gateway's budget of request bytes and its turn slots.
#[derive(Debug)]
pub(crate) struct Admission {
    held: Mutex<Held>,
    /// Woken whenever bytes are given back.
    freed: Notify,
    budget: usize,
    per_key: usize,
    wait: Duration,
    max_turns: usize,
    max_turns_per_key: usize,
    metrics: Arc<Metrics>,
}

impl Admission {
    pub(crate) fn new(limits: &crate::Limits, metrics: Arc<Metrics>) -> Arc<Self> {
        Arc::new(Self {
            held: Mutex::default(),
            freed: Notify::new(),
            budget: limits.body_budget.max(1),
            per_key: limits.body_budget_per_key().max(1),
            wait: limits.body_wait,
            max_turns: limits.max_turns.max(1),
            max_turns_per_key: limits.max_turns_per_key.max(1),
            metrics,
        })
    }

    /// Request bytes held now, gateway-wide.
    pub(crate) fn body_bytes(&self) -> usize {
        lock(&self.held).body_bytes
    }

    /// An empty permit of `key`, to grow as the body arrives.
    pub(crate) fn permit(self: &Arc<Self>, key: &str) -> BodyPermit {
        BodyPermit {
            admission: Arc::clone(self),
            key: key.to_owned(),
            bytes: 0,
        }
    }

    /// Takes `bytes` for `key` if they fit both the budget and the key's share.
    fn try_take(&self, key: &str, bytes: usize) -> Result<bool, ApiError> {
        if bytes > self.per_key {
            // Never fits, however long it waits.
            self.metrics.refused(Refusal::BodyBudget);
            return Err(ApiError::overloaded(
                "request memory (this request alone is larger than one key's share of --body-budget)",
            ));
        }
        let mut held = lock(&self.held);
        let key_bytes = held.keys.get(key).map_or(0, |used| used.body_bytes);
        if held.body_bytes + bytes > self.budget || key_bytes + bytes > self.per_key {
            return Ok(false);
        }
        held.body_bytes += bytes;
        held.keys.entry(key.to_owned()).or_default().body_bytes += bytes;
        Ok(true)
    }

    fn give_back(&self, key: &str, bytes: usize) {
        if bytes == 0 {
            return;
        }
        let mut held = lock(&self.held);
        held.body_bytes = held.body_bytes.saturating_sub(bytes);
        if let Some(used) = held.keys.get_mut(key) {
            used.body_bytes = used.body_bytes.saturating_sub(bytes);
        }
        held.tidy(key);
        drop(held);
        self.freed.notify_waiters();
    }

    /// Whether `key` is over its share of the budget (for the answer's wording: a key over its
    /// share is told so, with 429; a full gateway is a 503).
    fn key_is_full(&self, key: &str, bytes: usize) -> bool {
        let held = lock(&self.held);
        held.keys.get(key).map_or(0, |used| used.body_bytes) + bytes > self.per_key
    }

    /// Takes a turn slot of `key`: at once, or a 503 (gateway full) or 429 (key full).
    pub(crate) fn turn_slot(self: &Arc<Self>, key: &str) -> Result<TurnSlot, ApiError> {
        let mut held = lock(&self.held);
        if held.turns >= self.max_turns {
            self.metrics.refused(Refusal::Turns);
            return Err(ApiError::overloaded("concurrent turns (--max-turns)"));
        }
        let used = held.keys.entry(key.to_owned()).or_default();
        if used.turns >= self.max_turns_per_key {
            held.tidy(key);
            self.metrics.refused(Refusal::KeyTurns);
            return Err(ApiError::key_limit(
                "concurrent turns (--max-turns-per-key)",
            ));
        }
        used.turns += 1;
        held.turns += 1;
        Ok(TurnSlot {
            admission: Arc::clone(self),
            key: key.to_owned(),
        })
    }
}

/// A key's turn slot; given back when dropped.
#[derive(Debug)]
pub(crate) struct TurnSlot {
    admission: Arc<Admission>,
    key: String,
}

impl Drop for TurnSlot {
    fn drop(&mut self) {
        let mut held = lock(&self.admission.held);
        held.turns = held.turns.saturating_sub(1);
        if let Some(used) = held.keys.get_mut(&self.key) {
            used.turns = used.turns.saturating_sub(1);
        }
        held.tidy(&self.key);
    }
}

/// Bytes of the body budget a request holds; given back when dropped.
#[derive(Debug)]
pub(crate) struct BodyPermit {
    admission: Arc<Admission>,
    key: String,
    bytes: usize,
}

impl BodyPermit {
    /// The bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Holds `extra` more bytes, waiting up to `--body-wait` for room.
    pub(crate) async fn grow(&mut self, extra: usize) -> Result<(), ApiError> {
        if extra == 0 {
            return Ok(());
        }
        let admission = Arc::clone(&self.admission);
        let wanted = self.bytes.saturating_add(extra);
        let deadline = tokio::time::Instant::now() + admission.wait;
        loop {
            // Registered before the check, so a release between the check and the wait wakes it.
            let freed = admission.freed.notified();
            if admission.try_take(&self.key, extra).inspect_err(|_| ())? {
                self.bytes = wanted;
                return Ok(());
            }
            if tokio::time::timeout_at(deadline, freed).await.is_err() {
                admission.metrics.refused(Refusal::BodyBudget);
                return Err(if admission.key_is_full(&self.key, extra) {
                    ApiError::key_limit("request memory (its share of --body-budget)")
                } else {
                    ApiError::overloaded("request memory (--body-budget)")
                });
            }
        }
    }

    /// Holds at least `bytes` from now on, waiting for more when it holds less. What a request
    /// took for its body is kept while its turn runs, though the body itself is gone by then:
    /// a turn's own transient memory (the Run's request, the answer) is of the order of its
    /// input, and the budget bounds it only if the bytes stay held.
    pub(crate) async fn hold_at_least(&mut self, bytes: usize) -> Result<(), ApiError> {
        if bytes > self.bytes {
            self.grow(bytes - self.bytes).await?;
        }
        Ok(())
    }

    /// Holds `bytes` from now on: gives back what is no longer needed, or waits for more.
    pub(crate) async fn resize(&mut self, bytes: usize) -> Result<(), ApiError> {
        if bytes >= self.bytes {
            return self.grow(bytes - self.bytes).await;
        }
        let extra = self.bytes - bytes;
        self.bytes = bytes;
        self.admission.give_back(&self.key, extra);
        Ok(())
    }
}

impl Drop for BodyPermit {
    fn drop(&mut self) {
        self.admission.give_back(&self.key, self.bytes);
    }
}

/// The heap a parsed JSON value built from `raw` may take, from its text alone: each value
/// node costs [`VALUE_NODE`] bytes besides its text. Counting delimiters over-counts a little
/// (commas and colons inside strings), which errs on the safe side.
pub(crate) fn value_cost(raw: &str) -> usize {
    let nodes = raw
        .bytes()
        .filter(|b| matches!(b, b'{' | b'[' | b',' | b':'))
        .count()
        + 1;
    raw.len().saturating_add(nodes.saturating_mul(VALUE_NODE))
}

/// What one JSON value node costs on the heap beyond its text (an ordered map entry with its
/// key and value slots, allocator overhead included).
pub(crate) const VALUE_NODE: usize = 96;

/// What the IR of one message or block costs beyond its text.
const BLOCK: usize = 96;

/// The heap `conversation` takes, estimated from its texts, images and values: what a running
/// turn holds of its request.
pub(crate) fn conversation_cost(conversation: &Conversation) -> usize {
    let mut cost = conversation.system_prompt.len();
    for tool in &conversation.tools {
        cost += BLOCK + tool.name.len() + tool.description.len() + tree_cost(&tool.parameters);
    }
    for message in &conversation.messages {
        cost += BLOCK;
        match message {
            Message::User { content } => {
                for block in content {
                    cost += BLOCK
                        + match block {
                            UserContent::Text { text } => text.len(),
                            UserContent::Image(image) => image.data.len() + image.mime_type.len(),
                            _ => 0,
                        };
                }
            }
            Message::Assistant { content } => {
                for block in content {
                    cost += BLOCK
                        + match block {
                            AssistantContent::Text { text } => text.len(),
                            AssistantContent::Thinking { text, signature } => {
                                text.len() + signature.as_ref().map_or(0, String::len)
                            }
                            AssistantContent::ToolCall(call) => {
                                call.id.len() + call.name.len() + tree_cost(&call.arguments)
                            }
                            _ => 0,
                        };
                }
            }
            Message::ToolResult(result) => {
                cost += result.tool_call_id.len() + result.tool_name.len();
                for block in &result.content {
                    cost += BLOCK
                        + match block {
                            ToolResultContent::Text { text } => text.len(),
                            ToolResultContent::Image(image) => image.data.len(),
                            _ => 0,
                        };
                }
            }
            _ => {}
        }
    }
    cost
}

/// The heap of a built JSON value: [`VALUE_NODE`] a node, plus its strings.
fn tree_cost(value: &Value) -> usize {
    let mut cost = 0;
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        cost += VALUE_NODE;
        match value {
            Value::String(text) => cost += text.len(),
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                for (key, value) in map {
                    cost += key.len();
                    stack.push(value);
                }
            }
            _ => {}
        }
    }
    cost
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Limits;

    fn admission(budget: usize, wait_ms: u64) -> Arc<Admission> {
        let mut limits = Limits::DEFAULT;
        limits.body_budget = budget;
        limits.max_body_bytes = budget / 2;
        limits.body_wait = Duration::from_millis(wait_ms);
        limits.max_turns = 3;
        limits.max_turns_per_key = 2;
        Admission::new(&limits, Arc::new(Metrics::default()))
    }

    #[tokio::test]
    async fn a_key_holds_at_most_half_the_budget_and_another_key_still_gets_room() {
        let admission = admission(1000, 20);
        let mut a1 = admission.permit("a");
        a1.grow(500).await.unwrap();
        let mut a2 = admission.permit("a");
        let refused = a2.grow(1).await.unwrap_err();
        assert_eq!(refused.status, 429, "{refused:?}");
        let mut b = admission.permit("b");
        b.grow(500).await.unwrap();
        assert_eq!(admission.body_bytes(), 1000);
        let mut c = admission.permit("c");
        assert_eq!(c.grow(1).await.unwrap_err().status, 503);
        drop(a1);
        c.grow(400).await.unwrap();
        assert_eq!(admission.body_bytes(), 900);
    }

    #[tokio::test]
    async fn a_waiting_request_gets_room_as_soon_as_it_is_given_back() {
        let admission = admission(1000, 2000);
        let mut a = admission.permit("a");
        a.grow(500).await.unwrap();
        let mut b = admission.permit("b");
        b.grow(500).await.unwrap();
        let waiter = {
            let admission = Arc::clone(&admission);
            tokio::spawn(async move {
                let mut c = admission.permit("c");
                c.grow(300).await.map(|()| c)
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        a.resize(100).await.unwrap();
        let c = waiter.await.unwrap().unwrap();
        assert_eq!(c.bytes(), 300);
        assert_eq!(admission.body_bytes(), 900);
    }

    #[test]
    fn turn_slots_are_capped_per_key_and_gateway_wide_and_come_back() {
        let admission = admission(1000, 0);
        let a1 = admission.turn_slot("a").unwrap();
        let _a2 = admission.turn_slot("a").unwrap();
        assert_eq!(admission.turn_slot("a").unwrap_err().status, 429);
        let _b = admission.turn_slot("b").unwrap();
        assert_eq!(admission.turn_slot("c").unwrap_err().status, 503);
        drop(a1);
        admission.turn_slot("c").unwrap();
        assert!(lock(&admission.held).keys.len() <= 3);
    }

    #[test]
    fn a_value_costs_at_least_its_built_size() {
        for raw in [
            r#"{"a": [1, 2, 3], "b": {"c": "text"}}"#,
            "[[],[],[],[],[]]",
            r#""just a string""#,
        ] {
            let built: Value = serde_json::from_str(raw).unwrap();
            assert!(value_cost(raw) >= tree_cost(&built), "{raw}");
        }
    }
}
