//! Mapping the three discovery answers to host-neutral rows.
//!
//! The usable slugs decide what is listed; AvailableModels supplies the metadata (usable ids ∩
//! catalog rows, variants joined through `legacy_slug`, docs/PROTOCOL.md §5.2). Slugs are grouped
//! into families by their effort word ([`crate::family`]); each family becomes one row whose
//! thinking levels point at the published slugs.

use std::collections::{BTreeMap, HashMap, HashSet};

use cursor_proto::{
    agent::v1::{GetDefaultModelForCliResponse, GetUsableModelsResponse, ModelDetails},
    aiserver::v1::{AvailableModel, AvailableModelsResponse},
};

use crate::{
    catalog::Catalog,
    error::CatalogError,
    family::split_slug,
    level::ThinkingLevel,
    row::{DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_TOKENS, InputKind, MaxMode, ModelRow},
    warning::CatalogWarning,
};

/// The prefix some families carry on the wire and rows drop for display.
const CURSOR_PREFIX: &str = "cursor-";

/// Which variant serves a request without a level when the backend marks none.
const DEFAULT_LEVEL_PREFERENCE: [ThinkingLevel; 7] = [
    ThinkingLevel::Medium,
    ThinkingLevel::High,
    ThinkingLevel::Low,
    ThinkingLevel::Xhigh,
    ThinkingLevel::Minimal,
    ThinkingLevel::Off,
    ThinkingLevel::Max,
];

/// A catalog built from one discovery round trip, with what the host should be told.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq)]
pub struct Mapped {
    /// The catalog.
    pub catalog: Catalog,
    /// Non-fatal findings (unmatched ids, an unusable default).
    pub warnings: Vec<CatalogWarning>,
}

/// One usable slug.
struct Member<'a> {
    details: &'a ModelDetails,
    level: Option<ThinkingLevel>,
}

/// Usable slugs sharing a family key.
struct Family<'a> {
    key: String,
    base: String,
    members: Vec<Member<'a>>,
}

/// Builds the catalog from the three discovery answers.
///
/// Fails with [`CatalogError::EmptyRoster`] when no usable slug has catalog metadata.
pub fn map_roster(
    available: &AvailableModelsResponse,
    usable: &GetUsableModelsResponse,
    default: &GetDefaultModelForCliResponse,
) -> Result<Mapped, CatalogError> {
    let families = group_usable(&usable.models);
    let usable_count: usize = families.iter().map(|f| f.members.len()).sum();
    let index = MetadataIndex::new(&available.models);

    let mut warnings = Vec::new();
    let mut unmatched = Vec::new();
    let mut built = Vec::new();
    for family in &families {
        match index.find(family) {
            Some(meta) => built.push((family.key.as_str(), build_row(family, meta))),
            None => unmatched.extend(family.members.iter().map(|m| m.details.model_id.clone())),
        }
    }
    if !unmatched.is_empty() {
        warnings.push(CatalogWarning::UnmatchedUsableIds { ids: unmatched });
    }
    if built.is_empty() {
        return Err(CatalogError::EmptyRoster {
            usable: usable_count,
        });
    }

    let keys: HashSet<&str> = built.iter().map(|(key, _)| *key).collect();
    let rows: Vec<ModelRow> = built
        .into_iter()
        .map(|(key, mut row)| {
            row.id = display_id(key, &keys);
            row
        })
        .collect();

    let default_model = match default.model.as_ref().map(|m| m.model_id.as_str()) {
        None | Some("") => None,
        Some(slug) => {
            let row = rows.iter().find(|row| row.publishes(slug));
            if row.is_none() {
                warnings.push(CatalogWarning::DefaultModelNotUsable {
                    model_id: slug.to_owned(),
                });
            }
            row.map(|row| row.id.clone())
        }
    };
    Ok(Mapped {
        catalog: Catalog::new(rows, default_model),
        warnings,
    })
}

/// Groups usable slugs into families, in the order the backend listed them.
fn group_usable(models: &[ModelDetails]) -> Vec<Family<'_>> {
    let mut seen = HashSet::new();
    let mut families: Vec<Family<'_>> = Vec::new();
    let mut by_key: HashMap<String, usize> = HashMap::new();
    for details in models {
        if details.model_id.is_empty() || !seen.insert(details.model_id.as_str()) {
            continue;
        }
        let parts = split_slug(&details.model_id);
        let member = Member {
            details,
            level: parts.level,
        };
        match by_key.get(&parts.family) {
            Some(&at) => families[at].members.push(member),
            None => {
                by_key.insert(parts.family.clone(), families.len());
                families.push(Family {
                    key: parts.family,
                    base: parts.base,
                    members: vec![member],
                });
            }
        }
    }
    families
}

/// AvailableModels rows by every name they answer to.
struct MetadataIndex<'a> {
    by_name: HashMap<&'a str, &'a AvailableModel>,
}

impl<'a> MetadataIndex<'a> {
    fn new(models: &'a [AvailableModel]) -> Self {
        let mut by_name = HashMap::new();
        // Row names first so an alias never shadows a row that is named that way.
        for model in models {
            by_name.entry(model.name.as_str()).or_insert(model);
        }
        for model in models {
            let names = model
                .server_model_name
                .iter()
                .chain(&model.legacy_slugs)
                .chain(&model.id_aliases)
                .chain(model.variants.iter().filter_map(|v| v.legacy_slug.as_ref()));
            for name in names {
                by_name.entry(name.as_str()).or_insert(model);
            }
        }
        by_name.remove("");
        Self { by_name }
    }

    /// The family's row: named like the family, else through a member slug, else the base model.
    fn find(&self, family: &Family<'_>) -> Option<&'a AvailableModel> {
        let member_slugs = family.members.iter().map(|m| m.details.model_id.as_str());
        std::iter::once(family.key.as_str())
            .chain(member_slugs)
            .chain(std::iter::once(family.base.as_str()))
            .find_map(|name| self.by_name.get(name).copied())
    }
}

fn build_row(family: &Family<'_>, meta: &AvailableModel) -> ModelRow {
    let is_max_slug = |details: &ModelDetails| {
        details.max_mode == Some(true)
            || meta.variants.iter().any(|v| {
                v.is_max_mode && v.legacy_slug.as_deref() == Some(details.model_id.as_str())
            })
    };
    let mut thinking_levels = BTreeMap::new();
    for member in &family.members {
        if let Some(level) = member.level {
            thinking_levels
                .entry(level)
                .or_insert_with(|| member.details.model_id.clone());
        }
    }
    // A slug without an effort word may still be a level: its variant's parameter says which
    // (`claude-4.5-sonnet` is `effort=medium`). Suffixes win over parameters.
    for member in family
        .members
        .iter()
        .filter(|m| m.level.is_none() && !is_max_slug(m.details))
    {
        if let Some(level) = variant_level(meta, &member.details.model_id) {
            thinking_levels
                .entry(level)
                .or_insert_with(|| member.details.model_id.clone());
        }
    }
    let slugs: Vec<String> = family
        .members
        .iter()
        .map(|m| m.details.model_id.clone())
        .collect();
    let default_slug = default_slug(family, meta, &is_max_slug);

    let only_max = family.members.iter().all(|m| is_max_slug(m.details));
    let max_mode = if only_max
        || (meta.supports_max_mode == Some(true) && meta.supports_non_max_mode == Some(false))
    {
        MaxMode::Required
    } else if meta.supports_max_mode == Some(true) {
        MaxMode::Optional
    } else {
        MaxMode::Unsupported
    };
    let positive =
        |limit: Option<i32>| limit.and_then(|l| u64::try_from(l).ok()).filter(|l| *l > 0);
    let (normal, max) = (
        positive(meta.context_token_limit),
        positive(meta.context_token_limit_for_max_mode),
    );
    let context_window = match max_mode {
        MaxMode::Required => max.or(normal),
        _ => normal.or(max),
    }
    .unwrap_or(DEFAULT_CONTEXT_WINDOW);

    let mut input = vec![InputKind::Text];
    if meta.supports_images == Some(true) {
        input.push(InputKind::Image);
    }
    let reasoning = meta.supports_thinking == Some(true)
        || thinking_levels.keys().any(|l| *l != ThinkingLevel::Off);

    ModelRow {
        id: family.key.clone(),
        name: row_name(family, meta, &default_slug),
        reasoning,
        input,
        context_window,
        max_tokens: DEFAULT_MAX_TOKENS.min(context_window),
        max_mode,
        thinking_levels,
        default_slug,
        slugs,
        cost: None,
    }
}

/// The effort level a variant's parameter values name, if exactly one names a level.
fn variant_level(meta: &AvailableModel, slug: &str) -> Option<ThinkingLevel> {
    let variant = meta
        .variants
        .iter()
        .find(|v| v.legacy_slug.as_deref() == Some(slug))?;
    let mut levels = variant
        .parameter_values
        .iter()
        .filter_map(|p| ThinkingLevel::from_slug_word(&p.value));
    let level = levels.next()?;
    levels.all(|other| other == level).then_some(level)
}

/// The backend-marked default variant, else the bare slug, else the most middling level.
fn default_slug(
    family: &Family<'_>,
    meta: &AvailableModel,
    is_max_slug: &dyn Fn(&ModelDetails) -> bool,
) -> String {
    let member = |slug: &str| family.members.iter().find(|m| m.details.model_id == slug);
    let marked = meta
        .variants
        .iter()
        .filter(|v| v.is_default_non_max_config == Some(true) && !v.is_max_mode)
        .filter_map(|v| v.legacy_slug.as_deref())
        .find_map(member);
    let bare = || member(&family.key).filter(|m| !is_max_slug(m.details));
    let by_level = || {
        DEFAULT_LEVEL_PREFERENCE.iter().find_map(|level| {
            family
                .members
                .iter()
                .find(|m| m.level == Some(*level) && !is_max_slug(m.details))
        })
    };
    marked
        .or_else(bare)
        .or_else(by_level)
        .or_else(|| family.members.first())
        .map(|m| m.details.model_id.clone())
        .unwrap_or_else(|| family.key.clone())
}

/// The catalog's display name, else the usable list's name for the default slug, else the key.
fn row_name(family: &Family<'_>, meta: &AvailableModel, default_slug: &str) -> String {
    let from_meta = meta
        .client_display_name
        .as_deref()
        .filter(|n| !n.trim().is_empty());
    let from_usable = || {
        family
            .members
            .iter()
            .find(|m| m.details.model_id == default_slug)
            .map(|m| m.details.display_name.as_str())
            .filter(|n| !n.trim().is_empty())
    };
    let name = from_meta
        .or_else(from_usable)
        .unwrap_or(&family.key)
        .trim()
        .to_owned();
    if family.key.ends_with("-fast") && !name.to_ascii_lowercase().contains("fast") {
        format!("{name} Fast")
    } else {
        name
    }
}

/// The family key without `cursor-`, unless an unprefixed family already uses that id.
fn display_id(key: &str, keys: &HashSet<&str>) -> String {
    match key.strip_prefix(CURSOR_PREFIX) {
        Some(stripped) if !stripped.is_empty() && !keys.contains(stripped) => stripped.to_owned(),
        _ => key.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use cursor_proto::{
        agent::v1::requested_model::ModelParameterValue, aiserver::v1::ModelVariantConfig,
    };

    use super::*;

    fn usable(ids: &[&str]) -> GetUsableModelsResponse {
        GetUsableModelsResponse {
            models: ids
                .iter()
                .map(|id| ModelDetails {
                    model_id: (*id).to_owned(),
                    ..ModelDetails::default()
                })
                .collect(),
        }
    }

    fn meta(name: &str) -> AvailableModel {
        AvailableModel {
            name: name.to_owned(),
            ..AvailableModel::default()
        }
    }

    fn variant(slug: &str, default: bool) -> ModelVariantConfig {
        ModelVariantConfig {
            parameter_values: vec![ModelParameterValue::default()],
            legacy_slug: Some(slug.to_owned()),
            is_default_non_max_config: Some(default),
            ..ModelVariantConfig::default()
        }
    }

    fn no_default() -> GetDefaultModelForCliResponse {
        GetDefaultModelForCliResponse::default()
    }

    #[test]
    fn cursor_prefix_is_dropped_unless_it_collides() {
        let available = AvailableModelsResponse {
            models: vec![meta("cursor-grok-4.6"), meta("cursor-small"), meta("small")],
            ..AvailableModelsResponse::default()
        };
        let mapped = map_roster(
            &available,
            &usable(&["cursor-grok-4.6", "cursor-small", "small"]),
            &no_default(),
        )
        .unwrap();
        let ids: Vec<_> = mapped.catalog.rows.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["grok-4.6", "cursor-small", "small"]);
        assert_eq!(
            mapped.catalog.slug_for("grok-4.6", None).unwrap(),
            "cursor-grok-4.6"
        );
    }

    #[test]
    fn backend_marked_default_variant_wins_over_preference() {
        let mut row = meta("gpt-5.2");
        row.variants = vec![
            variant("gpt-5.2-low", true),
            variant("gpt-5.2-medium", false),
        ];
        let available = AvailableModelsResponse {
            models: vec![row],
            ..AvailableModelsResponse::default()
        };
        let mapped = map_roster(
            &available,
            &usable(&["gpt-5.2-medium", "gpt-5.2-low"]),
            &no_default(),
        )
        .unwrap();
        assert_eq!(mapped.catalog.rows[0].default_slug, "gpt-5.2-low");
    }

    #[test]
    fn without_a_marked_default_medium_is_preferred_then_bare() {
        let available = AvailableModelsResponse {
            models: vec![meta("m")],
            ..AvailableModelsResponse::default()
        };
        let levels = map_roster(
            &available,
            &usable(&["m-low", "m-high", "m-medium"]),
            &no_default(),
        )
        .unwrap();
        assert_eq!(levels.catalog.rows[0].default_slug, "m-medium");
        let bare = map_roster(&available, &usable(&["m-low", "m"]), &no_default()).unwrap();
        assert_eq!(bare.catalog.rows[0].default_slug, "m");
    }

    #[test]
    fn usable_ids_without_metadata_are_left_out_with_a_warning() {
        let available = AvailableModelsResponse {
            models: vec![meta("known")],
            ..AvailableModelsResponse::default()
        };
        let mapped = map_roster(
            &available,
            &usable(&["known", "ghost-high", "ghost-low"]),
            &no_default(),
        )
        .unwrap();
        assert_eq!(mapped.catalog.rows.len(), 1);
        assert_eq!(
            mapped.warnings,
            [CatalogWarning::UnmatchedUsableIds {
                ids: vec!["ghost-high".into(), "ghost-low".into()]
            }]
        );
    }

    #[test]
    fn no_matching_metadata_is_an_empty_roster() {
        let err = map_roster(
            &AvailableModelsResponse::default(),
            &usable(&["a", "b"]),
            &no_default(),
        )
        .unwrap_err();
        assert!(
            matches!(err, CatalogError::EmptyRoster { usable: 2 }),
            "{err}"
        );
    }

    #[test]
    fn a_default_outside_the_usable_set_is_reported_not_listed() {
        let available = AvailableModelsResponse {
            models: vec![meta("a")],
            ..AvailableModelsResponse::default()
        };
        let default = GetDefaultModelForCliResponse {
            model: Some(ModelDetails {
                model_id: "retired-1".into(),
                ..ModelDetails::default()
            }),
        };
        let mapped = map_roster(&available, &usable(&["a"]), &default).unwrap();
        assert_eq!(mapped.catalog.default_model, None);
        assert_eq!(
            mapped.warnings,
            [CatalogWarning::DefaultModelNotUsable {
                model_id: "retired-1".into()
            }]
        );
    }

    #[test]
    fn duplicate_and_empty_slugs_are_ignored() {
        let available = AvailableModelsResponse {
            models: vec![meta("a")],
            ..AvailableModelsResponse::default()
        };
        let mapped = map_roster(&available, &usable(&["a", "", "a"]), &no_default()).unwrap();
        assert_eq!(mapped.catalog.rows[0].slugs, ["a"]);
    }
}
