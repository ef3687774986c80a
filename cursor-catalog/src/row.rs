//! One host-neutral model row: what a host needs to list, pick and call a model family.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::family::split_slug;
use crate::level::ThinkingLevel;
use crate::window::{MAX_MODE_CONTEXT_WINDOW, max_mode_reaches_1m};

/// Context window assumed when Cursor publishes none.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 200_000;

/// Output budget per call. Cursor publishes no output limit; 64k is what hosts already assume.
pub const DEFAULT_MAX_TOKENS: u64 = 64_000;

/// A kind of input a model accepts.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InputKind {
    /// Text.
    Text,
    /// Images (Cursor's `supports_images`).
    Image,
}

/// How a family relates to Cursor's max mode (bigger context, billed differently).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MaxMode {
    /// Max mode is not offered.
    #[default]
    Unsupported,
    /// Max mode may be requested; the default is off.
    Optional,
    /// The family runs in max mode only; requests must set it.
    Required,
}

impl MaxMode {
    /// The `max_mode` flag a request for this family sends.
    pub const fn request_flag(self) -> bool {
        matches!(self, Self::Required)
    }
}

/// Price per million tokens, in US dollars.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCost {
    /// Input tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Cached input tokens read.
    pub cache_read: f64,
    /// Input tokens written to the cache.
    pub cache_write: f64,
}

impl ModelCost {
    /// A cost table.
    pub const fn new(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Self {
        Self {
            input,
            output,
            cache_read,
            cache_write,
        }
    }
}

/// One model family as a host lists it.
///
/// The `id` is for display and selection only; what goes on the wire is a published slug from
/// [`ModelRow::default_slug`] or [`ModelRow::thinking_levels`] (PROTOCOL-AGENT §2.1).
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRow {
    /// Display id: the family key with Cursor's `cursor-` prefix removed, unless that would
    /// collide with an unprefixed sibling.
    pub id: String,
    /// Human-readable name.
    pub name: String,
    /// Whether the family reasons (has effort variants or Cursor marks it as thinking).
    pub reasoning: bool,
    /// Accepted input kinds; always includes text.
    pub input: Vec<InputKind>,
    /// Context window in tokens.
    pub context_window: u64,
    /// Output budget in tokens.
    pub max_tokens: u64,
    /// Max-mode support; [`MaxMode::request_flag`] is what requests send.
    #[serde(default)]
    pub max_mode: MaxMode,
    /// Thinking level → the published slug of that variant. Levels absent are unsupported.
    #[serde(default)]
    pub thinking_levels: BTreeMap<ThinkingLevel, String>,
    /// The slug sent when no level is chosen: the backend's default non-max variant.
    pub default_slug: String,
    /// Every published slug of the family.
    #[serde(default)]
    pub slugs: Vec<String>,
    /// Price, when known. Cursor's catalog publishes none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<ModelCost>,
}

impl ModelRow {
    /// A text-only row without effort variants, with the default context window and output
    /// budget; set the public fields for anything else.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        default_slug: impl Into<String>,
    ) -> Self {
        let default_slug = default_slug.into();
        Self {
            id: id.into(),
            name: name.into(),
            reasoning: false,
            input: vec![InputKind::Text],
            context_window: DEFAULT_CONTEXT_WINDOW,
            max_tokens: DEFAULT_MAX_TOKENS,
            max_mode: MaxMode::Unsupported,
            thinking_levels: BTreeMap::new(),
            slugs: vec![default_slug.clone()],
            default_slug,
            cost: None,
        }
    }

    /// The slug to send at `level`, or `None` if the family has no variant for it.
    ///
    /// A family without effort variants answers every level with its default slug, and
    /// [`ThinkingLevel::Off`] falls back to the default slug when there is no `none` variant:
    /// there is nothing to turn off. Hosts build their level map (a `thinkingLevelMap`, where
    /// absent means unsupported) from this.
    pub fn level_slug(&self, level: ThinkingLevel) -> Option<&str> {
        if let Some(slug) = self.thinking_levels.get(&level) {
            return Some(slug);
        }
        (level == ThinkingLevel::Off || self.thinking_levels.is_empty())
            .then_some(self.default_slug.as_str())
    }

    /// Whether the family accepts images.
    pub fn supports_images(&self) -> bool {
        self.input.contains(&InputKind::Image)
    }

    /// Whether `slug` is one of this family's published slugs.
    pub fn publishes(&self, slug: &str) -> bool {
        self.default_slug == slug || self.slugs.iter().any(|s| s == slug)
    }

    /// The context window with Max Mode on: 1M for the families whose Max Mode extends it
    /// (PROTOCOL-AGENT §13.7), else the normal window; a family without Max Mode keeps its own.
    pub fn max_mode_context_window(&self) -> u64 {
        if self.max_mode != MaxMode::Unsupported && max_mode_reaches_1m(&self.id) {
            self.context_window.max(MAX_MODE_CONTEXT_WINDOW)
        } else {
            self.context_window
        }
    }

    /// The context window a request with `max_mode` gets.
    pub fn context_window_for(&self, max_mode: bool) -> u64 {
        if max_mode {
            self.max_mode_context_window()
        } else {
            self.context_window
        }
    }

    /// The other id form of `slug` for one retry when Cursor answers `not_found`
    /// (PROTOCOL-AGENT §13.7): a slug with an effort word falls back to the bare family id, a
    /// bare id sent for `level` to that id with the level's effort word. `None` when there is
    /// no other form.
    pub fn alternate_slug(&self, slug: &str, level: Option<ThinkingLevel>) -> Option<String> {
        let parts = split_slug(slug);
        let alternate = match (parts.level, level) {
            (Some(_), _) => parts.family,
            (None, Some(level)) => with_effort_word(slug, level),
            (None, None) => return None,
        };
        (alternate != slug && !alternate.is_empty()).then_some(alternate)
    }
}

/// `slug` with `level`'s effort word before any `-fast` (`grok-4.7-fast` → `grok-4.7-high-fast`).
fn with_effort_word(slug: &str, level: ThinkingLevel) -> String {
    let word = level.slug_word();
    match slug.strip_suffix("-fast").filter(|base| !base.is_empty()) {
        Some(base) => format!("{base}-{word}-fast"),
        None => format!("{slug}-{word}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_family_without_levels_answers_every_level_with_its_default() {
        let row = ModelRow::new("composer-2.5", "Composer 2.5", "composer-2.5");
        for level in ThinkingLevel::ALL {
            assert_eq!(row.level_slug(level), Some("composer-2.5"), "{level}");
        }
        assert!(row.publishes("composer-2.5"));
        assert!(!row.supports_images());
    }

    #[test]
    fn off_falls_back_to_the_default_but_other_missing_levels_do_not() {
        let mut row = ModelRow::new("grok-4.7", "Grok 4.7", "grok-4.7-medium");
        row.thinking_levels
            .insert(ThinkingLevel::Medium, "grok-4.7-medium".into());
        row.thinking_levels
            .insert(ThinkingLevel::High, "grok-4.7-high".into());
        assert_eq!(row.level_slug(ThinkingLevel::Off), Some("grok-4.7-medium"));
        assert_eq!(row.level_slug(ThinkingLevel::High), Some("grok-4.7-high"));
        assert_eq!(row.level_slug(ThinkingLevel::Low), None);
        assert_eq!(row.level_slug(ThinkingLevel::Max), None);
    }

    fn levelled(id: &str, levels: &[(ThinkingLevel, &str)]) -> ModelRow {
        let mut row = ModelRow::new(id, id, levels[0].1);
        for (level, slug) in levels {
            row.thinking_levels.insert(*level, (*slug).into());
            row.slugs.push((*slug).into());
        }
        row
    }

    #[test]
    fn a_suffixed_slug_falls_back_to_the_bare_id_and_a_bare_one_to_the_suffixed_form() {
        let grok = levelled("grok-4.7", &[(ThinkingLevel::High, "grok-4.7-high")]);
        assert_eq!(
            grok.alternate_slug("grok-4.7-high", Some(ThinkingLevel::High)),
            Some("grok-4.7".into())
        );
        let bare = ModelRow::new("grok-4.7", "Grok 4.7", "grok-4.7");
        assert_eq!(
            bare.alternate_slug("grok-4.7", Some(ThinkingLevel::Xhigh)),
            Some("grok-4.7-xhigh".into())
        );
        assert_eq!(
            bare.alternate_slug("grok-4.7-fast", Some(ThinkingLevel::High)),
            Some("grok-4.7-high-fast".into())
        );
        assert_eq!(bare.alternate_slug("grok-4.7", None), None);
        assert_eq!(
            bare.alternate_slug("grok-4.7", Some(ThinkingLevel::Off)),
            Some("grok-4.7-none".into())
        );
    }

    #[test]
    fn max_mode_reaches_one_million_only_where_the_table_says_and_the_family_offers_it() {
        let mut kimi = levelled("kimi-k3", &[(ThinkingLevel::High, "kimi-k3-high")]);
        kimi.context_window = 256_000;
        kimi.max_mode = MaxMode::Optional;
        assert_eq!(kimi.context_window_for(false), 256_000);
        assert_eq!(kimi.context_window_for(true), 1_000_000);

        let mut grok = ModelRow::new("grok-4.7", "Grok 4.7", "grok-4.7");
        grok.context_window = 256_000;
        grok.max_mode = MaxMode::Optional;
        assert_eq!(grok.max_mode_context_window(), 256_000);

        let mut gemini = ModelRow::new("gemini-3-pro", "Gemini 3 Pro", "gemini-3-pro");
        assert_eq!(gemini.max_mode_context_window(), DEFAULT_CONTEXT_WINDOW);
        gemini.max_mode = MaxMode::Required;
        assert_eq!(gemini.max_mode_context_window(), 1_000_000);
    }
}
