//! `orrery up`: the whole system on this machine (a local control plane, a development node,
//! the Helm chart, the demo fleet, the examples and a live critic-loop run).
//!
//! The local environment is development tooling that lives in the repository (the control
//! plane and Helm are built from Go sources, the images from the workspace's binaries, the dev
//! node is `tests/devnode/`), so it is not linked into this binary, which also runs in every
//! runner pod. This subcommand finds the checkout and hands over to its `orrery-up` program with
//! `cargo run` (cargo replaces its own process with the program, so Ctrl-C and exit codes reach
//! it directly). Everything after `up` is passed on unchanged.

use super::EXIT_UNREADABLE;
use clap::Args;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Arguments of `orrery up`, passed on to `orrery-up` as they are (`orrery up --help` shows
/// them all).
#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct UpArgs {
    /// `--detach`, `--status`, `--down`, `--help`, …: see `orrery up --help`.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ARGS"
    )]
    pub args: Vec<OsString>,
}

/// The package and binary that implement `orrery up`.
const PACKAGE: &str = "orrery-up";
const BINARY: &str = "orrery-up";

/// A directory is the workspace when it has the chart and the Cargo workspace manifest.
fn is_workspace(dir: &Path) -> bool {
    dir.join("Cargo.toml").is_file()
        && dir.join("charts/orrery/Chart.yaml").is_file()
        && dir.join("tests/testenv/build.sh").is_file()
}

/// The checkout: the current directory or one of its parents, else the one this binary was
/// built from.
fn find_workspace() -> Option<PathBuf> {
    if let Ok(cwd) = std::env::current_dir()
        && let Some(found) = cwd.ancestors().find(|d| is_workspace(d))
    {
        return Some(found.to_path_buf());
    }
    let built_from = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
    is_workspace(built_from).then(|| built_from.to_path_buf())
}

/// Runs `orrery up`.
pub fn run(args: &UpArgs) -> u8 {
    let Some(root) = find_workspace() else {
        eprintln!(
            "orrery up: no Orrery Studio checkout here or above, nor at {}: `orrery up` builds \
             the local environment from the repository; run it inside a clone (git clone …; cd \
             orrery-studio; cargo run -p orrery-runner --bin orrery -- up)",
            env!("CARGO_MANIFEST_DIR")
        );
        return EXIT_UNREADABLE;
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let target_dir = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from);
    let built = built_binary(&root, target_dir.as_deref()).is_file();
    let mut command = Command::new(&cargo);
    command
        .current_dir(&root)
        .args(cargo_args(built))
        .args(&args.args);
    if !built {
        eprintln!("{}", first_build_notice(&root));
    }
    exec(command, &cargo)
}

/// Where cargo puts `orrery-up` when it builds it (the dev profile), under `CARGO_TARGET_DIR`
/// when set (relative to the checkout, as cargo reads it), else the checkout's `target/`.
fn built_binary(root: &Path, target_dir: Option<&Path>) -> PathBuf {
    let target = match target_dir {
        Some(dir) => root.join(dir),
        None => root.join("target"),
    };
    target.join("debug").join(BINARY)
}

/// `cargo run` of `orrery-up`: quiet once it is built (a rebuild after a change is short and
/// shows nothing), with cargo's progress the first time.
fn cargo_args(built: bool) -> Vec<&'static str> {
    let mut args = vec!["run"];
    if built {
        args.push("--quiet");
    }
    args.extend(["--locked", "-p", PACKAGE, "--bin", BINARY, "--"]);
    args
}

/// Said before the first build only: `--status` or `--down` of a built `orrery-up` print
/// nothing but their answer.
fn first_build_notice(root: &Path) -> String {
    format!(
        "orrery up: building {BINARY} from {} first (the first build takes a few minutes; cargo \
         shows its progress)",
        root.display()
    )
}

#[cfg(unix)]
fn exec(mut command: Command, cargo: &OsString) -> u8 {
    use std::os::unix::process::CommandExt;
    // Only returns on failure.
    let err = command.exec();
    eprintln!(
        "orrery up: cannot run {}: {err}; install Rust's cargo (rustup.rs) or set CARGO",
        cargo.to_string_lossy()
    );
    EXIT_UNREADABLE
}

#[cfg(not(unix))]
fn exec(_command: Command, _cargo: &OsString) -> u8 {
    eprintln!("orrery up: the local environment needs Linux (network namespaces, runc)");
    EXIT_UNREADABLE
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn the_checkout_this_binary_was_built_from_is_found_as_the_workspace() {
        let root = find_workspace().expect("the workspace");
        assert!(is_workspace(&root), "{}", root.display());
    }

    #[test]
    fn a_built_orrery_up_is_run_quietly_and_only_a_first_build_is_announced() {
        let root = std::env::temp_dir().join(format!("orrery-up-glue-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let binary = built_binary(&root, None);
        assert_eq!(binary, root.join("target/debug/orrery-up"));
        assert!(!binary.is_file());
        assert!(!cargo_args(false).contains(&"--quiet"), "progress shown");
        assert!(first_build_notice(&root).contains("the first build takes a few minutes"));
        std::fs::create_dir_all(binary.parent().unwrap()).unwrap();
        std::fs::write(&binary, b"").unwrap();
        assert!(built_binary(&root, None).is_file());
        assert_eq!(
            cargo_args(true),
            [
                "run",
                "--quiet",
                "--locked",
                "-p",
                "orrery-up",
                "--bin",
                "orrery-up",
                "--"
            ]
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_target_directory_is_cargo_target_dir_when_set_relative_to_the_checkout() {
        let root = Path::new("/checkout");
        assert_eq!(
            built_binary(root, Some(Path::new("/elsewhere"))),
            Path::new("/elsewhere/debug/orrery-up")
        );
        assert_eq!(
            built_binary(root, Some(Path::new("build"))),
            Path::new("/checkout/build/debug/orrery-up")
        );
    }

    #[test]
    fn a_directory_without_the_chart_is_not_the_workspace() {
        let dir = std::env::temp_dir();
        assert!(!is_workspace(&dir));
    }
}
