//! `kubectl_complete-orrery`: what kubectl runs for `kubectl orrery …<TAB>` (kubectl 1.26+),
//! with the words typed after `orrery`. See [`kubectl_orrery::complete`].

fn main() {
    let words: Vec<String> = std::env::args().skip(1).collect();
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        // Nothing to offer; the shell falls back to nothing rather than file names.
        println!(":4");
        return;
    };
    print!(
        "{}",
        runtime.block_on(kubectl_orrery::complete::complete(&words))
    );
}
