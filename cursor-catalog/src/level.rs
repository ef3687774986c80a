//! Thinking levels as the host names them, and the effort words Cursor puts in slugs.

use serde::{Deserialize, Serialize};

/// A thinking (reasoning effort) level, named as coding-agent hosts name them (`off|minimal|…|max`).
///
/// Cursor encodes the level in a published slug (`grok-4.7-high`); [`crate::Catalog::slug_for`]
/// maps a level to that slug. The order of the variants is the order of increasing effort.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    /// No reasoning (Cursor's `none`).
    Off,
    /// Minimal reasoning.
    Minimal,
    /// Low effort.
    Low,
    /// Medium effort.
    Medium,
    /// High effort.
    High,
    /// Extra-high effort (Cursor's `xhigh` or `extra-high`).
    Xhigh,
    /// The family's maximum effort (Cursor's `max` suffix).
    Max,
}

impl ThinkingLevel {
    /// Every level, lowest effort first.
    pub const ALL: [Self; 7] = [
        Self::Off,
        Self::Minimal,
        Self::Low,
        Self::Medium,
        Self::High,
        Self::Xhigh,
        Self::Max,
    ];

    /// The host's name for the level (`off`, `minimal`, …, `xhigh`, `max`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Xhigh => "xhigh",
            Self::Max => "max",
        }
    }

    /// Parses the host's name for a level; `None` for anything else.
    pub fn from_host_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|level| level.as_str() == name)
    }

    /// The effort word Cursor writes at the end of a slug for this level (`none`, …, `max`).
    pub const fn slug_word(self) -> &'static str {
        match self {
            Self::Off => "none",
            other => other.as_str(),
        }
    }

    /// Reads an effort word as Cursor writes it at the end of a slug
    /// (`none|minimal|low|medium|high|xhigh|extra-high|max`).
    pub(crate) fn from_slug_word(word: &str) -> Option<Self> {
        match word {
            "none" => Some(Self::Off),
            "minimal" => Some(Self::Minimal),
            "low" => Some(Self::Low),
            "medium" => Some(Self::Medium),
            "high" => Some(Self::High),
            "xhigh" | "extra-high" => Some(Self::Xhigh),
            "max" => Some(Self::Max),
            _ => None,
        }
    }
}

impl std::fmt::Display for ThinkingLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_round_trip() {
        for level in ThinkingLevel::ALL {
            assert_eq!(ThinkingLevel::from_host_name(level.as_str()), Some(level));
            let json = serde_json::to_string(&level).unwrap();
            assert_eq!(json, format!("\"{level}\""));
        }
        assert_eq!(ThinkingLevel::from_host_name("extreme"), None);
    }

    #[test]
    fn cursor_words_map_to_host_levels() {
        assert_eq!(
            ThinkingLevel::from_slug_word("none"),
            Some(ThinkingLevel::Off)
        );
        assert_eq!(
            ThinkingLevel::from_slug_word("extra-high"),
            Some(ThinkingLevel::Xhigh)
        );
        assert_eq!(
            ThinkingLevel::from_slug_word("xhigh"),
            Some(ThinkingLevel::Xhigh)
        );
        assert_eq!(ThinkingLevel::from_slug_word("off"), None);
        assert_eq!(ThinkingLevel::from_slug_word("fast"), None);
    }
}
