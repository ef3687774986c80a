//! T-CATALOG (mapping): rosters to rows, family collapse, and the slug chosen for every
//! (model, level) pair. No network.

use cursor_proto::ir::Classify as _;
use std::collections::{BTreeMap, HashSet};

use cursor_catalog::{
    Catalog, CatalogError, InputKind, MaxMode, ThinkingLevel, map_roster,
    testing::{FixtureRoster, effort_variants, model, usable},
};
use cursor_proto::{
    agent::v1::{GetDefaultModelForCliResponse, GetUsableModelsResponse},
    aiserver::v1::AvailableModelsResponse,
    ir::ErrorKind,
};

/// A row id, its default slug, and the slug of each level it publishes.
type ExpectedRow = (
    &'static str,
    &'static str,
    &'static [(ThinkingLevel, &'static str)],
);

fn realistic_catalog() -> Catalog {
    let roster = FixtureRoster::realistic();
    map_roster(&roster.available, &roster.usable, &roster.default)
        .unwrap()
        .catalog
}

#[test]
fn realistic_roster_maps_to_one_row_per_family_in_backend_order() {
    let roster = FixtureRoster::realistic();
    let mapped = map_roster(&roster.available, &roster.usable, &roster.default).unwrap();
    assert_eq!(mapped.warnings, []);
    let catalog = mapped.catalog;
    let ids: Vec<_> = catalog.rows.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "default",
            "composer-2.5",
            "composer-2.5-fast",
            "grok-4.7",
            "grok-4.7-fast",
            "grok-4.6",
            "gpt-5.2",
            "claude-4.5-sonnet",
            "gpt-5.2-pro",
            "gemini-3-pro",
        ]
    );
    assert_eq!(catalog.default_model.as_deref(), Some("composer-2.5"));

    let row = |id: &str| catalog.row(id).unwrap();
    assert_eq!(row("grok-4.7").name, "Grok 4.7");
    assert_eq!(
        row("composer-2.5-fast").name,
        "Composer 2.5 Fast",
        "base metadata, fast name"
    );
    assert_eq!(
        row("grok-4.6").input,
        [InputKind::Text],
        "supports_images=false stays text-only"
    );
    assert_eq!(
        row("gemini-3-pro").input,
        [InputKind::Text, InputKind::Image]
    );
    assert_eq!(row("gemini-3-pro").context_window, 1_000_000);
    assert_eq!(row("gemini-3-pro").max_tokens, 64_000);
    assert!(!row("default").reasoning);
    assert!(
        row("composer-2.5").reasoning,
        "supports_thinking without effort variants"
    );
    assert!(row("grok-4.7").reasoning);
    assert_eq!(row("gpt-5.2").max_mode, MaxMode::Optional);
    assert_eq!(
        row("gpt-5.2").context_window,
        272_000,
        "non-max context for an optional max mode"
    );
    assert_eq!(row("gpt-5.2-pro").max_mode, MaxMode::Required);
    assert!(row("gpt-5.2-pro").max_mode.request_flag());
    assert_eq!(
        row("gpt-5.2-pro").context_window,
        400_000,
        "max-mode context for a max-only model"
    );
    assert_eq!(row("default").max_mode, MaxMode::Unsupported);
    assert!(
        catalog.row("claude-4.5-opus").is_none(),
        "metadata without a usable slug is not listed"
    );
    assert!(
        catalog.rows.iter().all(|r| r.cost.is_none()),
        "Cursor publishes no prices"
    );
}

/// Every row × (no level + every level): the exact slug, or an unsupported-level error.
#[test]
fn slug_for_every_model_and_level_of_the_fixture_roster() {
    use ThinkingLevel::*;
    let catalog = realistic_catalog();
    // (row id, default slug, [(level, slug)]) — levels not listed must fail unless the row has
    // no levels at all (then every level is the default) or the level is Off.
    let expected: &[ExpectedRow] = &[
        ("default", "default", &[]),
        ("composer-2.5", "composer-2.5", &[]),
        ("composer-2.5-fast", "composer-2.5-fast", &[]),
        (
            "grok-4.7",
            "grok-4.7-medium",
            &[
                (Low, "grok-4.7-low"),
                (Medium, "grok-4.7-medium"),
                (High, "grok-4.7-high"),
            ],
        ),
        (
            "grok-4.7-fast",
            "grok-4.7-high-fast",
            &[(Low, "grok-4.7-low-fast"), (High, "grok-4.7-high-fast")],
        ),
        ("grok-4.6", "cursor-grok-4.6", &[]),
        (
            "gpt-5.2",
            "gpt-5.2-medium",
            &[
                (Off, "gpt-5.2-none"),
                (Low, "gpt-5.2-low"),
                (Medium, "gpt-5.2-medium"),
                (High, "gpt-5.2-high"),
                (Xhigh, "gpt-5.2-xhigh"),
            ],
        ),
        (
            "claude-4.5-sonnet",
            "claude-4.5-sonnet",
            &[
                (Medium, "claude-4.5-sonnet"),
                (High, "claude-4.5-sonnet-high"),
            ],
        ),
        ("gpt-5.2-pro", "gpt-5.2-pro", &[]),
        ("gemini-3-pro", "gemini-3-pro", &[]),
    ];
    assert_eq!(
        expected.len(),
        catalog.rows.len(),
        "the table covers every row"
    );
    let mut pairs = 0;
    for (id, default, levels) in expected {
        let row = catalog.row(id).unwrap_or_else(|| panic!("row {id}"));
        let levels: BTreeMap<_, _> = levels.iter().copied().collect();
        assert_eq!(
            catalog.slug_for(id, None).unwrap(),
            *default,
            "{id} without a level"
        );
        assert_eq!(row.default_slug, *default);
        for level in ThinkingLevel::ALL {
            pairs += 1;
            let got = catalog.slug_for(id, Some(level));
            match levels.get(&level) {
                Some(slug) => assert_eq!(got.unwrap(), *slug, "{id} at {level}"),
                None if levels.is_empty() || level == Off => {
                    assert_eq!(got.unwrap(), *default, "{id} at {level}")
                }
                None => {
                    let err = got.unwrap_err();
                    assert!(
                        matches!(err, CatalogError::LevelUnsupported { .. }),
                        "{id} at {level}: {err}"
                    );
                    assert_eq!(err.kind(), ErrorKind::Local);
                }
            }
            if let Ok(slug) = catalog.slug_for(id, Some(level)) {
                assert!(
                    row.publishes(slug),
                    "{id} at {level}: {slug} is a published slug"
                );
            }
        }
    }
    assert_eq!(pairs, 70);
}

#[test]
fn unknown_models_fail_and_raw_slugs_resolve_to_themselves() {
    let catalog = realistic_catalog();
    let err = catalog.slug_for("gpt-9", None).unwrap_err();
    assert!(matches!(err, CatalogError::UnknownModel { .. }), "{err}");
    assert_eq!(err.kind(), ErrorKind::Local);
    assert_eq!(
        catalog.slug_for("grok-4.7-high-fast", None).unwrap(),
        "grok-4.7-high-fast"
    );
    assert!(
        catalog
            .slug_for("grok-4.7-high-fast", Some(ThinkingLevel::Low))
            .is_err()
    );
    assert!(
        catalog.slug_for("cursor-grok-4.6", None).is_ok(),
        "the wire slug of a prefixed row"
    );
}

/// 20 base models × (bare + 5 effort slugs + 4 effort `-fast` slugs) = 200 usable ids.
#[test]
fn a_roster_of_200_ids_collapses_to_its_40_families() {
    const EFFORTS: [&str; 5] = ["none", "low", "medium", "high", "xhigh"];
    const FAST_EFFORTS: [&str; 4] = ["low", "medium", "high", "extra-high"];
    let mut available = AvailableModelsResponse::default();
    let mut roster = GetUsableModelsResponse::default();
    for n in 0..20 {
        let base = format!("model-{n}.1");
        available.models.push(model(
            &base,
            &format!("Model {n}.1"),
            n % 2 == 0,
            true,
            128_000,
        ));
        roster.models.push(usable(&base, &base, None));
        for effort in EFFORTS {
            roster
                .models
                .push(usable(&format!("{base}-{effort}"), &base, None));
        }
        for effort in FAST_EFFORTS {
            roster
                .models
                .push(usable(&format!("{base}-{effort}-fast"), &base, None));
        }
    }
    assert_eq!(roster.models.len(), 200);
    let mapped = map_roster(
        &available,
        &roster,
        &GetDefaultModelForCliResponse::default(),
    )
    .unwrap();
    assert_eq!(mapped.warnings, []);
    let catalog = mapped.catalog;
    assert_eq!(catalog.rows.len(), 40);

    let mut seen = HashSet::new();
    for row in &catalog.rows {
        for slug in &row.slugs {
            assert!(seen.insert(slug.clone()), "{slug} is in exactly one family");
        }
    }
    assert_eq!(seen.len(), 200, "every usable id is listed");

    let plain = catalog.row("model-7.1").unwrap();
    assert_eq!(plain.slugs.len(), 6);
    assert_eq!(
        plain.default_slug, "model-7.1",
        "the bare slug when no variant is marked"
    );
    let levels: Vec<_> = plain.thinking_levels.keys().copied().collect();
    use ThinkingLevel::*;
    assert_eq!(levels, [Off, Low, Medium, High, Xhigh]);
    assert_eq!(plain.input, [InputKind::Text], "odd models have no images");

    let fast = catalog.row("model-8.1-fast").unwrap();
    assert_eq!(fast.slugs.len(), 4);
    assert_eq!(fast.name, "Model 8.1 Fast");
    assert_eq!(
        fast.default_slug, "model-8.1-medium-fast",
        "medium when nothing is marked and there is no bare slug"
    );
    assert_eq!(fast.thinking_levels[&Xhigh], "model-8.1-extra-high-fast");
    assert_eq!(fast.input, [InputKind::Text, InputKind::Image]);
}

#[test]
fn variant_parameters_name_the_level_of_a_slug_without_an_effort_word() {
    let mut row = model("claude-5", "Claude 5", true, true, 200_000);
    row.variants = effort_variants(
        "effort",
        &[("claude-5", "low"), ("claude-5-thinking", "high")],
        "claude-5",
    );
    let available = AvailableModelsResponse {
        models: vec![row],
        ..AvailableModelsResponse::default()
    };
    let roster = GetUsableModelsResponse {
        models: vec![usable("claude-5", "Claude 5", None)],
    };
    let catalog = map_roster(
        &available,
        &roster,
        &GetDefaultModelForCliResponse::default(),
    )
    .unwrap()
    .catalog;
    let only = &catalog.rows[0];
    assert_eq!(
        only.thinking_levels
            .get(&ThinkingLevel::Low)
            .map(String::as_str),
        Some("claude-5")
    );
    assert_eq!(
        only.thinking_levels.len(),
        1,
        "an unusable variant slug is not offered"
    );
}

#[test]
fn an_empty_roster_is_a_remote_refusal() {
    let roster = FixtureRoster::empty();
    let err = map_roster(&roster.available, &roster.usable, &roster.default).unwrap_err();
    assert!(
        matches!(err, CatalogError::EmptyRoster { usable: 0 }),
        "{err}"
    );
    assert_eq!(err.kind(), ErrorKind::RemoteRefusal);
}

#[test]
fn rows_serialize_with_the_fields_a_host_model_config_needs() {
    let catalog = realistic_catalog();
    let json = serde_json::to_value(catalog.row("grok-4.7").unwrap()).unwrap();
    for field in [
        "id",
        "name",
        "reasoning",
        "input",
        "contextWindow",
        "maxTokens",
        "maxMode",
        "thinkingLevels",
        "defaultSlug",
    ] {
        assert!(json.get(field).is_some(), "{field} in {json}");
    }
    assert_eq!(json["thinkingLevels"]["high"], "grok-4.7-high");
    assert_eq!(json["input"], serde_json::json!(["text", "image"]));
    let back: Catalog = serde_json::from_value(serde_json::to_value(&catalog).unwrap()).unwrap();
    assert_eq!(back, catalog);
}
