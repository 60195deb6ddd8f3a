#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use super::*;
use serde_json::json;

fn pod(spec: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": { "name": "op-1", "namespace": "team", "uid": "1234-abcd" },
        "spec": spec
    }))
    .unwrap()
}

fn image() -> ImageConfig {
    ImageConfig {
        user: "65532:65532".into(),
        entrypoint: vec!["/usr/local/bin/orrery-operator".into()],
        cmd: vec!["--help".into()],
        env: vec!["PATH=/usr/local/bin:/usr/bin".into(), "LANG=C".into()],
        ..ImageConfig::default()
    }
}

fn container(v: serde_json::Value) -> Container {
    serde_json::from_value(v).unwrap()
}

fn env() -> Env {
    let mut env = Env::default();
    env.set("PORT", "8080".into());
    env.set("LANG", "C.UTF-8".into());
    env
}

#[test]
fn command_replaces_the_entrypoint_and_args_replace_the_cmd() {
    let image = image();
    let env = env();
    let none = container(json!({ "name": "c" }));
    assert_eq!(
        container_args(&none, &image, &env).unwrap(),
        ["/usr/local/bin/orrery-operator", "--help"]
    );
    let args = container(json!({ "name": "c", "args": ["sidecar", "--listen=0.0.0.0:$(PORT)"] }));
    assert_eq!(
        container_args(&args, &image, &env).unwrap(),
        [
            "/usr/local/bin/orrery-operator",
            "sidecar",
            "--listen=0.0.0.0:8080"
        ]
    );
    let command = container(json!({ "name": "c", "command": ["/bin/x", "$(PORT)"] }));
    assert_eq!(
        container_args(&command, &image, &env).unwrap(),
        ["/bin/x", "8080"]
    );
    let both = container(json!({ "name": "c", "command": ["/bin/x"], "args": ["y"] }));
    assert_eq!(
        container_args(&both, &image, &env).unwrap(),
        ["/bin/x", "y"]
    );
    let empty = ImageConfig::default();
    let err = container_args(&none, &empty, &env).unwrap_err();
    assert!(matches!(err, LaunchError::Start(_)), "{err}");
}

#[test]
fn the_container_env_overrides_the_images_and_hostname_is_the_pod_name() {
    let env = container_env(&pod(json!({ "containers": [] })), &image(), &env());
    assert_eq!(
        env,
        [
            "PATH=/usr/local/bin:/usr/bin",
            "LANG=C.UTF-8",
            "PORT=8080",
            "HOSTNAME=op-1"
        ]
    );
}

#[test]
fn the_user_is_the_containers_security_context_over_the_pods_over_the_images() {
    let c = container(json!({ "name": "c" }));
    let p = pod(json!({ "containers": [] }));
    assert_eq!(
        container_user(&p, &c, &image()).unwrap(),
        (65532, 65532, vec![])
    );
    let p = pod(json!({
        "containers": [],
        "securityContext": { "runAsUser": 1000, "runAsGroup": 2000, "fsGroup": 3000,
                             "supplementalGroups": [4000, 3000] }
    }));
    assert_eq!(
        container_user(&p, &c, &image()).unwrap(),
        (1000, 2000, vec![3000, 4000])
    );
    let c = container(json!({ "name": "c", "securityContext": { "runAsUser": 7 } }));
    assert_eq!(container_user(&p, &c, &image()).unwrap().0, 7);
    assert_eq!(container_user(&p, &c, &image()).unwrap().1, 2000);
    let named = ImageConfig {
        user: "nobody".into(),
        ..image()
    };
    let c = container(json!({ "name": "c" }));
    let err = container_user(&pod(json!({ "containers": [] })), &c, &named).unwrap_err();
    assert!(err.to_string().contains("runAsUser"), "{err}");
}

#[test]
fn every_volume_mount_is_a_bind_and_the_termination_file_is_bound_writable() {
    let c = container(json!({
        "name": "c",
        "terminationMessagePath": "/dev/termination-log",
        "volumeMounts": [
            { "name": "token", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true },
            { "name": "tmp", "mountPath": "/tmp" },
            { "name": "config", "mountPath": "/etc/orrery/config.yaml", "subPath": "config.yaml" }
        ]
    }));
    let volumes: BTreeMap<String, PathBuf> = [
        ("token".to_owned(), PathBuf::from("/pod/volumes/token")),
        ("tmp".to_owned(), PathBuf::from("/pod/volumes/tmp")),
        ("config".to_owned(), PathBuf::from("/pod/volumes/config")),
    ]
    .into();
    let binds = container_binds(&c, &volumes, &env(), Path::new("/pod/c/termination-log")).unwrap();
    let view: Vec<(&str, &str, bool)> = binds
        .iter()
        .map(|b| {
            (
                b.source.to_str().unwrap(),
                b.destination.as_str(),
                b.read_only,
            )
        })
        .collect();
    assert_eq!(
        view,
        [
            ("/pod/volumes/tmp", "/tmp", false),
            (
                "/pod/volumes/config/config.yaml",
                "/etc/orrery/config.yaml",
                false
            ),
            (
                "/pod/volumes/token",
                "/var/run/secrets/kubernetes.io/serviceaccount",
                true
            ),
            ("/pod/c/termination-log", "/dev/termination-log", false),
        ]
    );
    let bad = container(json!({
        "name": "c",
        "volumeMounts": [{ "name": "tmp", "mountPath": "/x", "subPath": "../etc" }]
    }));
    assert!(container_binds(&bad, &volumes, &env(), Path::new("/t")).is_err());
    let missing = container(json!({
        "name": "c", "volumeMounts": [{ "name": "nope", "mountPath": "/x" }]
    }));
    let err = container_binds(&missing, &volumes, &env(), Path::new("/t")).unwrap_err();
    assert!(matches!(err, LaunchError::Config(_)), "{err}");
}

#[test]
fn read_only_root_filesystem_makes_the_root_read_only_and_the_network_is_the_hosts() {
    let p = pod(json!({ "containers": [] }));
    let c = container(json!({
        "name": "c", "securityContext": { "readOnlyRootFilesystem": true }
    }));
    let spec = bundle_spec(
        &p,
        &c,
        &image(),
        &env(),
        &BTreeMap::new(),
        Path::new("/t"),
        &PodNetwork::Host,
    )
    .unwrap();
    assert!(spec.readonly_root);
    assert_eq!(spec.network, crate::oci::Network::Host);
    assert_eq!(spec.hostname, "op-1");
    let config = spec.config_json(Path::new("/rootfs"));
    let namespaces = config["linux"]["namespaces"].as_array().unwrap();
    assert!(!namespaces.iter().any(|n| n["type"] == "network"));
    let c = container(json!({ "name": "c" }));
    let spec = bundle_spec(
        &p,
        &c,
        &image(),
        &env(),
        &BTreeMap::new(),
        Path::new("/t"),
        &PodNetwork::Path("/var/run/netns/p".into()),
    )
    .unwrap();
    assert!(!spec.readonly_root);
    assert_eq!(
        spec.network,
        crate::oci::Network::Path("/var/run/netns/p".into())
    );
}

#[test]
fn an_image_runs_from_the_archive_named_after_its_repository() {
    let dir =
        std::env::temp_dir().join(format!("orrery-container-archives-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("operator.tar"), b"x").unwrap();
    assert_eq!(
        archive_for(&dir, "localhost/orrery/operator:dev"),
        Some(dir.join("operator.tar"))
    );
    assert_eq!(archive_for(&dir, "localhost/orrery/runner:dev"), None);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn container_ids_are_unique_per_pod_uid_and_container() {
    let p = pod(json!({ "containers": [] }));
    assert_eq!(
        container_id(&p, "controller"),
        "orrery-1234-abcd-controller"
    );
    assert_ne!(container_id(&p, "controller"), container_id(&p, "sidecar"));
}

#[test]
fn fs_group_makes_a_0400_secret_file_group_readable_and_an_empty_dir_group_writable() {
    let dir = std::env::temp_dir().join(format!("orrery-container-fsgroup-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("secret/sub")).unwrap();
    std::fs::write(dir.join("secret/sub/key"), b"k").unwrap();
    std::fs::set_permissions(
        dir.join("secret/sub/key"),
        std::fs::Permissions::from_mode(0o400),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("scratch")).unwrap();
    std::fs::set_permissions(dir.join("scratch"), std::fs::Permissions::from_mode(0o755)).unwrap();
    // Any group this process may give: the directory's own (root may give any).
    let gid = std::os::unix::fs::MetadataExt::gid(&std::fs::metadata(&dir).unwrap());
    apply_fs_group(&dir.join("secret"), gid, false).unwrap();
    apply_fs_group(&dir.join("scratch"), gid, true).unwrap();
    let mode = |p: &str| std::fs::metadata(dir.join(p)).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode("secret/sub/key"), 0o440);
    assert_eq!(mode("secret/sub") & 0o2050, 0o2050);
    assert_eq!(mode("scratch"), 0o2775);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_writable_root_is_a_private_copy_with_modes_and_symlinks_kept() {
    let dir = std::env::temp_dir().join(format!("orrery-container-copy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let from = dir.join("from");
    std::fs::create_dir_all(from.join("usr/local/bin")).unwrap();
    std::fs::write(from.join("usr/local/bin/tool"), b"#!").unwrap();
    std::fs::set_permissions(
        from.join("usr/local/bin/tool"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::create_dir_all(from.join("tmp")).unwrap();
    std::fs::set_permissions(from.join("tmp"), std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::os::unix::fs::symlink("usr/local/bin", from.join("bin")).unwrap();
    let to = dir.join("to");
    copy_rootfs(&from, &to).unwrap();
    let mode = |p: &str| std::fs::metadata(to.join(p)).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode("usr/local/bin/tool"), 0o755);
    assert_eq!(mode("tmp"), 0o1777);
    assert_eq!(
        std::fs::read_link(to.join("bin")).unwrap(),
        PathBuf::from("usr/local/bin")
    );
    std::fs::write(to.join("usr/local/bin/tool"), b"changed").unwrap();
    assert_eq!(
        std::fs::read(from.join("usr/local/bin/tool")).unwrap(),
        b"#!"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
