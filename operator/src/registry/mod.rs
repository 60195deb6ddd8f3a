//! The RegistryEntry controller's pure parts: what an entry reaches ([`builders`]) and its
//! static checks with the `Ready`/`Pinned` conditions they set ([`status`]).

pub mod builders;
pub mod status;
