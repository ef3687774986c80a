//! The models a gateway answers to: catalog ids, each effort variant's slug, `--model-alias`
//! names, and every model's Claude Code name (`claude-cursor-ID`), resolved to what a Run asks
//! Cursor for.

use std::collections::HashSet;

use cursor_agent::session::ModelChoice;
use cursor_catalog::{Catalog, ModelRow, ThinkingLevel};

use crate::ApiError;

/// The prefix of every model's Claude Code name: Claude Code lists only ids that start with
/// `claude` (or `anthropic`).
pub(crate) const CLAUDE_PREFIX: &str = "claude-cursor-";

/// The catalog and the aliases.
#[derive(Debug)]
pub(crate) struct Models {
    catalog: Catalog,
    aliases: Vec<(String, String)>,
}

impl Models {
    pub(crate) fn new(catalog: Catalog, aliases: Vec<(String, String)>) -> Self {
        Self { catalog, aliases }
    }

    /// Every model id the gateway answers to: catalog ids, then each effort variant's slug.
    pub(crate) fn ids(&self) -> Vec<String> {
        let mut ids = Vec::new();
        let mut seen = HashSet::new();
        for row in &self.catalog.rows {
            let all = std::iter::once(row.id.as_str())
                .chain(row.thinking_levels.values().map(String::as_str))
                .chain(row.slugs.iter().map(String::as_str));
            for id in all {
                if seen.insert(id) {
                    ids.push(id.to_owned());
                }
            }
        }
        ids
    }

    /// The catalog id a model name stands for: a `--model-alias` name, or `claude-cursor-ID`,
    /// else the name itself.
    pub(crate) fn resolve_alias<'a>(&'a self, model: &'a str) -> &'a str {
        if let Some((_, id)) = self.aliases.iter().find(|(name, _)| name == model) {
            return id;
        }
        model.strip_prefix(CLAUDE_PREFIX).unwrap_or(model)
    }

    /// The `--model-alias` names.
    pub(crate) fn alias_names(&self) -> impl Iterator<Item = &str> {
        self.aliases.iter().map(|(name, _)| name.as_str())
    }

    /// The context window a request for `id` gets (the Max Mode window where the family runs
    /// only in Max Mode).
    pub(crate) fn context_window(&self, id: &str) -> u64 {
        self.catalog
            .resolve(id, None)
            .map_or(cursor_catalog::DEFAULT_CONTEXT_WINDOW, |wire| {
                wire.context_window
            })
    }

    /// The catalog row of id `id`.
    pub(crate) fn row(&self, id: &str) -> Option<&ModelRow> {
        self.catalog.rows.iter().find(|row| row.id == id)
    }

    /// The slug for a request's `model` (an id or a published slug) and effort.
    pub(crate) fn choice(
        &self,
        model: &str,
        effort: Option<&str>,
    ) -> Result<ModelChoice, ApiError> {
        let level = match effort {
            None => None,
            Some("none") => Some(ThinkingLevel::Off),
            Some(effort) => Some(ThinkingLevel::from_host_name(effort).ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_reasoning_effort",
                    format!(
                        "reasoning_effort {effort} is not one of off, minimal, low, medium, high, xhigh, max"
                    ),
                )
            })?),
        };
        self.catalog
            .resolve(model, level)
            .map(|wire| {
                // The other id form for one retry on not_found, and Max Mode where the family
                // runs only so (PROTOCOL-AGENT §13.7).
                ModelChoice::new(wire.slug)
                    .with_max_mode(wire.max_mode)
                    .with_alternate(wire.alternate)
                    .with_known_models(self.catalog.model_ids())
            })
            .map_err(|e| {
                ApiError::bad_request(
                    "model_not_found",
                    format!("{e}; GET /v1/models lists the ids"),
                )
                .with_param("model")
            })
    }
}
