//! The Node-API binding (napi-rs) that the pi extension's JS entry loads.
//!
//! Exports, as JS sees them (every JSON value travels as a string):
//!
//! | Export | What |
//! |---|---|
//! | `providerInfo(): string` | `{id, api, channel, testedPiVersions, version}` |
//! | `listModels(persistedCatalog?: string): string` | `{models, warnings}`: pi `ProviderModelConfig`s |
//! | `refreshCatalog(accessToken, persistedCatalog?, force, onDone): StreamHandle` | `onDone({ok: {models, snapshot, source, warnings}})` |
//! | `streamSimple(model, context, options, onEvents): StreamHandle` | one turn; `onEvents(eventsJson)` per burst of pi events |
//! | `login(onAuth, onDone): StreamHandle` | `onAuth(url)`, then `onDone({ok: credentials} \| {error})` |
//! | `refreshToken(credentials, onDone): StreamHandle` | `onDone({ok: credentials} \| {error})` |
//! | `getApiKey(credentials): string` | the access token, or throws the auth error |
//! | `doctor(credentials?, persistedCatalog?, probeNetwork, onDone): StreamHandle` | `/cursor-doctor`: `onDone({ok: {report, text, level}})` |
//! | `usage(credentials?, onDone): StreamHandle` | `/cursor-usage`: `onDone({ok: {usage, text}} \| {error})` |
//! | `StreamHandle.abort()` | stops the call; a stream then ends with an `aborted` error |
//!
//! Work runs on napi-rs' tokio runtime (`napi::bindgen_prelude::spawn`), never on the JS
//! thread; results come back through thread-safe functions, which keep Node alive until the
//! call ends. A panic is caught at this boundary and becomes an `error` event or result: it
//! never unwinds into Node.
//!
//! `streamSimple`'s `options` is `{sessionId, reasoning, apiKey, maxTokens}` picked from pi's
//! options by the JS entry; `onEvents` receives a JSON array of pi `AssistantMessageEvent`
//! objects, each with a `patch` the JS entry applies to its one live message (O(1) per event,
//! see `EventMapper::with_patches`); an event without `patch` carries a snapshot.
// napi-rs' `#[napi]` macros expand to unsafe FFI glue (module registration and value
// conversion), so this module alone allows `unsafe_code`; nothing here writes an unsafe block.
#![allow(unsafe_code)]

mod auth;
mod batch;
mod catalog;
mod doctor;
mod state;
mod stream;
mod task;
mod usage;

pub use auth::{get_api_key, login, refresh_token};
pub use catalog::{list_models, provider_info, refresh_catalog};
pub use doctor::doctor;
pub use stream::stream_simple;
pub use task::StreamHandle;
pub use usage::usage;
