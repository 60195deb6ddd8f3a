//! StudioRun controller (pure parts).
