//! Grouping published slugs into families by their trailing effort word.
//!
//! A slug ends in an optional effort word and an optional `-fast`
//! (`^(.*)-(none|minimal|low|medium|high|xhigh|extra-high|max)(-fast)?$`, docs/PROTOCOL.md §5.1).
//! Slugs sharing the base and the fast-ness are one family: `grok-4.7-low` and `grok-4.7-high`
//! are `grok-4.7`; `grok-4.7-high-fast` and a bare `grok-4.7-fast` are `grok-4.7-fast`.

use crate::level::ThinkingLevel;

const FAST_SUFFIX: &str = "-fast";

/// Where one published slug belongs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SlugParts {
    /// The family key: the slug without its effort word (`-fast` kept).
    pub(crate) family: String,
    /// The base without `-fast`, for matching catalog rows named after the plain model.
    pub(crate) base: String,
    /// The effort level the slug encodes, if any.
    pub(crate) level: Option<ThinkingLevel>,
}

/// Splits a slug into family, base and level.
pub(crate) fn split_slug(slug: &str) -> SlugParts {
    let (rest, fast) = match slug.strip_suffix(FAST_SUFFIX) {
        Some(rest) if !rest.is_empty() => (rest, true),
        _ => (slug, false),
    };
    let with_fast = |base: &str| {
        if fast {
            format!("{base}{FAST_SUFFIX}")
        } else {
            base.to_owned()
        }
    };
    if let Some((base, level)) = split_effort(rest) {
        return SlugParts {
            family: with_fast(base),
            base: base.to_owned(),
            level: Some(level),
        };
    }
    SlugParts {
        family: slug.to_owned(),
        base: rest.to_owned(),
        level: None,
    }
}

/// `base-<effort>` → (`base`, level); `extra-high` holds a hyphen, so it is tried first.
fn split_effort(rest: &str) -> Option<(&str, ThinkingLevel)> {
    if let Some(base) = rest.strip_suffix("-extra-high").filter(|b| !b.is_empty()) {
        return Some((base, ThinkingLevel::Xhigh));
    }
    let (base, word) = rest.rsplit_once('-')?;
    if base.is_empty() {
        return None;
    }
    ThinkingLevel::from_slug_word(word).map(|level| (base, level))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(slug: &str) -> (String, Option<ThinkingLevel>) {
        let p = split_slug(slug);
        (p.family, p.level)
    }

    #[test]
    fn effort_words_are_split_off() {
        assert_eq!(
            parts("grok-4.7-high"),
            ("grok-4.7".into(), Some(ThinkingLevel::High))
        );
        assert_eq!(
            parts("gpt-5.2-none"),
            ("gpt-5.2".into(), Some(ThinkingLevel::Off))
        );
        assert_eq!(
            parts("gpt-5.2-extra-high"),
            ("gpt-5.2".into(), Some(ThinkingLevel::Xhigh))
        );
        assert_eq!(
            parts("gpt-5.2-xhigh"),
            ("gpt-5.2".into(), Some(ThinkingLevel::Xhigh))
        );
        assert_eq!(
            parts("gpt-5.1-codex-max"),
            ("gpt-5.1-codex".into(), Some(ThinkingLevel::Max))
        );
    }

    #[test]
    fn fast_variants_form_their_own_family() {
        assert_eq!(
            parts("grok-4.7-high-fast"),
            ("grok-4.7-fast".into(), Some(ThinkingLevel::High))
        );
        assert_eq!(parts("grok-4.7-fast"), ("grok-4.7-fast".into(), None));
        assert_eq!(split_slug("grok-4.7-high-fast").base, "grok-4.7");
        assert_eq!(split_slug("grok-4.7-fast").base, "grok-4.7");
    }

    #[test]
    fn plain_and_odd_slugs_are_their_own_family() {
        assert_eq!(parts("composer-2.5"), ("composer-2.5".into(), None));
        assert_eq!(parts("default"), ("default".into(), None));
        assert_eq!(parts("high"), ("high".into(), None));
        assert_eq!(parts("-high"), ("-high".into(), None));
        assert_eq!(parts("-fast"), ("-fast".into(), None));
        assert_eq!(
            parts("extra-high"),
            ("extra".into(), Some(ThinkingLevel::High))
        );
        assert_eq!(parts(""), ("".into(), None));
    }
}
