//! The patch form of `EventMapper` (what the Node bridge sends) rebuilds exactly the events of
//! the snapshot form: a binding that applies each event's `patch` to one live message and sets
//! the snapshot key to it pushes the same events pi would get from snapshots. Checked on every
//! scripted T-COMPAT sequence and on a long answer, whose patch bytes must stay linear.

use std::path::Path;

use cursor_pi_adapter::compat::{EventMapper, ModelInfo};
use cursor_proto::ir::{Event, StopReason, Usage};
use serde_json::{Map, Value, json};

/// What `examples/pi-extension/index.mjs` does with one patched event.
fn apply(live: &mut Map<String, Value>, mut event: Value) -> Value {
    let patch = event
        .as_object_mut()
        .and_then(|e| e.remove("patch"))
        .expect("every patched event carries a patch");
    for op in patch.as_array().expect("patch is a list") {
        let op = op.as_array().expect("an op is a list");
        let content = |live: &mut Map<String, Value>| {
            live.get_mut("content")
                .and_then(Value::as_array_mut)
                .expect("live content")
                .clone()
        };
        match op[0].as_str().expect("op name") {
            "full" => *live = op[1].as_object().expect("full message").clone(),
            "push" => {
                let mut blocks = content(live);
                blocks.push(op[1].clone());
                live["content"] = Value::Array(blocks);
            }
            "append" => {
                let index = op[1].as_u64().expect("index") as usize;
                let delta = event["delta"].as_str().expect("delta text");
                let block = &mut live["content"][index];
                let field = if block["type"] == "thinking" {
                    "thinking"
                } else {
                    "text"
                };
                let text = format!("{}{delta}", block[field].as_str().expect("block text"));
                block[field] = json!(text);
            }
            "set" => {
                let index = op[1].as_u64().expect("index") as usize;
                live["content"][index] = op[2].clone();
            }
            "clear" => live["content"] = json!([]),
            "fields" => {
                for (key, value) in op[1].as_object().expect("fields") {
                    if value.is_null() {
                        live.remove(key);
                    } else {
                        live.insert(key.clone(), value.clone());
                    }
                }
            }
            other => panic!("unknown patch op {other}"),
        }
    }
    let key = match event["type"].as_str() {
        Some("done") => "message",
        Some("error") => "error",
        _ => "partial",
    };
    event[key] = Value::Object(live.clone());
    event
}

fn both_forms(model: &ModelInfo, timestamp: u64, events: &[Event]) -> (Vec<Value>, Vec<Value>) {
    let mut snapshots = EventMapper::new(model.clone(), timestamp);
    let mut patches = EventMapper::with_patches(model.clone(), timestamp);
    let (mut expected, mut rebuilt) = (Vec::new(), Vec::new());
    let mut live = Map::new();
    for event in events {
        expected.extend(snapshots.map(event.clone()));
        for patched in patches.map(event.clone()) {
            rebuilt.push(apply(&mut live, patched));
        }
    }
    expected.extend(snapshots.finish());
    for patched in patches.finish() {
        rebuilt.push(apply(&mut live, patched));
    }
    (expected, rebuilt)
}

#[test]
fn patches_rebuild_the_snapshots_of_every_scripted_sequence() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/events");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let fixture: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let model = ModelInfo::from_pi_model(&fixture["model"]).unwrap();
        let timestamp = fixture["timestamp"].as_u64().unwrap();
        let events: Vec<Event> = serde_json::from_value(fixture["ir"].clone()).unwrap();
        let (expected, rebuilt) = both_forms(&model, timestamp, &events);
        assert_eq!(rebuilt, expected, "{}", path.display());
        checked += 1;
    }
    assert!(
        checked >= 5,
        "expected the scripted sequences in {}",
        dir.display()
    );
}

#[test]
fn patched_events_stay_small_however_long_the_answer() {
    let model = ModelInfo::new("cursor-agent", "cursor", "m");
    let mut events = vec![Event::ThinkingDelta {
        text: "plan ".into(),
    }];
    let mut text_len = 0;
    for i in 0..5_000 {
        let text = format!("wörd{i} ");
        text_len += text.len();
        events.push(Event::TextDelta { text });
    }
    events.push(Event::Usage(Usage::default()));
    events.push(Event::Done {
        reason: StopReason::Stop,
    });
    let (expected, rebuilt) = both_forms(&model, 1, &events);
    assert_eq!(rebuilt, expected);
    let mut mapper = EventMapper::with_patches(model, 1);
    let (mut bytes, mut count, mut largest_delta) = (0, 0, 0);
    for event in events {
        for patched in mapper.map(event) {
            let size = patched.to_string().len();
            if patched["type"] == "text_delta" {
                largest_delta = largest_delta.max(size);
            }
            bytes += size;
            count += 1;
        }
    }
    // Each delta's text once, the closing `text_end` content once, and a constant per event;
    // a delta late in the answer is as small as the first (a snapshot would be ~60 KB).
    assert!(
        bytes <= 3 * text_len + 100 * count,
        "{bytes} bytes for {text_len} bytes of text in {count} events"
    );
    assert!(largest_delta < 120, "a text_delta of {largest_delta} bytes");
}
