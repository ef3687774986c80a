//! Wire rosters the fixture serves: shaped like what Cursor returns for a real account.

use cursor_proto::{
    agent::v1::{
        GetDefaultModelForCliResponse, GetUsableModelsResponse, ModelDetails,
        requested_model::ModelParameterValue,
    },
    aiserver::v1::{
        AgentUrlConfig, AvailableModel, AvailableModelsResponse, GetServerConfigResponse,
        ModelVariantConfig,
    },
};

/// The agent origin the realistic roster's `GetServerConfig` names for non-privacy accounts.
pub const FIXTURE_AGENTN_ORIGIN: &str = "https://agentn.global.api5.cursor.sh";

/// The agent origin the realistic roster's `GetServerConfig` names for privacy-mode accounts.
pub const FIXTURE_AGENT_ORIGIN: &str = "https://agent.global.api5.cursor.sh";

/// The four answers a fixture backend gives.
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FixtureRoster {
    /// `AvailableModels`.
    pub available: AvailableModelsResponse,
    /// `GetUsableModels`.
    pub usable: GetUsableModelsResponse,
    /// `GetDefaultModelForCli`.
    pub default: GetDefaultModelForCliResponse,
    /// `GetServerConfig`.
    pub server_config: GetServerConfigResponse,
}

impl FixtureRoster {
    /// A roster from its four answers.
    pub fn new(
        available: AvailableModelsResponse,
        usable: GetUsableModelsResponse,
        default: GetDefaultModelForCliResponse,
        server_config: GetServerConfigResponse,
    ) -> Self {
        Self {
            available,
            usable,
            default,
            server_config,
        }
    }

    /// An account that may use nothing (every answer empty).
    pub fn empty() -> Self {
        Self::default()
    }

    /// A realistic account:
    ///
    /// | row id | published slugs | notes |
    /// |---|---|---|
    /// | `default` | `default` | Auto router |
    /// | `composer-2.5` | `composer-2.5` | the account default |
    /// | `composer-2.5-fast` | `composer-2.5-fast` | metadata only under the base row |
    /// | `grok-4.7` | `grok-4.7-{low,medium,high}` | default variant `medium` |
    /// | `grok-4.7-fast` | `grok-4.7-{low,high}-fast` | default variant `high-fast` |
    /// | `grok-4.6` | `cursor-grok-4.6` | `cursor-` prefix, text only |
    /// | `gpt-5.2` | `gpt-5.2-{none,low,medium,high,xhigh}` | default `medium`, max mode optional |
    /// | `claude-4.5-sonnet` | `claude-4.5-sonnet`, `claude-4.5-sonnet-high` | default the bare slug |
    /// | `gpt-5.2-pro` | `gpt-5.2-pro` | max mode only |
    /// | `gemini-3-pro` | `gemini-3-pro` | 1M context |
    ///
    /// AvailableModels also lists `claude-4.5-opus`, which the account may not use.
    pub fn realistic() -> Self {
        let mut grok = model("grok-4.7", "Grok 4.7", true, true, 256_000);
        grok.variants = effort_variants(
            "reasoning_effort",
            &[
                ("grok-4.7-low", "low"),
                ("grok-4.7-medium", "medium"),
                ("grok-4.7-high", "high"),
            ],
            "grok-4.7-medium",
        );
        let mut grok_fast = model("grok-4.7-fast", "Grok 4.7 Fast", true, true, 256_000);
        grok_fast.variants = effort_variants(
            "reasoning_effort",
            &[("grok-4.7-low-fast", "low"), ("grok-4.7-high-fast", "high")],
            "grok-4.7-high-fast",
        );
        let mut gpt = model("gpt-5.2", "GPT-5.2", true, true, 272_000);
        gpt.supports_max_mode = Some(true);
        gpt.supports_non_max_mode = Some(true);
        gpt.context_token_limit_for_max_mode = Some(1_000_000);
        gpt.variants = effort_variants(
            "reasoning",
            &[
                ("gpt-5.2-none", "none"),
                ("gpt-5.2-low", "low"),
                ("gpt-5.2-medium", "medium"),
                ("gpt-5.2-high", "high"),
                ("gpt-5.2-xhigh", "xhigh"),
            ],
            "gpt-5.2-medium",
        );
        let mut sonnet = model(
            "claude-4.5-sonnet",
            "Claude 4.5 Sonnet",
            true,
            true,
            200_000,
        );
        sonnet.supports_max_mode = Some(true);
        sonnet.supports_non_max_mode = Some(true);
        sonnet.context_token_limit_for_max_mode = Some(1_000_000);
        sonnet.variants = effort_variants(
            "effort",
            &[
                ("claude-4.5-sonnet", "medium"),
                ("claude-4.5-sonnet-high", "high"),
            ],
            "claude-4.5-sonnet",
        );
        let mut pro = model("gpt-5.2-pro", "GPT-5.2 Pro", true, true, 272_000);
        pro.supports_max_mode = Some(true);
        pro.supports_non_max_mode = Some(false);
        pro.context_token_limit_for_max_mode = Some(400_000);
        let mut grok_old = model("cursor-grok-4.6", "Grok 4.6", false, true, 256_000);
        grok_old.legacy_slugs = vec!["grok-4.6".to_owned()];

        let available = AvailableModelsResponse {
            model_names: Vec::new(),
            models: vec![
                model("default", "Auto", true, false, 200_000),
                model("composer-2.5", "Composer 2.5", true, true, 200_000),
                grok,
                grok_fast,
                grok_old,
                gpt,
                sonnet,
                pro,
                model("gemini-3-pro", "Gemini 3 Pro", true, true, 1_000_000),
                model("claude-4.5-opus", "Claude 4.5 Opus", true, true, 200_000),
            ],
            use_model_parameters: true,
        };
        let usable = GetUsableModelsResponse {
            models: vec![
                usable("default", "Auto", None),
                usable("composer-2.5", "Composer 2.5", None),
                usable("composer-2.5-fast", "Composer 2.5 Fast", None),
                usable("grok-4.7-low", "Grok 4.7 Low", None),
                usable("grok-4.7-medium", "Grok 4.7", None),
                usable("grok-4.7-high", "Grok 4.7 High", None),
                usable("grok-4.7-low-fast", "Grok 4.7 Low Fast", None),
                usable("grok-4.7-high-fast", "Grok 4.7 High Fast", None),
                usable("cursor-grok-4.6", "Grok 4.6", None),
                usable("gpt-5.2-none", "GPT-5.2 None", None),
                usable("gpt-5.2-low", "GPT-5.2 Low", None),
                usable("gpt-5.2-medium", "GPT-5.2", None),
                usable("gpt-5.2-high", "GPT-5.2 High", None),
                usable("gpt-5.2-xhigh", "GPT-5.2 Extra High", None),
                usable("claude-4.5-sonnet", "Claude 4.5 Sonnet", None),
                usable("claude-4.5-sonnet-high", "Claude 4.5 Sonnet High", None),
                usable("gpt-5.2-pro", "GPT-5.2 Pro", Some(true)),
                usable("gemini-3-pro", "Gemini 3 Pro", None),
            ],
        };
        let default = GetDefaultModelForCliResponse {
            model: Some(usable_details("composer-2.5", "Composer 2.5")),
        };
        let server_config = GetServerConfigResponse {
            config_version: "4f0c5d2e-8f7a-4c1b-9a53-2a9e0d7c1b11".to_owned(),
            use_nlb_for_nal: true,
            agent_url_config: Some(AgentUrlConfig {
                agent_url: FIXTURE_AGENT_ORIGIN.to_owned(),
                agentn_url: FIXTURE_AGENTN_ORIGIN.to_owned(),
            }),
        };
        Self {
            available,
            usable,
            default,
            server_config,
        }
    }
}

/// A catalog row with the fields discovery reads.
pub fn model(
    name: &str,
    display: &str,
    images: bool,
    thinking: bool,
    context: i32,
) -> AvailableModel {
    AvailableModel {
        name: name.to_owned(),
        default_on: true,
        supports_agent: Some(true),
        supports_thinking: Some(thinking),
        supports_images: Some(images),
        supports_max_mode: Some(false),
        context_token_limit: Some(context),
        client_display_name: Some(display.to_owned()),
        server_model_name: Some(name.to_owned()),
        supports_non_max_mode: Some(true),
        ..AvailableModel::default()
    }
}

/// Effort variants `(slug, value)` of parameter `parameter`, `default_slug` marked as the
/// default non-max variant.
pub fn effort_variants(
    parameter: &str,
    variants: &[(&str, &str)],
    default_slug: &str,
) -> Vec<ModelVariantConfig> {
    variants
        .iter()
        .map(|(slug, value)| ModelVariantConfig {
            parameter_values: vec![ModelParameterValue {
                id: parameter.to_owned(),
                value: (*value).to_owned(),
            }],
            display_name: (*value).to_owned(),
            is_default_non_max_config: Some(*slug == default_slug),
            legacy_slug: Some((*slug).to_owned()),
            ..ModelVariantConfig::default()
        })
        .collect()
}

/// A usable slug.
pub fn usable(slug: &str, display: &str, max_mode: Option<bool>) -> ModelDetails {
    ModelDetails {
        max_mode,
        ..usable_details(slug, display)
    }
}

fn usable_details(slug: &str, display: &str) -> ModelDetails {
    ModelDetails {
        model_id: slug.to_owned(),
        display_model_id: slug.to_owned(),
        display_name: display.to_owned(),
        display_name_short: display.to_owned(),
        ..ModelDetails::default()
    }
}
