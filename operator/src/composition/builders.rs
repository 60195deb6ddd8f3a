//! Immutable Composition revisions: one ControllerRevision per generation, owned by the
//! Composition (deleted with it), numbered by the generation, holding the spec; the newest
//! [`REVISION_HISTORY_LIMIT`] are kept. A StudioRun names the revision it ran.

use crate::error::{Error, Result};
use crate::revisions::{COMPOSITION_UID_LABEL, revision_name};
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use kube::Resource;
use orrery_crds::Composition;
use std::collections::BTreeMap;

/// Revisions kept per Composition (the seeds keep the latest 50 versions).
pub const REVISION_HISTORY_LIMIT: usize = 50;
/// Annotation on every revision: its Composition's name, for people.
pub const COMPOSITION_NAME_ANNOTATION: &str = "studio.orrery.dev/composition";

/// The revision the Composition's current generation is recorded as (its generation).
pub fn current_revision(composition: &Composition) -> Result<i64> {
    composition
        .metadata
        .generation
        .ok_or_else(|| missing(composition, "generation"))
}

fn missing(composition: &Composition, field: &'static str) -> Error {
    Error::MissingMetadata {
        kind: "Composition",
        name: composition.metadata.name.clone().unwrap_or_default(),
        field,
    }
}

/// The ControllerRevision recording the Composition's current generation: named by
/// [`revision_name`], in its namespace, labelled with its UID, owned by it (controller), with
/// `revision` = the generation and `data` = the spec. Creating it twice is harmless: on
/// AlreadyExists compare with [`same_data`].
pub fn controller_revision(composition: &Composition) -> Result<ControllerRevision> {
    let name = composition
        .metadata
        .name
        .clone()
        .ok_or_else(|| missing(composition, "name"))?;
    let uid = composition
        .metadata
        .uid
        .clone()
        .ok_or_else(|| missing(composition, "uid"))?;
    let namespace = composition
        .metadata
        .namespace
        .clone()
        .ok_or_else(|| missing(composition, "namespace"))?;
    let revision = current_revision(composition)?;
    let owner = composition
        .controller_owner_ref(&())
        .ok_or_else(|| missing(composition, "uid"))?;
    let data =
        serde_json::to_value(&composition.spec).map_err(|e| Error::json("composition spec", e))?;
    Ok(ControllerRevision {
        metadata: ObjectMeta {
            name: Some(revision_name(&name, revision)),
            namespace: Some(namespace),
            labels: Some(BTreeMap::from([(COMPOSITION_UID_LABEL.to_owned(), uid)])),
            annotations: Some(BTreeMap::from([(
                COMPOSITION_NAME_ANNOTATION.to_owned(),
                name,
            )])),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        data: Some(RawExtension(data)),
        revision,
    })
}

/// Whether an existing revision holds the same number and spec as the one wanted (then an
/// AlreadyExists on create is success; otherwise the stored one was tampered with).
pub fn same_data(existing: &ControllerRevision, wanted: &ControllerRevision) -> bool {
    existing.revision == wanted.revision && existing.data == wanted.data
}

/// The revision numbered `number` among `revisions`.
pub fn find_revision(revisions: &[ControllerRevision], number: i64) -> Option<&ControllerRevision> {
    revisions.iter().find(|r| r.revision == number)
}

/// The names of the revisions to delete so that only the newest `keep` (by revision number)
/// remain, oldest first.
pub fn revisions_to_prune(revisions: &[ControllerRevision], keep: usize) -> Vec<String> {
    let mut by_age: Vec<&ControllerRevision> = revisions.iter().collect();
    by_age.sort_by_key(|r| std::cmp::Reverse(r.revision));
    let mut old: Vec<&ControllerRevision> = by_age.into_iter().skip(keep).collect();
    old.sort_by_key(|r| r.revision);
    old.into_iter()
        .filter_map(|r| r.metadata.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::revisions::spec_of;
    use orrery_crds::CompositionSpec;

    fn composition(name: &str, generation: i64) -> Composition {
        let spec: CompositionSpec = serde_yaml::from_str(
            "{pattern: Pipeline, nodes: [{id: a, kind: LLMAgent, model: m, instruction: do}]}",
        )
        .expect("spec");
        let mut c = Composition::new(name, spec);
        c.metadata.generation = Some(generation);
        c.metadata.namespace = Some("team".into());
        c.metadata.uid = Some("0000-uid".into());
        c
    }

    fn numbered(n: i64) -> ControllerRevision {
        ControllerRevision {
            metadata: ObjectMeta {
                name: Some(revision_name("notes", n)),
                ..ObjectMeta::default()
            },
            data: None,
            revision: n,
        }
    }

    #[test]
    fn a_revision_is_owned_numbered_labelled_and_holds_the_spec() {
        let c = composition("notes", 7);
        let rev = controller_revision(&c).expect("revision");
        assert_eq!(rev.metadata.name.as_deref(), Some("notes-r7"));
        assert_eq!(rev.metadata.namespace.as_deref(), Some("team"));
        assert_eq!(rev.revision, 7);
        let owner = rev
            .metadata
            .owner_references
            .as_deref()
            .and_then(<[_]>::first)
            .expect("owner");
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
            ("Composition", "notes", "0000-uid")
        );
        assert_eq!(owner.api_version, "studio.orrery.dev/v1alpha1");
        assert_eq!(owner.controller, Some(true));
        assert_eq!(
            rev.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(COMPOSITION_UID_LABEL))
                .map(String::as_str),
            Some("0000-uid")
        );
        assert_eq!(spec_of(&rev).expect("spec back"), c.spec);
        assert!(same_data(&rev, &controller_revision(&c).expect("again")));
        let mut changed = composition("notes", 7);
        changed.spec.description = Some("edited".into());
        assert!(!same_data(
            &rev,
            &controller_revision(&changed).expect("changed")
        ));
    }

    #[test]
    fn a_composition_not_read_from_the_cluster_names_what_it_lacks() {
        for (field, strip) in [
            (
                "uid",
                (|c: &mut Composition| c.metadata.uid = None) as fn(&mut Composition),
            ),
            ("namespace", |c| c.metadata.namespace = None),
            ("generation", |c| c.metadata.generation = None),
        ] {
            let mut c = composition("notes", 1);
            strip(&mut c);
            match controller_revision(&c) {
                Err(Error::MissingMetadata { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: expected MissingMetadata, got {other:?}"),
            }
        }
    }

    #[test]
    fn a_long_composition_name_gives_a_valid_distinct_revision_name() {
        let long_a = "a".repeat(253);
        let long_b = format!("{}b", "a".repeat(252));
        let a = revision_name(&long_a, 12);
        let b = revision_name(&long_b, 12);
        assert!(a.len() <= 253 && b.len() <= 253, "{} {}", a.len(), b.len());
        assert!(a.ends_with("-r12"));
        assert_ne!(a, b, "the hash keeps names that share a prefix apart");
        assert_eq!(revision_name("notes", 3), "notes-r3");
    }

    #[test]
    fn pruning_keeps_the_newest_and_lists_the_rest_oldest_first() {
        let revisions: Vec<ControllerRevision> =
            [5, 1, 4, 2, 3].into_iter().map(numbered).collect();
        let cases: [(usize, &[&str]); 4] = [
            (5, &[]),
            (9, &[]),
            (3, &["notes-r1", "notes-r2"]),
            (
                0,
                &["notes-r1", "notes-r2", "notes-r3", "notes-r4", "notes-r5"],
            ),
        ];
        for (keep, want) in cases {
            assert_eq!(revisions_to_prune(&revisions, keep), want, "keep {keep}");
        }
        let many: Vec<ControllerRevision> = (1..=52).map(numbered).collect();
        assert_eq!(
            revisions_to_prune(&many, REVISION_HISTORY_LIMIT),
            ["notes-r1", "notes-r2"]
        );
        assert_eq!(find_revision(&many, 7).map(|r| r.revision), Some(7));
        assert!(find_revision(&many, 99).is_none());
    }
}
