//! The trusted keys of a signed agent card that live in a ConfigMap
//! (`spec.a2a.cardSignature.jwksConfigMapRef`, issue 27 §1): read by name (never listed or
//! watched) when the entry is checked and when a run starts, and put in the entry's `jwks`, so
//! the probe pod and the runner see one key set in one field. Its own module: the registry and
//! run controllers both read entries through it.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use orrery_crds::registry::RegistryEntry;

/// The field a problem of the reference is reported at.
pub const FIELD: &str = "spec.a2a.cardSignature.jwksConfigMapRef";

/// Why a referenced key set cannot be used: what is wrong and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeySetProblem {
    /// What is wrong.
    pub problem: String,
    /// How to fix it.
    pub fix: String,
}

/// Puts the key set `entry`'s `jwksConfigMapRef` names into its `jwks` (and drops the
/// reference), reading the ConfigMap from `api`. `Ok(None)`: done, or nothing to do;
/// `Ok(Some(problem))`: the ConfigMap, its key or its key set is not usable, and the entry is
/// left as it was.
pub async fn resolve(
    api: &Api<ConfigMap>,
    entry: &mut RegistryEntry,
) -> Result<Option<KeySetProblem>, kube::Error> {
    let Some(signature) = entry
        .spec
        .a2a
        .as_mut()
        .and_then(|a| a.card_signature.as_mut())
    else {
        return Ok(None);
    };
    let Some(reference) = signature.jwks_config_map_ref.clone() else {
        return Ok(None);
    };
    let text = match api.get_opt(&reference.name).await? {
        None => {
            return Ok(Some(KeySetProblem {
                problem: format!(
                    "ConfigMap {:?} does not exist in this namespace",
                    reference.name
                ),
                fix: format!(
                    "create it with the agent's public key set: kubectl create configmap {} --from-file={}=jwks.json",
                    reference.name, reference.key
                ),
            }));
        }
        Some(map) => map.data.and_then(|mut d| d.remove(&reference.key)),
    };
    let Some(text) = text else {
        return Ok(Some(KeySetProblem {
            problem: format!(
                "ConfigMap {:?} has no key {:?} (in data)",
                reference.name, reference.key
            ),
            fix: "add the key set under that key, or fix jwksConfigMapRef.key".into(),
        }));
    };
    if let Err(e) = orrery_crds::jwks::parse_jwks(text.as_bytes()) {
        return Ok(Some(KeySetProblem {
            problem: format!(
                "the key set in ConfigMap {:?} key {:?}: {e}",
                reference.name, reference.key
            ),
            fix: "give the agent's public key set as JSON ({\"keys\": [...]}), each key with a unique kid".into(),
        }));
    }
    signature.jwks = Some(text);
    signature.jwks_config_map_ref = None;
    Ok(None)
}
