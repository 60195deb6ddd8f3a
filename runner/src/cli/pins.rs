//! `orrery pins`: list and reset the pins `orrery run` keeps across runs (MCP tool descriptions,
//! schemas and annotations; A2A card trust digests). A changed tool or card stays refused until
//! its entry is re-pinned here.

use super::{EXIT_OK, EXIT_UNREADABLE};
use clap::{Args, Subcommand};
use orrery_runner::pin::store::PinStore;
use std::path::PathBuf;

/// Arguments of `orrery pins`.
#[derive(Debug, Args)]
pub struct PinsArgs {
    /// The pin store (default `$XDG_STATE_HOME/orrery/pins.json`, as `orrery run`).
    #[arg(long, value_name = "FILE", global = true)]
    pub pin_store: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub action: PinsAction,
}

/// `orrery pins` actions.
#[derive(Debug, Subcommand)]
pub enum PinsAction {
    /// List the pinned entries.
    List,
    /// Forget an entry's pins, so its card or tools are pinned afresh on the next run (review
    /// what changed first).
    Reset {
        /// The RegistryEntry name.
        entry: String,
    },
}

/// Runs `orrery pins`.
pub fn run(args: &PinsArgs) -> u8 {
    let store = match &args.pin_store {
        Some(path) => PinStore::open(path),
        None => PinStore::open_default(),
    };
    let store = match store {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot open the pin store: {e}");
            return EXIT_UNREADABLE;
        }
    };
    match &args.action {
        PinsAction::List => {
            for pin in store.cards().values() {
                println!(
                    "a2a  {}  card {}  pinned {}",
                    pin.entry, pin.digest, pin.pinned_at
                );
            }
            for pins in store.mcp().values() {
                let tools: Vec<&str> = pins.tools.keys().map(String::as_str).collect();
                println!("mcp  {}  tools {}", pins.entry, tools.join(", "));
            }
            EXIT_OK
        }
        PinsAction::Reset { entry } => match store.reset_entry(entry) {
            Ok(0) => {
                println!("no pins for '{entry}'");
                EXIT_OK
            }
            Ok(n) => {
                println!("forgot {n} pin(s) of '{entry}': they are pinned afresh on the next run");
                EXIT_OK
            }
            Err(e) => {
                eprintln!("error: cannot write the pin store: {e}");
                EXIT_UNREADABLE
            }
        },
    }
}
