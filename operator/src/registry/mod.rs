//! RegistryEntry controller (pure parts).
