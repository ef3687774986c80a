//! The inference channel: pi turns over cursor-inference's driver
//! (`aiserver.v1.InferenceService/RunInference`), chosen only by
//! `CURSOR_PROVIDER_CHANNEL=inference`.
//!
//! Each pi turn is one RunInference stream with the whole transcript: RunInference keeps no
//! state a later turn could resume, and it has no exec branch. A tool call ends the turn with
//! `toolUse`; pi runs the tool and its next `streamSimple` call carries the result as a TOOL
//! message in a new stream. Nothing is kept between turns, so there are no sessions here.
//!
//! The call presents the IDE identity (RunInference refuses the CLI one): this machine's ids
//! from `cursor-identity` for the checksum, and a random client key kept for the life of the
//! process. A failure ends the turn with its classified error; it is never retried on the
//! agent channel. One exception, as on the agent channel: a call refused with 401 before
//! anything streamed is answered by one token refresh (the stored refresh token, or a new
//! exchange of a user API key from `CURSOR_API_KEY`) and replayed once.
//!
//! With `CURSOR_PROVIDER_DEBUG=1` every turn writes one debug record (`event: inferenceTurn`):
//! the slug asked for, the model `run_ready` resolved (or `null` when the server named none,
//! which is tolerated) and how the turn ended; never content.

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use cursor_agent::session::{DebugSink, TokenSource as _};
use cursor_catalog::{Catalog, CatalogStore};
use cursor_inference::InferenceConfig;
use cursor_inference::driver;
use cursor_proto::ir::{Classify as _, ErrorInfo, ErrorKind, Event, NextStep};
use cursor_transport::headers::random_client_key;
use cursor_transport::{AccessToken, Client, IdeIdentity, Origin, RequestHeaders, RequestId};
use futures::stream::{self, BoxStream, StreamExt};

use super::agent::debug_sink;
use super::auth::PiTokens;
use super::{
    Channel, ChannelKind, CursorOAuth, PiEnv, Spawner, Turn, api_origin_from_env, auth_config,
};

/// The inference channel over cursor-inference's driver.
#[derive(Clone)]
pub struct InferenceChannel {
    client: Client,
    origin: Origin,
    identity: IdeIdentity,
    catalog: Catalog,
    spawn: Spawner,
    debug: Option<Arc<dyn DebugSink>>,
    oauth: Option<CursorOAuth>,
}

impl fmt::Debug for InferenceChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InferenceChannel")
            .field("origin", &self.origin)
            .field("client_version", &self.identity.client_version)
            .finish_non_exhaustive()
    }
}

impl InferenceChannel {
    /// A channel calling `origin` through `client` with the IDE `identity`, choosing slugs
    /// from `catalog`, and running driver tasks with `spawn`.
    pub fn new(
        client: Client,
        origin: Origin,
        identity: IdeIdentity,
        catalog: Catalog,
        spawn: Spawner,
    ) -> Self {
        Self {
            client,
            origin,
            identity,
            catalog,
            spawn,
            debug: None,
            oauth: None,
        }
    }

    /// Exchanges user API keys, and answers a call refused with 401 by one refresh and one
    /// replay, through `oauth`.
    #[must_use]
    pub fn with_token_refresh(mut self, oauth: CursorOAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// Writes one debug record per turn to `sink` (`CURSOR_PROVIDER_DEBUG=1`).
    #[must_use]
    pub fn with_debug(mut self, sink: Arc<dyn DebugSink>) -> Self {
        self.debug = Some(sink);
        self
    }

    /// The channel for this process: the API origin ([`api_origin_from_env`]), this machine's
    /// IDE identity, and `store`'s catalog.
    ///
    /// # Errors
    ///
    /// An API origin off the allowlist, or a host whose machine id cannot be read (the
    /// checksum RunInference requires is made from it).
    pub fn from_env(
        client: Client,
        store: &CatalogStore,
        spawn: Spawner,
    ) -> Result<Self, ErrorInfo> {
        let origin = api_origin_from_env()?;
        let host = cursor_identity::host_identity().map_err(|error| {
            ErrorInfo::new(
                ErrorKind::Local,
                format!("the inference channel needs this machine's id: {error}"),
                NextStep::fix_config(
                    "unset CURSOR_PROVIDER_CHANNEL to use the agent channel, which does not need it",
                ),
            )
        })?;
        let mut identity = IdeIdentity::new(host.machine_id.clone(), process_client_key()?);
        identity.mac_machine_id = host.mac_machine_id.clone();
        let oauth = CursorOAuth::with_config(
            Arc::new(client.clone()),
            Arc::new(cursor_transport::TokioClock),
            auth_config(&origin),
        );
        let channel = Self::new(client, origin, identity, store.catalog().clone(), spawn)
            .with_token_refresh(oauth);
        let env = PiEnv::from_env();
        Ok(match debug_sink(&env) {
            Some(sink) => channel.with_debug(sink),
            None => channel,
        })
    }

    /// The turn: its credential resolved (a user API key exchanged), its call started, and on
    /// a 401 before anything streamed, one refresh and one replay.
    async fn run(self, turn: Turn) -> BoxStream<'static, Event> {
        let fail = |info: ErrorInfo| stream::iter([Event::Error(info)]).boxed();
        let tokens = PiTokens::of(&turn.options, self.oauth.clone());
        let token = match tokens.access_token().await {
            Ok(token) => token,
            Err(info) => return fail(info),
        };
        let mut events = match self.start(&turn, &token) {
            Ok(events) => events,
            Err(info) => return fail(info),
        };
        let first = events.next().await;
        let refused = matches!(&first, Some(Event::Error(info)) if info.http_status == Some(401));
        // Nothing to refresh with: the refusal stands.
        if !refused || !tokens.can_refresh() {
            return stream::iter(first).chain(events).boxed();
        }
        let fresh = tokens.refresh(&token).await;
        match fresh.and_then(|fresh| self.start(&turn, &fresh)) {
            Ok(replay) => replay.boxed(),
            Err(mut info) => {
                info.message = format!(
                    "Cursor refused the access token and refreshing it failed: {}",
                    info.message
                );
                fail(info)
            }
        }
    }

    /// Builds the turn's config and headers and starts its driver task.
    fn start(&self, turn: &Turn, token: &str) -> Result<driver::InferenceEvents, ErrorInfo> {
        // The bare slug: an effort variant is not a model id RunInference knows.
        let slug = self
            .catalog
            .slug_for(&turn.model.id, None)
            .map_err(ErrorInfo::from)?
            .to_owned();
        // Max mode when the model runs in it only, as the agent channel sends it.
        let max_mode = self
            .catalog
            .row(&turn.model.id)
            .is_some_and(|row| row.max_mode.request_flag());
        let mut config = InferenceConfig::new(slug)
            .map_err(|error| error.to_info())?
            .with_max_mode(max_mode);
        if let Some(max) = turn.options.max_tokens {
            config = config.with_max_tokens(u32::try_from(max).unwrap_or(u32::MAX));
        }
        let request_id = RequestId::generate().map_err(ErrorInfo::from)?;
        let headers = RequestHeaders::ide(
            &AccessToken::new(token),
            &self.identity,
            &request_id,
            unix_time_ms(),
        )
        .map_err(ErrorInfo::from)?;
        let (events, task) = driver::open(
            self.client.clone(),
            self.origin.clone(),
            headers,
            config,
            &turn.conversation,
        );
        let debug = self.debug.clone();
        (self.spawn)(Box::pin(async move {
            // The outcome reaches pi through the events; the run only feeds the debug record.
            let run = task.await;
            if let Some(sink) = debug {
                sink.record(&turn_record(&run));
            }
        }));
        Ok(events)
    }
}

impl Channel for InferenceChannel {
    fn kind(&self) -> ChannelKind {
        ChannelKind::Inference
    }

    fn open(&self, turn: Turn) -> BoxStream<'static, Event> {
        stream::once(self.clone().run(turn)).flatten().boxed()
    }
}

/// The debug record of a finished turn: labels only.
fn turn_record(run: &cursor_inference::InferenceRun) -> serde_json::Value {
    serde_json::json!({
        "event": "inferenceTurn",
        "requestedModel": run.config().model_id,
        // `null`: run_ready named no model (tolerated), or never arrived.
        "resolvedModel": run.resolved_model(),
        "failed": run.failure().map(|error| error.kind()),
    })
}

/// The `x-client-key` of this process: random, made once, never derived from a token.
fn process_client_key() -> Result<String, ErrorInfo> {
    static KEY: OnceLock<String> = OnceLock::new();
    if let Some(key) = KEY.get() {
        return Ok(key.clone());
    }
    let key = random_client_key().map_err(ErrorInfo::from)?;
    Ok(KEY.get_or_init(|| key).clone())
}

fn unix_time_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}
