//! `GET /v1/models` in the shape the caller speaks: Anthropic's list (with `anthropic-version`),
//! else OpenAI's `data[]` with Codex's `models[]` catalog beside it in the same object.

use serde::Serialize;
use serde_json::{Value, json};

use crate::ApiError;
use crate::engine::models::{CLAUDE_PREFIX, Models};

/// Anthropic's `created_at` for every model: Cursor's catalog carries no dates.
const CREATED_AT: &str = "2026-01-01T00:00:00Z";

/// One model in Anthropic's shape.
#[derive(Debug, Serialize)]
struct AnthropicModel {
    #[serde(rename = "type")]
    kind: &'static str,
    id: String,
    display_name: String,
    created_at: &'static str,
}

/// Paging of Anthropic's list.
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct Paging {
    limit: Option<usize>,
    after_id: Option<String>,
    before_id: Option<String>,
}

/// Every model under the names Claude Code lists (`claude-cursor-ID`), then the aliases.
fn anthropic_models(models: &Models) -> Vec<AnthropicModel> {
    let mut out: Vec<AnthropicModel> = models
        .ids()
        .into_iter()
        .map(|id| AnthropicModel {
            kind: "model",
            display_name: models
                .row(&id)
                .map_or_else(|| id.clone(), |row| row.name.clone()),
            id: format!("{CLAUDE_PREFIX}{id}"),
            created_at: CREATED_AT,
        })
        .collect();
    out.extend(models.alias_names().map(|name| AnthropicModel {
        kind: "model",
        id: name.to_owned(),
        display_name: format!("{name} (→ {})", models.resolve_alias(name)),
        created_at: CREATED_AT,
    }));
    out
}

/// Anthropic's list, paged by `limit` (1–1000, default 20), `after_id` and `before_id`.
pub(crate) fn anthropic_list(models: &Models, paging: &Paging) -> Result<Value, ApiError> {
    let all = anthropic_models(models);
    let limit = paging.limit.unwrap_or(20);
    if !(1..=1000).contains(&limit) {
        return Err(
            ApiError::bad_request("invalid_request_error", "limit must be 1 to 1000")
                .with_param("limit"),
        );
    }
    let position = |id: &str| {
        all.iter().position(|m| m.id == id).ok_or_else(|| {
            ApiError::bad_request("invalid_request_error", format!("no model {id}"))
                .with_param("after_id")
        })
    };
    let (start, end) = match (&paging.after_id, &paging.before_id) {
        (Some(after), _) => {
            let start = position(after)? + 1;
            (start, (start + limit).min(all.len()))
        }
        (None, Some(before)) => {
            let end = position(before)?;
            (end.saturating_sub(limit), end)
        }
        (None, None) => (0, limit.min(all.len())),
    };
    let page = &all[start..end];
    Ok(json!({
        "data": page,
        "has_more": if paging.before_id.is_some() && paging.after_id.is_none() { start > 0 } else { end < all.len() },
        "first_id": page.first().map(|m| &m.id),
        "last_id": page.last().map(|m| &m.id),
    }))
}

/// One model in Anthropic's shape, or a 404.
pub(crate) fn anthropic_one(models: &Models, id: &str) -> Result<Value, ApiError> {
    anthropic_models(models)
        .into_iter()
        .find(|m| m.id == id)
        .map(|m| json!(m))
        .ok_or_else(|| {
            ApiError::bad_request("not_found_error", format!("no model {id}")).with_status(404)
        })
}

/// OpenAI's list, with Codex's catalog (`models[]`: slug, name, context window, reasoning
/// efforts) in the same object so Codex does not fall back to guessed metadata.
pub(crate) fn openai_list(models: &Models) -> Value {
    let ids = models.ids();
    let data: Vec<Value> = ids.iter().map(|id| openai_model(id)).collect();
    let models: Vec<Value> = ids
        .iter()
        .enumerate()
        .map(|(priority, id)| codex_model(models, id, priority))
        .collect();
    json!({"object": "list", "data": data, "models": models})
}

pub(crate) fn openai_model(id: &str) -> Value {
    json!({"id": id, "object": "model", "created": 0, "owned_by": "cursor"})
}

/// The base instructions Codex's catalog must carry for each model: short and neutral, since
/// Codex sends them as the turn's instructions when it uses this catalog.
const CODEX_INSTRUCTIONS: &str = "You are a coding agent working in the user's workspace \
through Codex CLI. Use the tools you are given to read, run and change what the task needs, \
keep the user informed of what you do, and say plainly when something failed.";

fn codex_model(models: &Models, id: &str, priority: usize) -> Value {
    let row = models.row(id);
    let efforts: Vec<Value> = row
        .map(|row| {
            row.thinking_levels
                .keys()
                .filter(|level| level.as_str() != "off")
                .map(|level| json!({"effort": level.as_str(), "description": format!("{} reasoning", level.as_str())}))
                .collect()
        })
        .unwrap_or_default();
    let default_level = row
        .and_then(|row| {
            row.thinking_levels
                .iter()
                .find(|(_, slug)| **slug == row.default_slug)
                .map(|(level, _)| level.as_str())
        })
        .or_else(|| efforts.first().and_then(|e| e["effort"].as_str()))
        .unwrap_or("medium");
    let images = row.is_some_and(|row| row.input.contains(&cursor_catalog::InputKind::Image));
    json!({
        "slug": id,
        "display_name": row.map_or(id, |row| row.name.as_str()),
        "description": format!("{} through Cursor", row.map_or(id, |row| row.name.as_str())),
        "default_reasoning_level": default_level,
        "supported_reasoning_levels": efforts,
        "shell_type": "shell_command",
        "visibility": "list",
        "supported_in_api": true,
        "priority": priority,
        // The window of the request the gateway sends (Max Mode only where the family needs it).
        "context_window": models.context_window(id),
        "input_modalities": if images { json!(["text", "image"]) } else { json!(["text"]) },
        "supports_parallel_tool_calls": true,
        // Fields Codex's catalog decoder requires (Codex 0.171).
        "support_verbosity": false,
        "truncation_policy": {"mode": "tokens", "limit": 10000},
        "experimental_supported_tools": [],
        "base_instructions": CODEX_INSTRUCTIONS,
    })
}
