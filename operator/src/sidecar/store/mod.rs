//! The sidecar's event store (being written).
