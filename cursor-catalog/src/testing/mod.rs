//! A fixture Cursor backend for tests (feature `testing`).
//!
//! [`FixtureBackend`] serves the four discovery RPCs and the two usage RPCs ([`FixtureUsage`]) on the transport's loopback test server
//! from a [`FixtureRoster`], checks that requests carry the CLI identity, counts calls, and can
//! be told to fail one RPC with a Connect error or answer it with bytes that do not decode.
//! [`refused_origin`] names a loopback port nobody listens on, for offline runs.

mod backend;
mod roster;
mod usage;

pub use backend::{FIXTURE_TOKEN, Fault, FixtureBackend, fixture_rpc, refused_origin, usage_body};
pub use roster::{
    FIXTURE_AGENT_ORIGIN, FIXTURE_AGENTN_ORIGIN, FixtureRoster, effort_variants, model, usable,
};
pub use usage::{FIXTURE_PERIOD_END_MS, FIXTURE_PERIOD_START_MS, FixtureUsage};
