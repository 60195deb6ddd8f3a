#![allow(clippy::expect_used, clippy::panic)]
use super::*;
use crate::oci::unpack::tests::{E, layer, scratch};
use std::io::Write;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).expect("gzip");
    encoder.finish().expect("gzip")
}

fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

fn descriptor(media_type: &str, bytes: &[u8]) -> serde_json::Value {
    serde_json::json!({ "mediaType": media_type, "digest": digest(bytes), "size": bytes.len() })
}

/// An oci-archive of an image with the given layers (media type, bytes) and config, as
/// `buildah push … oci-archive:` lays it out; `tamper` changes a blob after its digest is taken.
fn archive(
    dir: &Path,
    layers: &[(&str, Vec<u8>)],
    config: serde_json::Value,
    tamper: bool,
) -> PathBuf {
    let config = serde_json::to_vec(&config).expect("config");
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": descriptor("application/vnd.oci.image.config.v1+json", &config),
        "layers": layers.iter().map(|(t, b)| descriptor(t, b)).collect::<Vec<_>>(),
    }))
    .expect("manifest");
    let index = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "manifests": [descriptor("application/vnd.oci.image.manifest.v1+json", &manifest)],
    }))
    .expect("index");
    let mut blobs: Vec<(String, Vec<u8>)> = vec![
        (digest(&config), config.clone()),
        (digest(&manifest), manifest.clone()),
    ];
    for (_, original) in layers {
        let mut bytes = original.clone();
        if tamper {
            bytes.push(0);
        }
        blobs.push((digest(original), bytes));
    }
    let mut builder = tar::Builder::new(Vec::new());
    let mut add = |name: &str, data: &[u8]| {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder
            .append_data(&mut header, name, data)
            .expect("append");
    };
    add("oci-layout", br#"{"imageLayoutVersion":"1.0.0"}"#);
    add("index.json", &index);
    for (d, bytes) in &blobs {
        add(
            &format!("blobs/sha256/{}", d.trim_start_matches("sha256:")),
            bytes,
        );
    }
    let path = dir.join("image.tar");
    std::fs::write(&path, builder.into_inner().expect("tar")).expect("write");
    path
}

fn config() -> serde_json::Value {
    serde_json::json!({
        "architecture": "amd64", "os": "linux",
        "config": {
            "User": "65532:65532",
            "Env": ["PATH=/usr/local/bin:/usr/bin"],
            "Entrypoint": ["/usr/local/bin/orrery"],
            "Cmd": null,
            "WorkingDir": "/work",
            "Labels": { "org.opencontainers.image.title": "orrery-runner" }
        },
        "rootfs": { "type": "layers", "diff_ids": [] }
    })
}

#[test]
fn the_image_config_is_read_as_typed_fields() {
    let dir = scratch("archive-config");
    let path = archive(&dir, &[], config(), false);
    let image = OciArchive::open(&path).expect("open");
    let c = image.config();
    assert_eq!(c.user, "65532:65532");
    assert_eq!(c.numeric_user(), Some((65532, 65532)));
    assert_eq!(c.entrypoint, ["/usr/local/bin/orrery"]);
    assert!(c.cmd.is_empty(), "a null Cmd is empty");
    assert_eq!(c.env, ["PATH=/usr/local/bin:/usr/bin"]);
    assert_eq!(c.cwd(), "/work");
    assert_eq!(c.labels["org.opencontainers.image.title"], "orrery-runner");
    assert_eq!((c.os.as_str(), c.architecture.as_str()), ("linux", "amd64"));
    assert_eq!(
        c.argv(&["--version"]),
        ["/usr/local/bin/orrery", "--version"]
    );
}

#[test]
fn the_user_field_is_numeric_uid_and_gid_or_not_at_all() {
    for (user, want) in [
        ("", Some((0, 0))),
        ("65532", Some((65532, 0))),
        ("65532:65533", Some((65532, 65533))),
        ("nonroot", None),
        ("1000:staff", None),
    ] {
        let c = ImageConfig {
            user: user.to_owned(),
            ..ImageConfig::default()
        };
        assert_eq!(c.numeric_user(), want, "{user:?}");
    }
    let c = ImageConfig {
        entrypoint: vec!["/e".into()],
        cmd: vec!["default".into()],
        ..ImageConfig::default()
    };
    assert_eq!(c.argv(&[]), ["/e", "default"]);
    assert_eq!(c.argv(&["given"]), ["/e", "given"]);
    assert_eq!(c.cwd(), "/");
}

#[test]
fn layers_gzip_or_not_are_applied_in_order() {
    let dir = scratch("archive-layers");
    let lower = gzip(&layer(&[
        E::File("etc/a", 0o644, b"a"),
        E::File("etc/b", 0o644, b"b"),
    ]));
    let upper = layer(&[
        E::File("etc/.wh.a", 0o644, b""),
        E::File("etc/b", 0o600, b"b2"),
    ]);
    let path = archive(
        &dir,
        &[
            ("application/vnd.oci.image.layer.v1.tar+gzip", lower),
            ("application/vnd.oci.image.layer.v1.tar", upper),
        ],
        config(),
        false,
    );
    let image = OciArchive::open(&path).expect("open");
    assert_eq!(image.layer_count(), 2);
    let rootfs = dir.join("bundle/rootfs");
    let stats = image.unpack(&rootfs).expect("unpack");
    assert!(!rootfs.join("etc/a").exists());
    assert_eq!(std::fs::read(rootfs.join("etc/b")).expect("b"), b"b2");
    assert_eq!((stats.files, stats.whiteouts), (3, 1));
}

#[test]
fn a_blob_that_does_not_match_its_digest_is_refused_before_anything_is_written() {
    let dir = scratch("archive-tamper");
    let lower = layer(&[E::File("x", 0o644, b"x")]);
    let path = archive(
        &dir,
        &[("application/vnd.oci.image.layer.v1.tar", lower)],
        config(),
        true,
    );
    let image = OciArchive::open(&path).expect("config and manifest are intact");
    let rootfs = dir.join("rootfs");
    let err = image.unpack(&rootfs).expect_err("tampered");
    assert!(matches!(err, OciError::Digest { .. }), "{err}");
    assert!(err.to_string().contains("rebuild it"), "{err}");
    assert!(!rootfs.join("x").exists());
}

#[test]
fn a_tar_that_is_not_an_image_layout_says_how_to_make_one() {
    let dir = scratch("archive-not");
    let path = dir.join("not.tar");
    std::fs::write(&path, layer(&[E::File("hello", 0o644, b"hi")])).expect("write");
    let err = OciArchive::open(&path).expect_err("not a layout");
    assert!(err.to_string().contains("oci-archive:FILE"), "{err}");
    let err = OciArchive::open(&dir.join("missing.tar")).expect_err("missing");
    assert!(err.to_string().contains("missing.tar"), "{err}");
}
