//! Catalog rows in pi's `ProviderModelConfig` shape.

use cursor_catalog::{CatalogStore, CatalogWarning, InputKind, ModelRow, ThinkingLevel};
use serde_json::{Map, Value, json};

/// The models pi should list: the catalog `persisted` holds (a snapshot this provider
/// published earlier through pi's `refreshModels` store), else cursor-catalog's static table.
///
/// Returns pi `ProviderModelConfig` objects and any warning about the snapshot.
pub fn pi_models(persisted: Option<&str>) -> (Vec<Value>, Vec<CatalogWarning>) {
    let (store, warnings) = CatalogStore::restore(persisted);
    let models = store.catalog().rows.iter().map(pi_model).collect();
    (models, warnings)
}

/// One row as a pi `ProviderModelConfig` (pi 0.99.1–1.6.0).
///
/// `contextWindow` is the window of the Max Mode the requests send: 1M only for the families
/// whose Max Mode extends it (PROTOCOL-AGENT §13.7).
///
/// Cursor publishes no prices, so a row without a cost is listed at zero. A reasoning family
/// gets a `thinkingLevelMap` from pi's level names to the published slugs, with `null` for the
/// levels it lacks (pi then does not offer them).
pub fn pi_model(row: &ModelRow) -> Value {
    let input: Vec<&str> = row
        .input
        .iter()
        .map(|kind| match kind {
            InputKind::Image => "image",
            _ => "text",
        })
        .collect();
    let cost = row.cost.unwrap_or_default();
    let mut model = json!({
        "id": row.id,
        "name": row.name,
        "reasoning": row.reasoning,
        "input": input,
        "cost": {
            "input": cost.input,
            "output": cost.output,
            "cacheRead": cost.cache_read,
            "cacheWrite": cost.cache_write,
        },
        // The window of the mode pi's requests send (Max Mode only where the family requires it).
        "contextWindow": row.context_window_for(row.max_mode.request_flag()),
        "maxTokens": row.max_tokens,
    });
    if row.reasoning && !row.thinking_levels.is_empty() {
        let levels: Map<String, Value> = ThinkingLevel::ALL
            .into_iter()
            .map(|level| {
                let slug = row
                    .thinking_levels
                    .get(&level)
                    .map_or(Value::Null, |slug| json!(slug));
                (level.as_str().to_owned(), slug)
            })
            .collect();
        model["thinkingLevelMap"] = Value::Object(levels);
    }
    model
}

#[cfg(test)]
mod tests {
    use super::*;
    use cursor_catalog::MaxMode;

    #[test]
    fn without_a_snapshot_the_static_table_is_listed_in_pi_shape() {
        let (models, warnings) = pi_models(None);
        assert!(warnings.is_empty());
        assert!(!models.is_empty());
        for model in &models {
            assert!(model["id"].is_string(), "{model}");
            assert!(model["contextWindow"].as_u64().unwrap() > 0, "{model}");
            assert_eq!(model["input"][0], "text", "{model}");
            assert!(model["cost"]["input"].is_number(), "{model}");
        }
    }

    #[test]
    fn a_max_mode_only_family_lists_one_million_only_where_max_mode_extends_it() {
        let mut kimi = ModelRow::new("kimi-k3", "Kimi K3", "kimi-k3-high");
        kimi.context_window = 256_000;
        kimi.max_mode = MaxMode::Required;
        assert_eq!(pi_model(&kimi)["contextWindow"], 1_000_000);
        let mut grok = ModelRow::new("grok-4.7", "Grok 4.7", "grok-4.7");
        grok.context_window = 256_000;
        grok.max_mode = MaxMode::Required;
        assert_eq!(pi_model(&grok)["contextWindow"], 256_000);
        // Optional Max Mode is not what pi sends: the normal window.
        kimi.max_mode = MaxMode::Optional;
        assert_eq!(pi_model(&kimi)["contextWindow"], 256_000);
    }

    #[test]
    fn a_family_with_effort_variants_maps_levels_to_slugs_and_missing_ones_to_null() {
        let (models, _) = pi_models(None);
        let laddered = models
            .iter()
            .find(|model| model.get("thinkingLevelMap").is_some())
            .expect("the static table has a family with effort variants");
        let map = laddered["thinkingLevelMap"].as_object().unwrap();
        assert_eq!(map.len(), ThinkingLevel::ALL.len());
        assert!(map.values().any(Value::is_string), "{laddered}");
    }

    #[test]
    fn an_unreadable_snapshot_falls_back_to_the_static_table_with_a_warning() {
        let (models, warnings) = pi_models(Some("{not json"));
        assert!(!models.is_empty());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
    }
}
