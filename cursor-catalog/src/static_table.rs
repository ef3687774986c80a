//! The catalog shipped with the crate, served on a first run before any discovery succeeded.

use crate::catalog::Catalog;

/// The shipped table, as JSON in the [`Catalog`] serde shape.
const STATIC_CATALOG_JSON: &str = include_str!("static_catalog.json");

/// The static fallback catalog: current Cursor families with their published effort slugs.
///
/// It ages; an online refresh replaces it as soon as the network allows.
pub fn static_catalog() -> Catalog {
    // The file is part of the crate, not input; the unit test below parses it on every build.
    serde_json::from_str(STATIC_CATALOG_JSON).expect("the shipped static catalog parses")
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::row::InputKind;

    #[test]
    fn the_shipped_table_is_complete_and_consistent() {
        let catalog = static_catalog();
        assert!(catalog.rows.len() >= 5);
        let ids: HashSet<_> = catalog.rows.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids.len(), catalog.rows.len(), "row ids are unique");
        let default = catalog.default_row().expect("the default model is a row");
        assert!(!default.default_slug.is_empty());
        for row in &catalog.rows {
            assert!(
                row.publishes(&row.default_slug),
                "{}: default slug is published",
                row.id
            );
            assert!(row.slugs.contains(&row.default_slug), "{}", row.id);
            for slug in row.thinking_levels.values() {
                assert!(
                    row.slugs.contains(slug),
                    "{}: level slug {slug} is published",
                    row.id
                );
            }
            assert_eq!(row.input.first(), Some(&InputKind::Text), "{}", row.id);
            assert!(row.context_window >= row.max_tokens, "{}", row.id);
            assert!(!row.id.starts_with("cursor-"), "{}", row.id);
        }
        assert!(
            catalog.rows.iter().any(|r| r.thinking_levels.len() >= 3),
            "some family has an effort ladder"
        );
        assert!(
            catalog.rows.iter().any(|r| r.id.ends_with("-fast")),
            "some -fast family"
        );
    }
}
