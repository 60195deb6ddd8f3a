//! An `oci-archive`: a tar of an OCI image layout (`oci-layout`, `index.json`, `blobs/sha256/…`).
//! The tar is scanned once for where each file's bytes are; blobs are then read in place and
//! checked against their digests before they are used.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use super::OciError;
use super::unpack::{UnpackStats, unpack_layer};

/// The largest index, manifest or config read into memory.
const MAX_JSON_BLOB: u64 = 4 << 20;

const MEDIA_INDEX: &str = "application/vnd.oci.image.index.v1+json";
const MEDIA_DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";

/// The parts of an image's config a container is made from (`config` of the OCI image config).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageConfig {
    /// `User`: `uid`, `uid:gid`, or a name (empty: root).
    pub user: String,
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    /// `Env`: `NAME=value` entries.
    pub env: Vec<String>,
    /// `WorkingDir` (empty: `/`).
    pub working_dir: String,
    pub labels: BTreeMap<String, String>,
    pub architecture: String,
    pub os: String,
}

impl ImageConfig {
    /// The numeric user and group of `User` (`uid` alone means group 0, as Docker does without
    /// an `/etc/passwd` lookup; empty means root). `None` for a user name.
    pub fn numeric_user(&self) -> Option<(u32, u32)> {
        let user = self.user.trim();
        if user.is_empty() {
            return Some((0, 0));
        }
        let (uid, gid) = match user.split_once(':') {
            Some((uid, gid)) => (uid, gid),
            None => (user, "0"),
        };
        Some((uid.parse().ok()?, gid.parse().ok()?))
    }

    /// The process's argv: the entrypoint, then `args` if any were given, otherwise `Cmd`
    /// (Kubernetes' `args` replaces `Cmd`, never the entrypoint).
    pub fn argv(&self, args: &[&str]) -> Vec<String> {
        let mut argv = self.entrypoint.clone();
        if args.is_empty() {
            argv.extend(self.cmd.iter().cloned());
        } else {
            argv.extend(args.iter().map(|a| (*a).to_owned()));
        }
        argv
    }

    /// The working directory, `/` when the image names none.
    pub fn cwd(&self) -> &str {
        if self.working_dir.is_empty() {
            "/"
        } else {
            &self.working_dir
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Descriptor {
    #[serde(default)]
    media_type: String,
    digest: String,
    size: u64,
    #[serde(default)]
    platform: Option<Platform>,
}

#[derive(Debug, Clone, Deserialize)]
struct Platform {
    #[serde(default)]
    architecture: String,
    #[serde(default)]
    os: String,
}

#[derive(Debug, Deserialize)]
struct Index {
    #[serde(default)]
    manifests: Vec<Descriptor>,
}

#[derive(Debug, Deserialize)]
struct Manifest {
    config: Descriptor,
    #[serde(default)]
    layers: Vec<Descriptor>,
}

#[derive(Debug, Default, Deserialize)]
struct RawConfigFile {
    #[serde(default)]
    architecture: String,
    #[serde(default)]
    os: String,
    #[serde(default)]
    config: Option<RawConfig>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawConfig {
    user: Option<String>,
    entrypoint: Option<Vec<String>>,
    cmd: Option<Vec<String>>,
    env: Option<Vec<String>>,
    working_dir: Option<String>,
    labels: Option<BTreeMap<String, String>>,
}

/// An opened image archive: its config read and checked, its layers not yet read.
#[derive(Debug)]
pub struct OciArchive {
    path: PathBuf,
    /// Where each file of the tar is: offset of its data, size.
    files: HashMap<String, (u64, u64)>,
    layers: Vec<Descriptor>,
    config: ImageConfig,
    /// The digest of the image manifest chosen (`sha256:…`).
    manifest_digest: String,
}

impl OciArchive {
    /// Opens the archive and reads the image it holds (the only one, or the one for this
    /// machine's platform when `index.json` lists several).
    pub fn open(path: &Path) -> Result<Self, OciError> {
        let files = scan(path)?;
        let mut archive = OciArchive {
            path: path.to_path_buf(),
            files,
            layers: Vec::new(),
            config: ImageConfig::default(),
            manifest_digest: String::new(),
        };
        if !archive.files.contains_key("oci-layout") {
            return Err(archive.layout("it has no oci-layout file"));
        }
        let index_bytes = archive.read_file("index.json", MAX_JSON_BLOB)?;
        let mut index: Index = archive.json("index.json", &index_bytes)?;
        // An index may point at a nested index (a multi-platform image): follow it once.
        let mut manifest = None;
        for _ in 0..2 {
            let chosen = archive.choose(&index.manifests)?;
            let bytes = archive.read_blob(&chosen, MAX_JSON_BLOB)?;
            if chosen.media_type == MEDIA_INDEX || chosen.media_type == MEDIA_DOCKER_LIST {
                index = archive.json(&format!("index {}", chosen.digest), &bytes)?;
                continue;
            }
            manifest =
                Some(archive.json::<Manifest>(&format!("manifest {}", chosen.digest), &bytes)?);
            archive.manifest_digest = chosen.digest.clone();
            break;
        }
        let manifest = manifest.ok_or_else(|| archive.layout("its indexes nest too deep"))?;
        let config_bytes = archive.read_blob(&manifest.config, MAX_JSON_BLOB)?;
        let raw: RawConfigFile =
            archive.json(&format!("config {}", manifest.config.digest), &config_bytes)?;
        let c = raw.config.unwrap_or_default();
        archive.config = ImageConfig {
            user: c.user.unwrap_or_default(),
            entrypoint: c.entrypoint.unwrap_or_default(),
            cmd: c.cmd.unwrap_or_default(),
            env: c.env.unwrap_or_default(),
            working_dir: c.working_dir.unwrap_or_default(),
            labels: c.labels.unwrap_or_default(),
            architecture: raw.architecture,
            os: raw.os,
        };
        archive.layers = manifest.layers;
        Ok(archive)
    }

    /// The image's config.
    pub fn config(&self) -> &ImageConfig {
        &self.config
    }

    /// The digest of the image's manifest (`sha256:…`): what identifies its root filesystem.
    pub fn manifest_digest(&self) -> &str {
        &self.manifest_digest
    }

    /// How many layers the image has.
    pub fn layer_count(&self) -> usize {
        self.layers.len()
    }

    /// Unpacks every layer, in order, into `rootfs` (created if missing). Each layer's digest
    /// is checked before any of it is written.
    pub fn unpack(&self, rootfs: &Path) -> Result<UnpackStats, OciError> {
        std::fs::create_dir_all(rootfs)
            .map_err(|e| OciError::io("creating the root filesystem", rootfs, e))?;
        let mut stats = UnpackStats::default();
        for layer in &self.layers {
            let gzip = match layer.media_type.as_str() {
                "application/vnd.oci.image.layer.v1.tar"
                | "application/vnd.oci.image.layer.nondistributable.v1.tar"
                | "application/vnd.docker.image.rootfs.diff.tar" => false,
                "application/vnd.oci.image.layer.v1.tar+gzip"
                | "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip"
                | "application/vnd.docker.image.rootfs.diff.tar.gzip" => true,
                other => {
                    return Err(self.layout(&format!(
                        "layer {} has media type {other:?}; only tar and tar+gzip layers are read (push with `--compression-format gzip`)",
                        layer.digest
                    )));
                }
            };
            self.verify(layer)?;
            let reader = self.blob_reader(layer)?;
            let layer_stats = if gzip {
                unpack_layer(
                    flate2::read::GzDecoder::new(reader),
                    rootfs,
                    &self.path,
                    &layer.digest,
                )?
            } else {
                unpack_layer(reader, rootfs, &self.path, &layer.digest)?
            };
            stats.add(&layer_stats);
        }
        Ok(stats)
    }

    fn choose(&self, manifests: &[Descriptor]) -> Result<Descriptor, OciError> {
        let arch = match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            other => other,
        };
        let chosen = match manifests {
            [] => None,
            [only] => Some(only),
            several => several.iter().find(|d| {
                d.platform
                    .as_ref()
                    .is_some_and(|p| p.os == "linux" && p.architecture == arch)
            }),
        };
        chosen
            .cloned()
            .ok_or_else(|| self.layout(&format!("no manifest for linux/{arch} in its index")))
    }

    fn layout(&self, problem: &str) -> OciError {
        OciError::Layout {
            path: self.path.clone(),
            problem: problem.to_owned(),
        }
    }

    fn json<T: serde::de::DeserializeOwned>(
        &self,
        what: &str,
        bytes: &[u8],
    ) -> Result<T, OciError> {
        serde_json::from_slice(bytes).map_err(|source| OciError::Json {
            what: what.to_owned(),
            path: self.path.clone(),
            source,
        })
    }

    fn blob_path(&self, descriptor: &Descriptor) -> Result<String, OciError> {
        let hex = descriptor
            .digest
            .strip_prefix("sha256:")
            .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| {
                self.layout(&format!(
                    "digest {:?} is not sha256:<64 hex digits>",
                    descriptor.digest
                ))
            })?;
        Ok(format!("blobs/sha256/{hex}"))
    }

    fn located(&self, name: &str) -> Result<(u64, u64), OciError> {
        self.files
            .get(name)
            .copied()
            .ok_or_else(|| self.layout(&format!("{name} is missing")))
    }

    fn open_at(&self, name: &str) -> Result<std::io::Take<BufReader<File>>, OciError> {
        let (offset, size) = self.located(name)?;
        let mut file =
            File::open(&self.path).map_err(|e| OciError::io("opening", &self.path, e))?;
        file.seek(SeekFrom::Start(offset))
            .map_err(|e| OciError::io("seeking in", &self.path, e))?;
        Ok(BufReader::new(file).take(size))
    }

    fn read_file(&self, name: &str, limit: u64) -> Result<Vec<u8>, OciError> {
        let (_, size) = self.located(name)?;
        if size > limit {
            return Err(self.layout(&format!("{name} is {size} bytes, more than {limit}")));
        }
        let mut bytes = Vec::new();
        self.open_at(name)?
            .read_to_end(&mut bytes)
            .map_err(|e| OciError::io("reading", &self.path, e))?;
        Ok(bytes)
    }

    fn read_blob(&self, descriptor: &Descriptor, limit: u64) -> Result<Vec<u8>, OciError> {
        let name = self.blob_path(descriptor)?;
        let bytes = self.read_file(&name, limit)?;
        self.check(descriptor, bytes.len() as u64, &Sha256::digest(&bytes))?;
        Ok(bytes)
    }

    fn blob_reader(&self, descriptor: &Descriptor) -> Result<impl Read, OciError> {
        self.open_at(&self.blob_path(descriptor)?)
    }

    fn verify(&self, descriptor: &Descriptor) -> Result<(), OciError> {
        let mut reader = self.blob_reader(descriptor)?;
        let mut hasher = Sha256::new();
        let size = std::io::copy(&mut reader, &mut hasher)
            .map_err(|e| OciError::io("reading", &self.path, e))?;
        self.check(descriptor, size, &hasher.finalize())
    }

    fn check(&self, descriptor: &Descriptor, size: u64, digest: &[u8]) -> Result<(), OciError> {
        let actual = hex::encode(digest);
        if descriptor.digest != format!("sha256:{actual}") || size != descriptor.size {
            return Err(OciError::Digest {
                path: self.path.clone(),
                digest: descriptor.digest.clone(),
                actual,
            });
        }
        Ok(())
    }
}

/// Where each regular file of the archive's tar is.
fn scan(path: &Path) -> Result<HashMap<String, (u64, u64)>, OciError> {
    let file = File::open(path).map_err(|e| OciError::io("opening the image archive", path, e))?;
    let mut tar = tar::Archive::new(BufReader::new(file));
    let mut files = HashMap::new();
    let entries = tar
        .entries()
        .map_err(|e| OciError::io("reading the image archive", path, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| OciError::io("reading the image archive", path, e))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let name = entry
            .path()
            .map_err(|e| OciError::io("reading the image archive", path, e))?
            .to_string_lossy()
            .trim_start_matches("./")
            .to_owned();
        files.insert(name, (entry.raw_file_position(), entry.size()));
    }
    Ok(files)
}

#[cfg(test)]
#[path = "archive_tests.rs"]
mod tests;
