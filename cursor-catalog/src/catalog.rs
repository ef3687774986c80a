//! The catalog: model rows, the default model, and slug selection.

use serde::{Deserialize, Serialize};

use crate::{
    error::CatalogError,
    level::ThinkingLevel,
    row::{MaxMode, ModelRow},
};

/// What a request sends for one model choice (see [`Catalog::resolve`]).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireModel {
    /// The published slug to send first.
    pub slug: String,
    /// The other id form to send once if Cursor answers the slug `not_found`: the bare family
    /// id for a suffixed slug, the suffixed form for a bare one (PROTOCOL-AGENT §13.7).
    pub alternate: Option<String>,
    /// `requested_model.max_mode`: set for families that run only in Max Mode.
    pub max_mode: bool,
    /// The context window the request gets.
    pub context_window: u64,
}

/// The model families one account may use, in the backend's order, with the default model.
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Catalog {
    /// The rows.
    pub rows: Vec<ModelRow>,
    /// Row id of the account's default model, when it is usable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
}

impl Catalog {
    /// A catalog of `rows` with `default_model` (a row id).
    pub fn new(rows: Vec<ModelRow>, default_model: Option<String>) -> Self {
        Self {
            rows,
            default_model,
        }
    }

    /// The row with display id `model_id`.
    pub fn row(&self, model_id: &str) -> Option<&ModelRow> {
        self.rows.iter().find(|row| row.id == model_id)
    }

    /// The default model's row, if any.
    pub fn default_row(&self) -> Option<&ModelRow> {
        self.default_model.as_deref().and_then(|id| self.row(id))
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Every row id, in the backend's order (what a user may pick instead).
    pub fn model_ids(&self) -> Vec<String> {
        self.rows.iter().map(|row| row.id.clone()).collect()
    }

    /// What to send for `model_id` at `level`: [`Catalog::slug_for`]'s slug, the other id form
    /// to retry once on `not_found`, Max Mode as the family requires it, and the window.
    ///
    /// Whether effort is part of the id or not differs by model and over time (a catalog may
    /// list `grok-4.7-high` while the server takes only `grok-4.7`; `kimi-k3` exists only
    /// suffixed), so the catalog's form goes first and the other one is the fallback.
    pub fn resolve(
        &self,
        model_id: &str,
        level: Option<ThinkingLevel>,
    ) -> Result<WireModel, CatalogError> {
        let slug = self.slug_for(model_id, level)?.to_owned();
        let row = self
            .row(model_id)
            .or_else(|| self.rows.iter().find(|row| row.publishes(&slug)));
        let max_mode = row.is_some_and(|row| row.max_mode == MaxMode::Required);
        let alternate = row.and_then(|row| row.alternate_slug(&slug, level));
        let context_window = row.map_or(crate::DEFAULT_CONTEXT_WINDOW, |row| {
            row.context_window_for(max_mode)
        });
        Ok(WireModel {
            slug,
            alternate,
            max_mode,
            context_window,
        })
    }

    /// The published slug to send for `model_id` at `level` (PROTOCOL-AGENT §2.1).
    ///
    /// - No level: the family's default variant (`is_default_non_max_config`).
    /// - A level: [`ModelRow::level_slug`], else [`CatalogError::LevelUnsupported`].
    ///
    /// A `model_id` that is itself a published slug of some row (a host passing a raw slug)
    /// resolves to that slug when no level is given. Effort and context never travel as
    /// parameters: the slug already encodes them.
    pub fn slug_for(
        &self,
        model_id: &str,
        level: Option<ThinkingLevel>,
    ) -> Result<&str, CatalogError> {
        let Some(row) = self.row(model_id) else {
            if level.is_none()
                && let Some(slug) = self
                    .rows
                    .iter()
                    .flat_map(|r| &r.slugs)
                    .find(|s| *s == model_id)
            {
                return Ok(slug);
            }
            return Err(CatalogError::UnknownModel {
                model_id: model_id.to_owned(),
            });
        };
        let Some(level) = level else {
            return Ok(&row.default_slug);
        };
        if let Some(slug) = row.level_slug(level) {
            return Ok(slug);
        }
        Err(CatalogError::LevelUnsupported {
            model_id: row.id.clone(),
            level,
            supported: row.thinking_levels.keys().copied().collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, levels: &[(ThinkingLevel, &str)]) -> ModelRow {
        let mut row = ModelRow::new(id, id, levels[0].1);
        row.slugs.clear();
        for (level, slug) in levels {
            row.thinking_levels.insert(*level, (*slug).into());
            row.slugs.push((*slug).into());
        }
        row.reasoning = true;
        row
    }

    #[test]
    fn a_suffix_only_family_resolves_to_its_published_slug_with_the_bare_id_as_fallback() {
        let kimi = row(
            "kimi-k3",
            &[
                (ThinkingLevel::Low, "kimi-k3-low"),
                (ThinkingLevel::High, "kimi-k3-high"),
                (ThinkingLevel::Max, "kimi-k3-max"),
            ],
        );
        let catalog = Catalog::new(vec![kimi], None);
        let wire = catalog
            .resolve("kimi-k3", Some(ThinkingLevel::High))
            .unwrap();
        assert_eq!(wire.slug, "kimi-k3-high");
        assert_eq!(wire.alternate.as_deref(), Some("kimi-k3"));
        assert!(!wire.max_mode);
        assert!(
            catalog
                .resolve("kimi-k3", Some(ThinkingLevel::Medium))
                .is_err()
        );
    }

    #[test]
    fn a_stale_suffixed_grok_listing_offers_the_bare_id_to_retry() {
        let grok = row(
            "grok-4.7",
            &[
                (ThinkingLevel::Low, "grok-4.7-low"),
                (ThinkingLevel::High, "grok-4.7-high"),
                (ThinkingLevel::Xhigh, "grok-4.7-xhigh"),
            ],
        );
        let catalog = Catalog::new(vec![grok], None);
        let wire = catalog
            .resolve("grok-4.7", Some(ThinkingLevel::High))
            .unwrap();
        assert_eq!(wire.slug, "grok-4.7-high");
        assert_eq!(wire.alternate.as_deref(), Some("grok-4.7"));
        // A raw slug passed as the id resolves through the row that publishes it.
        let raw = catalog.resolve("grok-4.7-xhigh", None).unwrap();
        assert_eq!(raw.alternate.as_deref(), Some("grok-4.7"));
        assert_eq!(catalog.model_ids(), ["grok-4.7"]);
    }

    #[test]
    fn max_mode_required_families_get_the_max_mode_window() {
        let mut gemini = ModelRow::new("gemini-3-pro", "Gemini 3 Pro", "gemini-3-pro");
        gemini.max_mode = MaxMode::Required;
        let catalog = Catalog::new(vec![gemini], None);
        let wire = catalog.resolve("gemini-3-pro", None).unwrap();
        assert!(wire.max_mode);
        assert_eq!(wire.context_window, 1_000_000);
        assert_eq!(wire.alternate, None);
    }
}
