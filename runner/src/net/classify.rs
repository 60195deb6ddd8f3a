//! Address classification for the network guard (rules 5.22–5.24; anchors 6–9, 19): the
//! crate-wide classifier [`orrery_crds::host`], so the guard and `orrery validate` read every
//! host alike.

pub use orrery_crds::host::{
    AddrClass, Classified, classify, classify_v4, embedded_ipv4, is_loopback_host,
    never_allowlistable,
};
