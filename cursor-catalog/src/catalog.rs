//! The catalog: model rows, the default model, and slug selection.

use serde::{Deserialize, Serialize};

use crate::{error::CatalogError, level::ThinkingLevel, row::ModelRow};

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
