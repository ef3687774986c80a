//! One discovery round trip: the three catalog calls at once, then the mapping.

use cursor_proto::agent::v1::{GetDefaultModelForCliRequest, GetUsableModelsRequest};

use crate::{
    error::CatalogError,
    mapping::{Mapped, map_roster},
    rpc::{CatalogRpc, Rpc, available_models_request},
};

/// Issues `AvailableModels`, `GetUsableModels` and `GetDefaultModelForCli` concurrently and maps
/// the answers to a catalog.
///
/// The first failing call (in that order) is the error; a reply that does not decode surfaces as
/// [`cursor_proto::ir::ErrorKind::ProtocolDrift`].
///
/// # Cancel safety
///
/// Cancel-safe: read-only calls; dropping the future drops them and changes nothing.
pub async fn discover<R: CatalogRpc + ?Sized>(rpc: &R) -> Result<Mapped, CatalogError> {
    let (available, usable, default) = futures::join!(
        rpc.available_models(available_models_request()),
        rpc.usable_models(GetUsableModelsRequest::default()),
        rpc.default_model(GetDefaultModelForCliRequest::default()),
    );
    let available = available.map_err(|err| CatalogError::rpc(Rpc::AvailableModels, err))?;
    let usable = usable.map_err(|err| CatalogError::rpc(Rpc::GetUsableModels, err))?;
    let default = default.map_err(|err| CatalogError::rpc(Rpc::GetDefaultModelForCli, err))?;
    map_roster(&available, &usable, &default)
}
