//! Entry points of the fuzz targets, public so the corpus can be replayed in ordinary tests.
//! Not part of the stable API.

use crate::Snapshot;

/// Fuzz target `catalog_snapshot`: parses `data` as a snapshot file. Must never panic; a
/// snapshot that parses writes back to JSON that parses to the same snapshot.
pub fn catalog_snapshot(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(snapshot) = Snapshot::from_json(text) {
        let json = snapshot
            .to_json()
            .unwrap_or_else(|e| panic!("a parsed snapshot does not serialize: {e}"));
        let again = Snapshot::from_json(&json)
            .unwrap_or_else(|e| panic!("a written snapshot does not parse: {e}"));
        assert_eq!(again, snapshot, "a snapshot does not round-trip");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_snapshot_round_trips_and_garbage_does_not_panic() {
        let snapshot = Snapshot::new(
            crate::static_table::static_catalog(),
            1_700_000_000_000,
            Some("https://agentn.us.api5.cursor.sh".into()),
        );
        let json = snapshot.to_json().unwrap();
        catalog_snapshot(json.as_bytes());
        for garbage in [&b"{"[..], b"\xff", br#"{"version":1}"#, b"[]", b""] {
            catalog_snapshot(garbage);
        }
    }
}
