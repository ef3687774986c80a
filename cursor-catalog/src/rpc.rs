//! The four discovery calls, behind a trait so the logic runs against fakes as well as the
//! transport client.

use async_trait::async_trait;
use cursor_proto::{
    agent::v1::{
        GetDefaultModelForCliRequest, GetDefaultModelForCliResponse, GetUsableModelsRequest,
        GetUsableModelsResponse,
    },
    aiserver::v1::{
        AvailableModelsRequest, AvailableModelsResponse, GetServerConfigRequest,
        GetServerConfigResponse,
    },
};
use cursor_transport::{
    AccessToken, CallKind, CliIdentity, Client, CursorError, Origin, RequestHeaders, RequestId,
};

/// One of the discovery RPCs (docs/PROTOCOL.md §5, §7).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rpc {
    /// `aiserver.v1.AiService/AvailableModels`: catalog metadata and variants.
    AvailableModels,
    /// `aiserver.v1.AiService/GetUsableModels`: the slugs this account may run.
    GetUsableModels,
    /// `aiserver.v1.AiService/GetDefaultModelForCli`: the account's default model.
    GetDefaultModelForCli,
    /// `aiserver.v1.ServerConfigService/GetServerConfig`: the agent host.
    GetServerConfig,
}

impl Rpc {
    /// Every discovery RPC.
    pub const ALL: [Self; 4] = [
        Self::AvailableModels,
        Self::GetUsableModels,
        Self::GetDefaultModelForCli,
        Self::GetServerConfig,
    ];

    /// The method name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::AvailableModels => "AvailableModels",
            Self::GetUsableModels => "GetUsableModels",
            Self::GetDefaultModelForCli => "GetDefaultModelForCli",
            Self::GetServerConfig => "GetServerConfig",
        }
    }

    /// The HTTP path on `api2.cursor.sh`.
    pub const fn path(self) -> &'static str {
        match self {
            Self::AvailableModels => "/aiserver.v1.AiService/AvailableModels",
            Self::GetUsableModels => "/aiserver.v1.AiService/GetUsableModels",
            Self::GetDefaultModelForCli => "/aiserver.v1.AiService/GetDefaultModelForCli",
            Self::GetServerConfig => "/aiserver.v1.ServerConfigService/GetServerConfig",
        }
    }

    /// The RPC a request path names, as a server sees it: the `aiserver.v1` paths, plus the
    /// two model calls `agent.v1.AgentService` serves under its own name.
    pub fn from_path(path: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|rpc| rpc.path() == path)
            .or(match path {
                "/agent.v1.AgentService/GetUsableModels" => Some(Self::GetUsableModels),
                "/agent.v1.AgentService/GetDefaultModelForCli" => Some(Self::GetDefaultModelForCli),
                _ => None,
            })
    }
}

impl std::fmt::Display for Rpc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The request every catalog fetch sends: variants as parameters, plain-text tooltips
/// (docs/PROTOCOL.md §5.1; encodes as `28 01 38 01`).
pub fn available_models_request() -> AvailableModelsRequest {
    AvailableModelsRequest {
        use_model_parameters: Some(true),
        do_not_use_markdown: Some(true),
        ..AvailableModelsRequest::default()
    }
}

/// The discovery calls as decoded messages or classified transport failures.
///
/// [`TransportCatalogRpc`] is the real implementation; tests may supply their own.
#[async_trait]
pub trait CatalogRpc: Send + Sync {
    /// `AvailableModels`.
    async fn available_models(
        &self,
        request: AvailableModelsRequest,
    ) -> Result<AvailableModelsResponse, CursorError>;
    /// `GetUsableModels`.
    async fn usable_models(
        &self,
        request: GetUsableModelsRequest,
    ) -> Result<GetUsableModelsResponse, CursorError>;
    /// `GetDefaultModelForCli`.
    async fn default_model(
        &self,
        request: GetDefaultModelForCliRequest,
    ) -> Result<GetDefaultModelForCliResponse, CursorError>;
    /// `GetServerConfig`.
    async fn server_config(
        &self,
        request: GetServerConfigRequest,
    ) -> Result<GetServerConfigResponse, CursorError>;
}

/// [`CatalogRpc`] over the transport client: unary `application/proto` calls with the CLI
/// identity (docs/PROTOCOL.md §3.1) to one allowlisted origin.
#[derive(Clone, Debug)]
pub struct TransportCatalogRpc {
    client: Client,
    origin: Origin,
    token: AccessToken,
    identity: CliIdentity,
}

impl TransportCatalogRpc {
    /// Calls `origin` (normally [`Origin::api2`]) with `token` and the CLI `identity`.
    pub fn new(client: Client, origin: Origin, token: AccessToken, identity: CliIdentity) -> Self {
        Self {
            client,
            origin,
            token,
            identity,
        }
    }

    /// The origin the calls go to.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    async fn call<Req, Resp>(&self, rpc: Rpc, request: &Req) -> Result<Resp, CursorError>
    where
        Req: prost::Message,
        Resp: prost::Message + Default,
    {
        self.call_path(rpc.path(), request).await
    }

    /// One unary call to `path` with this client's token and identity.
    pub(crate) async fn call_path<Req, Resp>(
        &self,
        path: &str,
        request: &Req,
    ) -> Result<Resp, CursorError>
    where
        Req: prost::Message,
        Resp: prost::Message + Default,
    {
        let request_id = RequestId::generate()?;
        let headers =
            RequestHeaders::cli(&self.token, &self.identity, CallKind::Unary, &request_id)?;
        self.client
            .unary_message(&self.origin, path, headers, request)
            .await
    }
}

#[async_trait]
impl CatalogRpc for TransportCatalogRpc {
    async fn available_models(
        &self,
        request: AvailableModelsRequest,
    ) -> Result<AvailableModelsResponse, CursorError> {
        self.call(Rpc::AvailableModels, &request).await
    }

    async fn usable_models(
        &self,
        request: GetUsableModelsRequest,
    ) -> Result<GetUsableModelsResponse, CursorError> {
        self.call(Rpc::GetUsableModels, &request).await
    }

    async fn default_model(
        &self,
        request: GetDefaultModelForCliRequest,
    ) -> Result<GetDefaultModelForCliResponse, CursorError> {
        self.call(Rpc::GetDefaultModelForCli, &request).await
    }

    async fn server_config(
        &self,
        request: GetServerConfigRequest,
    ) -> Result<GetServerConfigResponse, CursorError> {
        self.call(Rpc::GetServerConfig, &request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message as _;

    #[test]
    fn paths_map_back_to_their_rpc_including_the_agent_service_aliases() {
        for rpc in Rpc::ALL {
            assert_eq!(Rpc::from_path(rpc.path()), Some(rpc));
        }
        assert_eq!(
            Rpc::from_path("/agent.v1.AgentService/GetUsableModels"),
            Some(Rpc::GetUsableModels)
        );
        assert_eq!(Rpc::from_path("/agent.v1.AgentService/Run"), None);
    }

    #[test]
    fn available_models_request_sets_parameters_and_plain_text() {
        assert_eq!(
            available_models_request().encode_to_vec(),
            [0x28, 0x01, 0x38, 0x01]
        );
    }

    #[test]
    fn paths_are_distinct_and_absolute() {
        let paths: std::collections::HashSet<_> = Rpc::ALL.iter().map(|r| r.path()).collect();
        assert_eq!(paths.len(), Rpc::ALL.len());
        for rpc in Rpc::ALL {
            assert!(rpc.path().starts_with("/aiserver.v1."), "{rpc}");
            assert!(rpc.path().ends_with(rpc.name()), "{rpc}");
        }
    }
}

/// One of the usage RPCs.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UsageRpc {
    /// `aiserver.v1.DashboardService/GetCurrentPeriodUsage`: the period's spend and limits.
    GetCurrentPeriodUsage,
    /// `aiserver.v1.DashboardService/GetPlanInfo`: the plan's name and price.
    GetPlanInfo,
}

impl UsageRpc {
    /// Every usage RPC.
    pub const ALL: [Self; 2] = [Self::GetCurrentPeriodUsage, Self::GetPlanInfo];

    /// The method name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::GetCurrentPeriodUsage => "GetCurrentPeriodUsage",
            Self::GetPlanInfo => "GetPlanInfo",
        }
    }

    /// The HTTP path on `api2.cursor.sh`.
    pub const fn path(self) -> &'static str {
        match self {
            Self::GetCurrentPeriodUsage => "/aiserver.v1.DashboardService/GetCurrentPeriodUsage",
            Self::GetPlanInfo => "/aiserver.v1.DashboardService/GetPlanInfo",
        }
    }

    /// The RPC a request path names, as a server sees it.
    pub fn from_path(path: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|rpc| rpc.path() == path)
    }
}

impl std::fmt::Display for UsageRpc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
