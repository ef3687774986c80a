//! # cursor-inference (layer L4a)
//!
//! The `aiserver.v1.InferenceService/RunInference` session: request assembly and event mapping, with no exec branch.
//!
//! This crate owns the `RunInference` session: request assembly from the host-neutral `ir`, and mapping of the server's stream back to `ir` events. It has no exec branch at all.
#![cfg_attr(docsrs, feature(doc_cfg))]
