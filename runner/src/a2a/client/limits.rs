//! The A2A client's limits on what crosses to a remote agent and back.

/// The longest request (or answer) sent to a remote, in characters (rule 6.4).
pub const MAX_REQUEST_CHARS: usize = 8192;
/// A remote is answered at most this many times per call (rule 4.31).
pub const MAX_INPUT_ROUNDS: u32 = 3;
