//! The parts of pi's `Model` that an assistant message quotes: identity and price.

use cursor_proto::ir::Usage;
use serde::Deserialize;
use serde_json::{Value, json};

use super::CompatError;

/// Which model answered, as pi names it, and what its tokens cost.
///
/// Build it from the `model` pi passes to `streamSimple` with [`ModelInfo::from_pi_model`], or
/// by hand with [`ModelInfo::new`] and [`ModelInfo::with_cost`].
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct ModelInfo {
    /// The provider's API id (`model.api`), quoted in every assistant message.
    pub api: String,
    /// The provider id (`model.provider`).
    pub provider: String,
    /// The model id (`model.id`).
    pub id: String,
    /// Dollar rates per million tokens.
    #[serde(default)]
    pub cost: CostRates,
}

impl ModelInfo {
    /// A model with zero prices.
    pub fn new(api: impl Into<String>, provider: impl Into<String>, id: impl Into<String>) -> Self {
        Self {
            api: api.into(),
            provider: provider.into(),
            id: id.into(),
            cost: CostRates::default(),
        }
    }

    /// Sets the prices.
    #[must_use]
    pub fn with_cost(mut self, cost: CostRates) -> Self {
        self.cost = cost;
        self
    }

    /// Reads `id`, `api`, `provider` and `cost` (with any `tiers`) from pi's `Model` JSON; every
    /// other field is ignored. The shape is the same in pi 0.99.1, 1.0.3 and 1.6.0.
    ///
    /// # Errors
    ///
    /// [`CompatError::Malformed`] when one of those fields is missing or mistyped.
    pub fn from_pi_model(model: &Value) -> Result<Self, CompatError> {
        Self::deserialize(model).map_err(|error| CompatError::Malformed {
            what: "model",
            detail: error.to_string(),
        })
    }
}

/// Dollar prices per million tokens (`Model.cost` in pi-ai).
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CostRates {
    /// Per million input tokens.
    pub input: f64,
    /// Per million output tokens.
    pub output: f64,
    /// Per million cache-read tokens.
    pub cache_read: f64,
    /// Per million cache-write tokens.
    pub cache_write: f64,
    /// Higher prices for long prompts; the tier with the largest threshold below the prompt applies.
    #[serde(default)]
    pub tiers: Vec<CostTier>,
}

impl CostRates {
    /// Flat rates, no tiers.
    pub fn new(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Self {
        Self {
            input,
            output,
            cache_read,
            cache_write,
            tiers: Vec::new(),
        }
    }

    /// Adds a tier.
    #[must_use]
    pub fn with_tier(mut self, tier: CostTier) -> Self {
        self.tiers.push(tier);
        self
    }

    /// pi's `usage.cost` object for these token counts, computed as pi-ai's `calculateCost`
    /// does (0.99.1–1.6.0), operation for operation so the floating-point results match.
    pub(crate) fn cost_json(&self, usage: &Usage) -> Value {
        let prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
        let mut rates = (self.input, self.output, self.cache_read, self.cache_write);
        let mut threshold: Option<u64> = None;
        for tier in &self.tiers {
            if prompt > tier.input_tokens_above
                && threshold.is_none_or(|t| tier.input_tokens_above > t)
            {
                rates = (tier.input, tier.output, tier.cache_read, tier.cache_write);
                threshold = Some(tier.input_tokens_above);
            }
        }
        let (input_rate, output_rate, read_rate, write_rate) = rates;
        let per_million = |rate: f64, tokens: u64| (rate / 1_000_000.0) * tokens as f64;
        let input = per_million(input_rate, usage.input_tokens);
        let output = per_million(output_rate, usage.output_tokens);
        let cache_read = per_million(read_rate, usage.cache_read_tokens);
        // pi splits 1-hour cache writes (billed at twice the input rate) from short ones; the
        // conversation model reports no 1-hour writes, so all writes are short.
        let cache_write =
            (write_rate * usage.cache_write_tokens as f64 + input_rate * 2.0 * 0.0) / 1_000_000.0;
        let total = input + output + cache_read + cache_write;
        json!({
            "input": input,
            "output": output,
            "cacheRead": cache_read,
            "cacheWrite": cache_write,
            "total": total,
            // pi ≥ 1.0.3 marks catalog estimates; older versions ignore the field.
            "totalFromProvider": false,
        })
    }
}

/// A long-prompt price tier (`Model.cost.tiers[]`, pi ≥ 0.99).
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CostTier {
    /// The tier applies when input + cache-read + cache-write tokens exceed this.
    pub input_tokens_above: u64,
    /// Per million input tokens.
    pub input: f64,
    /// Per million output tokens.
    pub output: f64,
    /// Per million cache-read tokens.
    pub cache_read: f64,
    /// Per million cache-write tokens.
    pub cache_write: f64,
}

impl CostTier {
    /// A tier starting above `input_tokens_above` prompt tokens.
    pub fn new(
        input_tokens_above: u64,
        input: f64,
        output: f64,
        cache_read: f64,
        cache_write: f64,
    ) -> Self {
        Self {
            input_tokens_above,
            input,
            output,
            cache_read,
            cache_write,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64, read: u64, write: u64) -> Usage {
        let mut usage = Usage::default();
        usage.input_tokens = input;
        usage.output_tokens = output;
        usage.cache_read_tokens = read;
        usage.cache_write_tokens = write;
        usage
    }

    #[test]
    fn cost_uses_per_million_rates_like_pi() {
        let rates = CostRates::new(1.0, 2.0, 0.5, 1.5);
        let cost = rates.cost_json(&usage(10, 3, 4, 2));
        // The same expressions evaluated by pi-ai's calculateCost in Node.
        assert_eq!(cost["input"], json!(9.999999999999999e-6));
        assert_eq!(cost["output"], json!(6e-6));
        assert_eq!(cost["cacheRead"], json!(2e-6));
        assert_eq!(cost["cacheWrite"], json!(3e-6));
        assert_eq!(
            cost["total"],
            json!(9.999999999999999e-6 + 6e-6 + 2e-6 + 3e-6)
        );
    }

    #[test]
    fn the_highest_exceeded_tier_sets_every_rate() {
        let rates = CostRates::new(1.0, 1.0, 1.0, 1.0)
            .with_tier(CostTier::new(100, 10.0, 10.0, 10.0, 10.0))
            .with_tier(CostTier::new(50, 5.0, 5.0, 5.0, 5.0));
        assert_eq!(
            rates.cost_json(&usage(40, 1_000_000, 0, 0))["output"],
            json!(1.0)
        );
        assert_eq!(
            rates.cost_json(&usage(60, 1_000_000, 0, 0))["output"],
            json!(5.0)
        );
        assert_eq!(
            rates.cost_json(&usage(60, 1_000_000, 41, 0))["output"],
            json!(10.0)
        );
    }

    #[test]
    fn model_info_reads_pi_model_json_and_rejects_a_missing_id() {
        let model = json!({"id": "m", "name": "M", "api": "a", "provider": "p", "reasoning": false,
            "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75,
                     "tiers": [{"inputTokensAbove": 200000, "input": 6, "output": 22.5, "cacheRead": 0.6, "cacheWrite": 7.5}]}});
        let info = ModelInfo::from_pi_model(&model).unwrap();
        assert_eq!(info.id, "m");
        assert_eq!(
            info.cost.tiers,
            vec![CostTier::new(200_000, 6.0, 22.5, 0.6, 7.5)]
        );
        let error = ModelInfo::from_pi_model(&json!({"api": "a", "provider": "p"})).unwrap_err();
        assert!(
            matches!(error, CompatError::Malformed { what: "model", .. }),
            "{error}"
        );
    }
}
