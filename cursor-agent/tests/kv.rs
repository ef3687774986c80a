//! KV blobs (PROTOCOL-AGENT §6): served by id, never answered empty, capped without eviction.

mod common;

use common::{Harness, config, conversation, last_error};
use cursor_agent::BlobId;
use cursor_proto::agent::v1::{
    self as w, agent_client_message::Message as Client, agent_server_message::Message as Server,
    kv_server_message::Message as Kv,
};
use cursor_proto::ir::ErrorKind;

fn kv(h: &mut Harness, id: u32, message: Kv) {
    h.server(Server::KvServerMessage(w::KvServerMessage {
        id,
        message: Some(message),
    }));
}

fn get(h: &mut Harness, id: u32, blob: &BlobId) {
    kv(
        h,
        id,
        Kv::GetBlobArgs(w::GetBlobArgs {
            blob_id: blob.as_bytes().to_vec(),
        }),
    );
}

fn set_ack(id: u32) -> Option<Client> {
    Some(Client::KvClientMessage(w::KvClientMessage {
        id,
        message: Some(w::kv_client_message::Message::SetBlobResult(
            w::SetBlobResult { error: None },
        )),
    }))
}

#[test]
fn a_set_blob_is_stored_acknowledged_and_served_back() {
    let mut h = Harness::new();
    let id = BlobId::of(b"server data");
    kv(
        &mut h,
        5,
        Kv::SetBlobArgs(w::SetBlobArgs {
            blob_id: id.as_bytes().to_vec(),
            blob_data: Some(b"server data".to_vec()),
        }),
    );
    assert_eq!(h.take_sent()[0].message, set_ack(5));
    get(&mut h, 6, &id);
    let Some(Client::KvClientMessage(reply)) = &h.sent[0].message else {
        panic!()
    };
    assert_eq!(reply.id, 6);
    assert_eq!(
        reply.message,
        Some(w::kv_client_message::Message::GetBlobResult(
            w::GetBlobResult {
                blob_data: Some(b"server data".to_vec())
            }
        ))
    );
}

#[test]
fn a_set_without_data_is_acknowledged_and_stores_nothing() {
    let mut h = Harness::new();
    let before = h.run.blobs().len();
    let id = BlobId::of(b"elsewhere");
    kv(
        &mut h,
        9,
        Kv::SetBlobArgs(w::SetBlobArgs {
            blob_id: id.as_bytes().to_vec(),
            blob_data: None,
        }),
    );
    assert_eq!(h.take_sent()[0].message, set_ack(9));
    assert_eq!(h.run.blobs().len(), before);
    assert!(!h.run.is_finished());
}

#[test]
fn a_miss_is_never_answered_empty_it_fails_closed() {
    let mut h = Harness::new();
    get(&mut h, 1, &BlobId::of(b"never stored"));
    assert!(h.take_sent().is_empty());
    let events = h.ir_events();
    let error = last_error(&events).expect("miss fails the run");
    assert_eq!(error.kind, ErrorKind::ProtocolDrift);
    assert!(
        error
            .message
            .contains(&BlobId::of(b"never stored").to_hex())
    );
}

#[test]
fn a_miss_on_a_resume_is_reported_as_stale() {
    let mut config = config();
    config.resume = true;
    let mut h = Harness::with(config, conversation());
    get(&mut h, 1, &BlobId::of(b"gone"));
    let events = h.ir_events();
    let error = last_error(&events).expect("stale resume");
    assert_eq!(error.kind, ErrorKind::Local);
    assert!(
        error.message.starts_with("resume is stale"),
        "{}",
        error.message
    );
    assert!(error.next_step.to_string().contains("rebuild"));
}

#[test]
fn a_set_over_the_store_cap_fails_closed() {
    let mut config = config();
    config.limits.blob_store_capacity = 16 * 1024;
    let mut h = Harness::with(config, conversation());
    let data = vec![0u8; 16 * 1024];
    kv(
        &mut h,
        2,
        Kv::SetBlobArgs(w::SetBlobArgs {
            blob_id: BlobId::of(&data).as_bytes().to_vec(),
            blob_data: Some(data),
        }),
    );
    assert!(h.take_sent().is_empty());
    assert_eq!(
        last_error(&h.ir_events()).map(|e| e.kind),
        Some(ErrorKind::Local)
    );
}

#[test]
fn a_malformed_or_unknown_kv_request_is_drift() {
    let mut h = Harness::new();
    kv(
        &mut h,
        1,
        Kv::SetBlobArgs(w::SetBlobArgs {
            blob_id: vec![1, 2, 3],
            blob_data: Some(vec![1]),
        }),
    );
    assert_eq!(
        last_error(&h.ir_events()).map(|e| e.kind),
        Some(ErrorKind::ProtocolDrift)
    );
    let mut h = Harness::new();
    h.server(Server::KvServerMessage(w::KvServerMessage {
        id: 1,
        message: None,
    }));
    assert_eq!(
        last_error(&h.ir_events()).map(|e| e.kind),
        Some(ErrorKind::ProtocolDrift)
    );
}
