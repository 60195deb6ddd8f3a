//! Which local binary runs a pod's image. Only the project's own images run: there is no image
//! store, so each image repository maps to a binary of this workspace's build.

use std::path::{Path, PathBuf};

/// Names the directory with the workspace's binaries (`orrery`, `orrery-podtest`), overriding the
/// directory found next to the running test binary.
pub const BIN_DIR_ENV: &str = "ORRERY_BIN_DIR";

/// The project's images: repository (without registry host, tag or digest) → binary name.
pub const PROJECT_IMAGES: &[(&str, &str)] = &[
    ("orrery/runner", "orrery"),
    ("orrery/podtest", "orrery-podtest"),
];

/// The binary an image runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageBinary {
    /// The binary's file name, e.g. `orrery` (what `command[0]` may name).
    pub name: String,
    /// Its path on this machine.
    pub path: PathBuf,
}

/// Why an image cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    /// Not one of [`PROJECT_IMAGES`].
    #[error("image {image:?} is not one of the project's images ({known})")]
    Unknown { image: String, known: String },
    /// A project image whose binary has not been built.
    #[error(
        "image {image:?} runs {path}, which does not exist: build it (cargo build --workspace) or set {BIN_DIR_ENV}"
    )]
    NotBuilt { image: String, path: PathBuf },
}

/// The image → binary table, with binaries taken from one directory.
#[derive(Debug, Clone)]
pub struct ImageTable {
    bin_dir: PathBuf,
}

impl ImageTable {
    /// The project's images, run from the binaries in `bin_dir`.
    pub fn new(bin_dir: impl Into<PathBuf>) -> ImageTable {
        ImageTable {
            bin_dir: bin_dir.into(),
        }
    }

    /// The directory the binaries come from.
    pub fn bin_dir(&self) -> &Path {
        &self.bin_dir
    }

    /// The binary `image` runs, or why it cannot run.
    pub fn resolve(&self, image: &str) -> Result<ImageBinary, ImageError> {
        let repo = repository(image);
        let name = PROJECT_IMAGES
            .iter()
            .find(|(known, _)| repo == *known || repo.ends_with(&format!("/{known}")))
            .map(|(_, bin)| *bin)
            .ok_or_else(|| ImageError::Unknown {
                image: image.to_string(),
                known: PROJECT_IMAGES
                    .iter()
                    .map(|(r, _)| *r)
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        let path = self.bin_dir.join(name);
        if !path.is_file() {
            return Err(ImageError::NotBuilt {
                image: image.to_string(),
                path,
            });
        }
        Ok(ImageBinary {
            name: name.to_string(),
            path,
        })
    }
}

/// The repository part of an image reference: no `@digest`, no `:tag`, registry host kept.
pub fn repository(image: &str) -> &str {
    let image = image.split_once('@').map_or(image, |(r, _)| r);
    match image.rfind(':') {
        // A colon after the last slash is a tag; before it, a registry port.
        Some(colon) if !image[colon..].contains('/') => &image[..colon],
        _ => image,
    }
}

/// Where the workspace's binaries are: `$ORRERY_BIN_DIR`; else the profile directory of the
/// running test binary (`target/<profile>/deps/<test>` → `target/<profile>`); else
/// `$CARGO_TARGET_DIR/debug`; else `<workspace>/target/debug`.
pub fn default_bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(BIN_DIR_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(profile_dir) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
        .and_then(|dir| {
            if dir.file_name().is_some_and(|n| n == "deps") {
                dir.parent().map(Path::to_path_buf)
            } else {
                Some(dir)
            }
        })
        .filter(|dir| {
            PROJECT_IMAGES
                .iter()
                .any(|(_, bin)| dir.join(bin).is_file())
        })
    {
        return profile_dir;
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(target).join("debug");
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("target")
        .join("debug")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn repositories_drop_tags_and_digests_but_keep_registry_ports() {
        let cases = [
            ("orrery/runner", "orrery/runner"),
            ("orrery/runner:0.1.0", "orrery/runner"),
            ("orrery/runner@sha256:abc", "orrery/runner"),
            ("orrery/runner:dev@sha256:abc", "orrery/runner"),
            (
                "registry:5000/orrery/podtest",
                "registry:5000/orrery/podtest",
            ),
            (
                "registry:5000/orrery/podtest:v1",
                "registry:5000/orrery/podtest",
            ),
            ("busybox", "busybox"),
        ];
        for (image, want) in cases {
            assert_eq!(repository(image), want, "{image}");
        }
    }

    #[test]
    fn project_images_map_to_their_binaries_and_others_are_refused() {
        let dir = std::env::temp_dir().join(format!("orrery-images-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("orrery-podtest"), b"").unwrap();
        let table = ImageTable::new(&dir);

        let bin = table.resolve("ghcr.io/acme/orrery/podtest:1").unwrap();
        assert_eq!(bin.name, "orrery-podtest");
        assert_eq!(bin.path, dir.join("orrery-podtest"));

        let err = table.resolve("busybox:1.36").unwrap_err();
        assert_eq!(
            err.to_string(),
            "image \"busybox:1.36\" is not one of the project's images (orrery/runner, orrery/podtest)"
        );
        // A repository that only ends in the same letters is not the project's.
        assert!(matches!(
            table.resolve("notorrery/runner"),
            Err(ImageError::Unknown { .. })
        ));
        // The runner is the project's, but not built in this directory.
        assert!(matches!(
            table.resolve("orrery/runner:0.1.0"),
            Err(ImageError::NotBuilt { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
