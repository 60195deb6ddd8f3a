//! The RegistryEntry controller: its pure parts, what an entry reaches ([`builders`]) and its
//! static checks with the `Ready`/`Pinned` conditions they set and the probe's results
//! ([`status`]), the probe pod and its NetworkPolicy ([`probe`]); and the thin reconciler over
//! them ([`reconcile`]).

pub mod builders;
pub mod probe;
pub mod reconcile;
pub mod status;
