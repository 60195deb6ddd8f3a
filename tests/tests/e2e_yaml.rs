//! The apiserver and `orrery validate` read a manifest's YAML alike (issue 22 §9, rule 1.81):
//! every row of YAML 1.1's scalars (`crds/tests/fixtures/yaml-1-1.txt`) goes, as a string field
//! and as an integer field of a Composition, to the real kube-apiserver as YAML (`Content-Type:
//! application/yaml`, which it decodes with the sigs.k8s.io/yaml kubectl uses) with `dryRun=All`,
//! and to `orrery validate`'s reading and checks. Both must refuse or both accept; when both
//! accept, the field holds the same value, the table's; when both refuse a type, the apiserver's
//! message holds ours. And `kubectl apply` itself refuses `instruction: yes` in the words
//! `orrery validate` prints.
//!
//! Control plane: `ORRERY_TESTENV_KUBECONFIG` (set by `tests/e2e.sh`), else one started for
//! this test binary.

use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use orrery_crds::budget::BudgetLimits;
use orrery_crds::manifest::{Format, ManifestSet, Resource, check};
use orrery_crds::validate::DeploymentLimits;
use orrery_tests::harness::{TestNamespace, ensure_crds, run_kubectl, workspace_root};
use orrery_tests::testenv::{self, ADMIN};
use serde_json::Value;

/// The Scripted model entry the Composition's node names, for `orrery validate` (the apiserver
/// gets the Composition alone).
const ENTRY: &str = "apiVersion: studio.orrery.dev/v1alpha1
kind: RegistryEntry
metadata:
  name: scripted
spec:
  model:
    provider: Scripted
    model: scripted-v1
    script:
      nodes: {}
";

/// The rows of the table: the text after `v: `, and the JSON value the apiserver reads (`Err`:
/// the words of the refusal).
fn table() -> Result<Vec<(String, Result<Value, String>)>> {
    let path = workspace_root().join("crds/tests/fixtures/yaml-1-1.txt");
    let text = std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
    let mut rows = Vec::new();
    for line in text.lines() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut stream = serde_json::Deserializer::from_str(line).into_iter::<String>();
        let scalar = stream.next().context("a row's text")??;
        let rest = line[stream.byte_offset()..].trim_start();
        let rest = rest.strip_prefix("=> ").context("a row's `=>`")?;
        let want = match rest.strip_prefix("refused: ") {
            Some(words) => Err(words.to_owned()),
            None => Ok(serde_json::from_str(rest)?),
        };
        rows.push((scalar, want));
    }
    Ok(rows)
}

/// Where a row's text goes.
#[derive(Clone, Copy, Debug)]
enum Field {
    /// `spec.nodes[0].instruction`, a string.
    Instruction,
    /// `spec.budgets.maxTokens`, an int64 of at least 1.
    MaxTokens,
}

impl Field {
    fn pointer(self) -> &'static str {
        match self {
            Field::Instruction => "/spec/nodes/0/instruction",
            Field::MaxTokens => "/spec/budgets/maxTokens",
        }
    }

    /// A Composition with the row's text as the field, written last and without a final line
    /// break, as in the table (a block scalar then keeps no line break).
    fn composition(self, scalar: &str) -> String {
        let head = "apiVersion: studio.orrery.dev/v1alpha1
kind: Composition
metadata:
  name: yaml-row
spec:
  pattern: Pipeline
  nodes:
    - id: writer
      kind: LLMAgent
      model: scripted
";
        match self {
            Field::Instruction => {
                format!(
                    "{head}      instruction: {}",
                    scalar.replace('\n', "\n      ")
                )
            }
            Field::MaxTokens => format!(
                "{head}      instruction: write\n  budgets:\n    maxTokens: {}",
                scalar.replace('\n', "\n    ")
            ),
        }
    }
}

/// What one reader made of a manifest.
#[derive(Debug)]
enum Verdict {
    /// Accepted, the field holding this value (null: absent).
    Accepted(Value),
    /// Refused, with the messages.
    Refused(String),
}

/// `orrery validate`'s verdict: the Composition and the entry read and checked as the CLI does,
/// with no budget ceiling (a deployment's ceiling is the operator's rule, unknown to the
/// apiserver).
fn orrery(composition: &str, field: Field) -> Verdict {
    let mut set = ManifestSet::default();
    // The entry first: the Composition ends the text as it ends the apiserver's request.
    let text = format!("{ENTRY}---\n{composition}");
    if let Err(error) = set.add_text(Path::new("row.yaml"), &text, Format::Yaml) {
        return Verdict::Refused(error.to_string());
    }
    let limits = DeploymentLimits {
        ceilings: BudgetLimits {
            max_tokens: u64::MAX,
            ..BudgetLimits::DEFAULT_CEILINGS
        },
        ..DeploymentLimits::default()
    };
    let report = check(&set, &limits);
    if !report.is_valid() {
        let messages: Vec<String> = report
            .findings
            .iter()
            .map(|f| format!("{}: {}", f.issue.field, f.issue.message))
            .collect();
        return Verdict::Refused(messages.join("\n"));
    }
    let value = set
        .resources
        .iter()
        .find_map(|r| match &r.resource {
            Resource::Composition(c) => serde_json::to_value(c).ok(),
            _ => None,
        })
        .and_then(|c| c.pointer(field.pointer()).cloned())
        .unwrap_or(Value::Null);
    Verdict::Accepted(value)
}

/// The apiserver's verdict on the Composition sent as YAML with `dryRun=All`.
async fn apiserver(
    client: &kube::Client,
    namespace: &str,
    composition: &str,
    field: Field,
) -> Result<Verdict> {
    let request = http::Request::post(format!(
        "/apis/studio.orrery.dev/v1alpha1/namespaces/{namespace}/compositions?dryRun=All&fieldValidation=Strict"
    ))
    .header("Content-Type", "application/yaml")
    .header("Accept", "application/json")
    .body(composition.as_bytes().to_vec())?;
    match client.request_text(request).await {
        Ok(text) => {
            let stored: Value = serde_json::from_str(&text)?;
            let value = stored
                .pointer(field.pointer())
                .cloned()
                .unwrap_or(Value::Null);
            Ok(Verdict::Accepted(value))
        }
        Err(kube::Error::Api(status)) => Ok(Verdict::Refused(status.message.clone())),
        Err(other) => Err(other.into()),
    }
}

/// The apiserver's own words in one of our type findings (before our hint on quoting).
fn apiserver_words(finding: &str) -> Option<&str> {
    finding
        .lines()
        .find(|line| line.contains(" in body must be of type "))
        .map(|line| line.split(" (").next().unwrap_or(line))
}

#[tokio::test]
async fn the_apiserver_and_orrery_validate_read_every_yaml_1_1_scalar_alike_rule_1_81() -> Result<()>
{
    let env = testenv::shared_async().await?;
    ensure_crds(env).await?;
    let ns = TestNamespace::create(env, "yaml").await?;
    let client = env.admin().await?;
    let rows = table()?;
    ensure!(rows.len() > 100, "{} rows", rows.len());
    let mut problems = Vec::new();
    let (mut accepted, mut refused) = (0, 0);
    for (scalar, want) in &rows {
        for field in [Field::Instruction, Field::MaxTokens] {
            let composition = field.composition(scalar);
            let ours = orrery(&composition, field);
            let theirs = apiserver(&client, &ns.name, &composition, field).await?;
            let row = format!("{scalar:?} as {field:?}");
            match (&ours, &theirs) {
                (Verdict::Accepted(mine), Verdict::Accepted(stored)) => {
                    accepted += 1;
                    if mine != stored {
                        problems.push(format!("{row}: orrery read {mine}, the apiserver {stored}"));
                    }
                    if let Ok(value) = want
                        && value != stored
                    {
                        problems.push(format!(
                            "{row}: the table says {value}, the apiserver {stored}"
                        ));
                    }
                }
                (Verdict::Refused(mine), Verdict::Refused(message)) => {
                    refused += 1;
                    if let Some(words) = apiserver_words(mine)
                        && !message.contains(words)
                    {
                        problems.push(format!(
                            "{row}: the apiserver said {message:?}, not {words:?}"
                        ));
                    }
                    if let Err(words) = want
                        && !(mine.contains(words.as_str()) && message.contains(words.as_str()))
                    {
                        problems.push(format!(
                            "{row}: {words:?} should be in both refusals: orrery {mine:?}, the apiserver {message:?}"
                        ));
                    }
                }
                _ => problems.push(format!("{row}: orrery {ours:?}, the apiserver {theirs:?}")),
            }
        }
    }
    println!(
        "{} rows as 2 fields: {accepted} accepted by both, {refused} refused by both, {} disagreements",
        rows.len(),
        problems.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    Ok(())
}

#[tokio::test]
async fn kubectl_apply_and_orrery_validate_refuse_an_unquoted_yes_in_the_same_words_rule_1_81()
-> Result<()> {
    let env = testenv::shared_async().await?;
    ensure_crds(env).await?;
    let ns = TestNamespace::create(env, "yaml-kubectl").await?;
    let dir = std::env::temp_dir().join(format!("orrery-e2e-yaml-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    for (scalar, words) in [
        (
            "yes",
            "spec.nodes[0].instruction: Invalid value: \"boolean\": spec.nodes[0].instruction in body must be of type string: \"boolean\"",
        ),
        (
            "0777",
            "spec.nodes[0].instruction: Invalid value: \"integer\": spec.nodes[0].instruction in body must be of type string: \"integer\"",
        ),
        (".inf", "json: unsupported value: +Inf"),
    ] {
        let composition = Field::Instruction.composition(scalar);
        let path = dir.join("composition.yaml");
        std::fs::write(&path, &composition)?;
        let out = run_kubectl(
            env,
            ADMIN,
            &[
                "apply",
                "--dry-run=server",
                "-n",
                &ns.name,
                "-f",
                &path.to_string_lossy(),
            ],
        )
        .await?;
        if out.success {
            bail!("kubectl accepted instruction: {scalar}: {}", out.stdout);
        }
        ensure!(
            out.stderr.contains(words),
            "kubectl, {scalar}: {}",
            out.stderr
        );
        match orrery(&composition, Field::Instruction) {
            Verdict::Refused(mine) => ensure!(
                mine.contains(words)
                    || mine.contains(words.trim_start_matches("json: unsupported value: ")),
                "orrery, {scalar}: {mine}"
            ),
            accepted => bail!("orrery accepted instruction: {scalar}: {accepted:?}"),
        }
        // Quoted, both accept it as text.
        let quoted = Field::Instruction.composition(&format!("\"{scalar}\""));
        std::fs::write(&path, &quoted)?;
        let out = run_kubectl(
            env,
            ADMIN,
            &[
                "apply",
                "--dry-run=server",
                "-n",
                &ns.name,
                "-f",
                &path.to_string_lossy(),
            ],
        )
        .await?;
        ensure!(out.success, "kubectl, \"{scalar}\": {}", out.stderr);
        ensure!(
            matches!(orrery(&quoted, Field::Instruction), Verdict::Accepted(Value::String(ref s)) if s == scalar),
            "orrery, \"{scalar}\""
        );
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
