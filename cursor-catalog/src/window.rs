//! Which families Max Mode extends to a 1M-token context window.
//!
//! `GetUsableModels` carries no window and Max Mode does not enlarge every family: public
//! clients found 1M for Gemini, Sonnet 5, Opus 5, Fable 5, GPT-5.6 Sol and Kimi K3, and no
//! change for Grok, Composer, GPT-5.6 Luna and Terra (the public reports are in PROTOCOL-AGENT
//! §13.7).

/// The window Max Mode gives the families that reach it (Gemini, Sonnet 5, Opus 5, Fable 5,
/// GPT-5.6 Sol and Kimi K3; see `ModelRow::max_mode_context_window`).
pub const MAX_MODE_CONTEXT_WINDOW: u64 = 1_000_000;

/// Each entry lists the id tokens (split on `-`) a row id must all contain.
const ONE_MILLION: &[&[&str]] = &[
    &["gemini"],
    &["sonnet", "5"],
    &["opus", "5"],
    &["fable", "5"],
    &["gpt", "5.6", "sol"],
    &["kimi", "k3"],
];

/// Whether Max Mode extends the family `row_id` to [`MAX_MODE_CONTEXT_WINDOW`].
pub(crate) fn max_mode_reaches_1m(row_id: &str) -> bool {
    let id = row_id.to_ascii_lowercase();
    let tokens: Vec<&str> = id.split('-').collect();
    ONE_MILLION
        .iter()
        .any(|needed| needed.iter().all(|token| tokens.contains(token)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reported_families_reach_one_million_in_max_mode() {
        for id in [
            "gemini-3-pro",
            "gemini-3.5-flash",
            "claude-sonnet-5",
            "claude-5-sonnet",
            "claude-opus-5",
            "fable-5",
            "gpt-5.6-sol",
            "kimi-k3",
        ] {
            assert!(max_mode_reaches_1m(id), "{id}");
        }
    }

    #[test]
    fn grok_composer_luna_terra_and_older_claude_keep_their_window() {
        for id in [
            "grok-4.7",
            "grok-4.7-fast",
            "composer-2.5",
            "gpt-5.6-luna",
            "gpt-5.6-terra",
            "claude-4.5-sonnet",
            "claude-4.5-opus",
            "kimi-k2",
        ] {
            assert!(!max_mode_reaches_1m(id), "{id}");
        }
    }
}
