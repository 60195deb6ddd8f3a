//! The A2A 1.0 client: remote agents as tools (rules 4.27–4.50, 5.13–5.17, 5.31, 6.x).
//!
//! - [`A2aEndpoint`]: a registry entry resolved for a run.
//! - [`fetch_trusted_card`]: the card through the guard, duplicate keys refused, its trust
//!   digest compared with the pin, its JSON-RPC target checked (https, the entry's origins),
//!   and, when the entry requires it, its signature ([`signature`]).
//! - [`Rpc`]: `SendMessage` / `SendStreamingMessage`, `GetTask`, `CancelTask` with
//!   `A2A-Version: 1.0`, `x-orrery-hop: 1` and the entry's token only.
//! - [`A2aAgent`]: one call: only the request text leaves; questions go to a person; acting
//!   calls are confirmed by the owner; replies screened; `a2a.message` events.
//! - [`A2aSkillTool`]: a skill as the model sees it.

mod agent;
mod card;
mod endpoint;
mod guard;
mod limits;
mod outcome;
mod people;
mod reply;
pub(crate) mod rpc;
pub mod signature;
mod tool;

pub use agent::{A2aAgent, request_text};
pub use card::{TrustedCard, fetch_trusted_card};
pub use endpoint::{
    A2aEndpoint, DEFAULT_MAX_CARD_BYTES, DEFAULT_MAX_REPLY_BYTES, DEFAULT_MESSAGE_TIMEOUT,
    EndpointError,
};
pub use limits::{MAX_INPUT_ROUNDS, MAX_REQUEST_CHARS};
pub use outcome::{CallError, CallResult, CallStatus, ErrorType, PartInfo, display_id, state_name};
pub use reply::{ReplyText, message_reply, question, task_reply};
pub use rpc::{Exchange, Rpc, apply, settled};
pub use tool::A2aSkillTool;
