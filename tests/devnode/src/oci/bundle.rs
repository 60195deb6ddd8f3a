//! A runc bundle: `config.json` (OCI runtime spec 1.0.x, what runc 1.1 reads) beside the
//! root filesystem. The shape is `runc spec`'s, changed where these machines or the project's
//! pods need it:
//!
//! - no `process.rlimits`: runc fails to set them here (`setrlimit …: Operation not
//!   permitted`), which is why `podman run` does not work (`shared/reference/devnode.md`);
//! - no capabilities at all (a restricted pod drops `ALL`), `noNewPrivileges`;
//! - the network namespace new (loopback only) or one the caller made (`/var/run/netns/NAME`);
//! - the caller's bind mounts and tmpfs mounts after the standard ones.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::OciError;

/// The container's network namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Network {
    /// A new, empty namespace (only loopback, and that down until something brings it up).
    New,
    /// An existing namespace, e.g. `/var/run/netns/<name>` made by `ip netns add`.
    Path(PathBuf),
    /// The runtime's own (the host's): no network namespace at all.
    Host,
}

/// A host path bound into the container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindMount {
    pub source: PathBuf,
    pub destination: String,
    pub read_only: bool,
}

/// A tmpfs in the container (like an `emptyDir` with `medium: Memory`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TmpfsMount {
    pub destination: String,
    /// `size=` in bytes (None: the kernel's default, half the memory).
    pub size_bytes: Option<u64>,
    /// The mode of its root (`0o1777` for a `/tmp`).
    pub mode: u32,
}

/// What the bundle's container runs and how it is confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleSpec {
    pub args: Vec<String>,
    /// `NAME=value` entries.
    pub env: Vec<String>,
    pub cwd: String,
    pub uid: u32,
    pub gid: u32,
    pub additional_gids: Vec<u32>,
    pub hostname: String,
    /// The root filesystem mounted read-only (a pod's `readOnlyRootFilesystem`).
    pub readonly_root: bool,
    pub network: Network,
    pub binds: Vec<BindMount>,
    pub tmpfs: Vec<TmpfsMount>,
}

impl BundleSpec {
    /// A spec for `args` as `uid:gid` with a read-only root, a new network namespace, `PATH`
    /// as the image config would set it and no extra mounts.
    pub fn new(args: Vec<String>, uid: u32, gid: u32) -> Self {
        BundleSpec {
            args,
            env: vec![
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_owned(),
            ],
            cwd: "/".to_owned(),
            uid,
            gid,
            additional_gids: Vec::new(),
            hostname: "orrery".to_owned(),
            readonly_root: true,
            network: Network::New,
            binds: Vec::new(),
            tmpfs: Vec::new(),
        }
    }

    /// The bundle's `config.json`, with the root filesystem at `rootfs` (relative to the
    /// bundle directory, or absolute).
    pub fn config_json(&self, rootfs: &Path) -> Value {
        let network = match &self.network {
            Network::New => Some(json!({ "type": "network" })),
            Network::Path(path) => Some(json!({ "type": "network", "path": path })),
            Network::Host => None,
        };
        let namespaces: Vec<Value> = [
            Some(json!({ "type": "pid" })),
            network,
            Some(json!({ "type": "ipc" })),
            Some(json!({ "type": "uts" })),
            Some(json!({ "type": "mount" })),
        ]
        .into_iter()
        .flatten()
        .collect();
        let mut mounts = vec![
            json!({ "destination": "/proc", "type": "proc", "source": "proc" }),
            json!({
                "destination": "/dev", "type": "tmpfs", "source": "tmpfs",
                "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]
            }),
            json!({
                "destination": "/dev/pts", "type": "devpts", "source": "devpts",
                "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]
            }),
            json!({
                "destination": "/dev/shm", "type": "tmpfs", "source": "shm",
                "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]
            }),
            json!({
                "destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue",
                "options": ["nosuid", "noexec", "nodev"]
            }),
            json!({
                "destination": "/sys", "type": "sysfs", "source": "sysfs",
                "options": ["nosuid", "noexec", "nodev", "ro"]
            }),
        ];
        for bind in &self.binds {
            let access = if bind.read_only { "ro" } else { "rw" };
            mounts.push(json!({
                "destination": bind.destination, "type": "bind", "source": bind.source,
                "options": ["rbind", "rprivate", "nosuid", "nodev", access]
            }));
        }
        for tmpfs in &self.tmpfs {
            let mut options = vec![
                "nosuid".to_owned(),
                "nodev".to_owned(),
                format!("mode={:o}", tmpfs.mode),
            ];
            if let Some(size) = tmpfs.size_bytes {
                options.push(format!("size={size}"));
            }
            mounts.push(json!({
                "destination": tmpfs.destination, "type": "tmpfs", "source": "tmpfs",
                "options": options
            }));
        }
        let mut user = json!({ "uid": self.uid, "gid": self.gid });
        if !self.additional_gids.is_empty() {
            user["additionalGids"] = json!(self.additional_gids);
        }
        json!({
            "ociVersion": "1.0.2",
            "process": {
                "terminal": false,
                "user": user,
                "args": self.args,
                "env": self.env,
                "cwd": self.cwd,
                "capabilities": {
                    "bounding": [], "effective": [], "inheritable": [], "permitted": [],
                    "ambient": []
                },
                "noNewPrivileges": true
            },
            "root": { "path": rootfs, "readonly": self.readonly_root },
            "hostname": self.hostname,
            "mounts": mounts,
            "linux": {
                "resources": { "devices": [{ "allow": false, "access": "rwm" }] },
                "namespaces": namespaces,
                "maskedPaths": [
                    "/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
                    "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
                    "/proc/sched_debug", "/sys/firmware", "/proc/scsi"
                ],
                "readonlyPaths": [
                    "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"
                ]
            }
        })
    }

    /// Writes `<bundle>/config.json` for a root filesystem at `<bundle>/rootfs` (unpack the
    /// image there: [`super::OciArchive::unpack`]). Returns the path of `config.json`.
    pub fn write(&self, bundle: &Path) -> Result<PathBuf, OciError> {
        std::fs::create_dir_all(bundle)
            .map_err(|e| OciError::io("creating the bundle directory", bundle, e))?;
        let path = bundle.join("config.json");
        let text = serde_json::to_vec_pretty(&self.config_json(Path::new("rootfs"))).map_err(
            |source| OciError::Json {
                what: "config.json".to_owned(),
                path: path.clone(),
                source,
            },
        )?;
        std::fs::write(&path, text).map_err(|e| OciError::io("writing", &path, e))?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::panic)]
    use super::*;

    fn spec() -> BundleSpec {
        let mut spec = BundleSpec::new(
            vec!["/usr/local/bin/orrery".into(), "--version".into()],
            65532,
            65532,
        );
        spec.binds.push(BindMount {
            source: "/var/lib/plan".into(),
            destination: "/etc/orrery/plan".into(),
            read_only: true,
        });
        spec.tmpfs.push(TmpfsMount {
            destination: "/tmp".into(),
            size_bytes: Some(64 << 20),
            mode: 0o1777,
        });
        spec
    }

    #[test]
    fn the_config_has_no_rlimits_and_runs_as_the_given_user_without_privileges() {
        let config = spec().config_json(Path::new("rootfs"));
        let process = &config["process"];
        assert!(process.get("rlimits").is_none(), "{process}");
        assert_eq!(process["user"], json!({ "uid": 65532, "gid": 65532 }));
        assert_eq!(
            process["args"],
            json!(["/usr/local/bin/orrery", "--version"])
        );
        assert_eq!(process["terminal"], json!(false));
        assert_eq!(process["noNewPrivileges"], json!(true));
        for set in [
            "bounding",
            "effective",
            "inheritable",
            "permitted",
            "ambient",
        ] {
            assert_eq!(process["capabilities"][set], json!([]), "{set}");
        }
        assert_eq!(config["ociVersion"], json!("1.0.2"));
    }

    #[test]
    fn the_root_is_read_only_unless_asked_otherwise() {
        let mut spec = spec();
        let config = spec.config_json(Path::new("rootfs"));
        assert_eq!(
            config["root"],
            json!({ "path": "rootfs", "readonly": true })
        );
        spec.readonly_root = false;
        assert_eq!(
            spec.config_json(Path::new("rootfs"))["root"]["readonly"],
            json!(false)
        );
    }

    #[test]
    fn the_network_namespace_is_new_or_the_given_path() {
        let mut spec = spec();
        let types = |config: &Value| -> Vec<Value> {
            config["linux"]["namespaces"]
                .as_array()
                .expect("namespaces")
                .clone()
        };
        let config = spec.config_json(Path::new("rootfs"));
        let namespaces = types(&config);
        for kind in ["pid", "ipc", "uts", "mount"] {
            assert!(
                namespaces.contains(&json!({ "type": kind })),
                "{kind}: {namespaces:?}"
            );
        }
        assert!(namespaces.contains(&json!({ "type": "network" })));
        assert!(
            !namespaces
                .iter()
                .any(|n| n["type"] == "user" || n["type"] == "cgroup")
        );
        spec.network = Network::Path("/var/run/netns/pod-a".into());
        let namespaces = types(&spec.config_json(Path::new("rootfs")));
        assert!(namespaces.contains(&json!({ "type": "network", "path": "/var/run/netns/pod-a" })));
        spec.network = Network::Host;
        let namespaces = types(&spec.config_json(Path::new("rootfs")));
        assert!(
            !namespaces.iter().any(|n| n["type"] == "network"),
            "{namespaces:?}"
        );
        assert_eq!(namespaces.len(), 4);
    }

    #[test]
    fn the_mounts_are_the_standard_ones_then_the_callers_binds_and_tmpfs() {
        let config = spec().config_json(Path::new("rootfs"));
        let mounts = config["mounts"].as_array().expect("mounts");
        let destinations: Vec<&str> = mounts
            .iter()
            .map(|m| m["destination"].as_str().expect("destination"))
            .collect();
        assert_eq!(
            destinations,
            [
                "/proc",
                "/dev",
                "/dev/pts",
                "/dev/shm",
                "/dev/mqueue",
                "/sys",
                "/etc/orrery/plan",
                "/tmp"
            ]
        );
        assert!(
            mounts[5]["options"]
                .as_array()
                .expect("sys")
                .contains(&json!("ro"))
        );
        assert_eq!(mounts[6]["type"], json!("bind"));
        assert_eq!(mounts[6]["source"], json!("/var/lib/plan"));
        assert!(
            mounts[6]["options"]
                .as_array()
                .expect("bind")
                .contains(&json!("ro"))
        );
        assert_eq!(mounts[7]["type"], json!("tmpfs"));
        assert_eq!(
            mounts[7]["options"],
            json!(["nosuid", "nodev", "mode=1777", format!("size={}", 64 << 20)])
        );
    }

    #[test]
    fn the_kernel_files_runc_spec_masks_are_masked_or_read_only() {
        let config = spec().config_json(Path::new("rootfs"));
        let masked = config["linux"]["maskedPaths"].as_array().expect("masked");
        assert!(masked.contains(&json!("/proc/kcore")) && masked.contains(&json!("/sys/firmware")));
        let readonly = config["linux"]["readonlyPaths"]
            .as_array()
            .expect("readonly");
        assert!(
            readonly.contains(&json!("/proc/sys"))
                && readonly.contains(&json!("/proc/sysrq-trigger"))
        );
    }

    #[test]
    fn writing_puts_config_json_in_the_bundle_with_a_relative_rootfs() {
        let dir = std::env::temp_dir().join(format!("orrery-oci-bundle-{}", std::process::id()));
        let path = spec().write(&dir).expect("write");
        let text = std::fs::read_to_string(&path).expect("read");
        let config: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(config["root"]["path"], json!("rootfs"));
        assert!(!text.contains("rlimits"));
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
