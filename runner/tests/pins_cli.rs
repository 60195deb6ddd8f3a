//! `orrery pins`: a reset card pin is gone from the store, so the next run pins it afresh.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use orrery_runner::pin::store::{PinSource, PinStore};
use std::process::Command;

fn orrery(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn pins_list_shows_a_card_pin_and_reset_forgets_it() {
    let dir = std::env::temp_dir().join(format!("orrery-pins-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("pins.json");
    let store = PinStore::open(&path).unwrap();
    store
        .check_card(
            "writer-key",
            "demo-writer",
            &"ab".repeat(32),
            PinSource::FirstUse,
        )
        .unwrap();
    let file = path.to_str().unwrap();

    let (code, listed) = orrery(&["pins", "--pin-store", file, "list"]);
    assert_eq!(code, 0);
    assert!(listed.contains("demo-writer"), "{listed}");

    let (code, said) = orrery(&["pins", "--pin-store", file, "reset", "demo-writer"]);
    assert_eq!(code, 0);
    assert!(said.contains("forgot 1 pin"), "{said}");
    assert!(
        PinStore::open(&path)
            .unwrap()
            .card_pin("writer-key")
            .is_none()
    );

    let (_, again) = orrery(&["pins", "--pin-store", file, "reset", "demo-writer"]);
    assert!(again.contains("no pins"), "{again}");
    std::fs::remove_dir_all(&dir).ok();
}
