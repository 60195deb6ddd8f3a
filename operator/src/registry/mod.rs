//! The RegistryEntry controller: its pure parts, what an entry reaches ([`builders`]) and its
//! static checks with the `Ready`/`Pinned` conditions they set ([`status`]); and the thin
//! reconciler over them ([`reconcile`]).

pub mod builders;
pub mod reconcile;
pub mod status;
