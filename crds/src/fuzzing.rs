//! Properties over arbitrary bytes for the coverage-guided fuzz targets (`fuzz/`, run by
//! `scripts/fuzz.sh`) and the replay of their committed corpus (`tests/fuzz.rs`): `Ok` when the
//! property holds; a panic anywhere below is a failure too.

use crate::approval::{ApprovalRequest, DecideRequest, Decision};
use crate::events::ingest::EventBatch;
use crate::relay::{RelayedDecision, Settlement};

/// The bodies the sidecar reads: from a runner an event batch, an approval ask and a
/// settlement; from a person a decision; from the status a decision appended. Each is read or refused; a batch read and accepted
/// for run `r` holds that run's events alone, consecutive, its first and last seq those
/// returned.
pub fn sidecar_bodies(data: &[u8]) -> Result<(), String> {
    if let Ok(batch) = serde_json::from_slice::<EventBatch>(data)
        && let Ok((first, last)) = batch.check("r")
    {
        let events = &batch.events;
        let consecutive = events
            .iter()
            .zip(first..)
            .all(|(e, seq)| e.seq == seq && e.run_id == "r");
        if !consecutive || last + 1 - first != events.len() as u64 {
            return Err(format!("a batch accepted as {first}..={last}: {events:?}"));
        }
    }
    let _ = serde_json::from_slice::<ApprovalRequest>(data);
    let _ = serde_json::from_slice::<Settlement>(data);
    let _ = serde_json::from_slice::<DecideRequest>(data);
    let _ = serde_json::from_slice::<Decision>(data);
    let _ = serde_json::from_slice::<RelayedDecision>(data);
    Ok(())
}
