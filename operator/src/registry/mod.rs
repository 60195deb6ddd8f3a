//! The RegistryEntry controller: its pure parts, its
//! static checks with the `Ready`/`Pinned` conditions they set and the probe's results
//! ([`status`]), the probe pod and its NetworkPolicy ([`probe`]); and the thin reconciler over
//! them ([`reconcile`]).

pub mod probe;
pub mod reconcile;
pub mod status;
