// The inspector (rules 12.15–12.18, 12.26–12.28): what is selected on the canvas, a node or an
// edge, with its fields, and the composition's own (pattern, description, budgets within the
// ceilings) with every finding listed. Each field's help is the published schema's description
// (as `kubectl explain` gives it). Typing in a field is one undoable step per field; an id is
// renamed when the field is left or Enter is pressed, and every edge follows it.

import { useId, useState, type ReactNode } from 'react';
import { BUDGET_KEYS, type BudgetKey } from '../api/trace.ts';
import type { CanvasDocument, CanvasEdge, CanvasNode } from '../canvas/document.ts';
import { connect, removeEdge, removeNode, renameNode, routeLabels, setBudgets, setComposition, setEdgeFields, setNodeFields, swapRoutes } from '../canvas/edit.ts';
import { findingsOnEdge, findingsOnNode, locText, type PlacedFinding, type PlacedFindings } from '../canvas/findings.ts';
import type { Edit } from '../canvas/store.ts';
import type { RegistryItem } from '../api/registry.ts';
import type { EditError } from '../canvas/edit.ts';
import { button, dangerButton, input, muted } from '../ui/classes.ts';
import type { Capabilities } from './capabilities.ts';
import type { Selection } from './EditGraph.tsx';
import { fieldHelp } from './help.ts';
import { modelChoice, modelFlag } from './model-choice.ts';
import { ToolPicker } from './ToolPicker.tsx';
import { toolChoices } from './tool-picker.ts';

type Apply = (change: Edit, group?: string) => EditError | null;

interface Common {
  readonly doc: CanvasDocument;
  readonly findings: PlacedFindings;
  readonly capabilities: Capabilities | null;
  /** The published JSON Schema of `Composition.spec`, for help. */
  readonly schema: Readonly<Record<string, unknown>> | null;
  /** The namespace's registry, or null until it has been read. */
  readonly registry: readonly RegistryItem[] | null;
  /** Why the registry could not be read, if it could not. */
  readonly registryProblem: string | null;
  readonly readOnly: boolean;
  readonly apply: Apply;
  readonly onSelect: (selection: Selection) => void;
}

/** Which node fields a kind takes (composition.rs: instruction and model for the nodes that call a model; tools for LLMAgent and Supervisor only, validate/kinds.rs; a prompt for an approval; children for a supervisor). */
export function fieldsOf(kind: string): { readonly model: boolean; readonly tools: boolean; readonly labels: boolean; readonly prompt: boolean; readonly children: boolean } {
  const modelled = kind === 'LLMAgent' || kind === 'Router' || kind === 'Supervisor';
  return { model: modelled, tools: kind === 'LLMAgent' || kind === 'Supervisor', labels: kind === 'LLMAgent' || kind === 'Router', prompt: kind === 'HumanApproval', children: kind === 'Supervisor' };
}

/**
 * The model field (12.18): the models this deployment lets a node name, and what a node without
 * one runs; a model outside them (from an import, a template) stays shown, flagged in the
 * server's words. Until anything is known of the models, a text field.
 */
function ModelField({ node, registry, capabilities, help, problems, readOnly, onChange }: { readonly node: CanvasNode; readonly registry: readonly RegistryItem[] | null; readonly capabilities: Capabilities | null; readonly help: string | null; readonly problems: readonly PlacedFinding[]; readonly readOnly: boolean; readonly onChange: (model: string) => void }) {
  const { usable, fallback } = modelChoice(registry, capabilities);
  // The server's finding on the field, once it has one, says it in its own words: the page's flag is for until then.
  const flag = problems.length > 0 ? null : modelFlag(node.id, node.model, registry, capabilities);
  const current = node.model ?? '';
  const emptyLabel =
    fallback === null ? (usable === null || capabilities === null ? 'The deployment’s default' : 'Choose a model') : fallback === capabilities?.defaultModel ? `The deployment’s default (${fallback})` : `The only model here (${fallback})`;
  return (
    <Field label="Model" help={help} problems={problems}>
      {(id, describedBy) => {
        const flagId = `${id}-flag`;
        const described = [describedBy, flag === null ? undefined : flagId].filter((x) => x !== undefined).join(' ') || undefined;
        return (
          <>
            {usable === null ? (
              <input id={id} className={`${input} font-mono`} value={current} readOnly={readOnly} aria-describedby={described} aria-invalid={flag === null ? undefined : true} placeholder="the deployment’s default" onChange={(e) => { onChange(e.target.value); }} />
            ) : (
              <select id={id} className={`${input} font-mono`} value={current} disabled={readOnly} aria-describedby={described} aria-invalid={flag === null ? undefined : true} onChange={(e) => { onChange(e.target.value); }}>
                <option value="">{emptyLabel}</option>
                {usable.map((m) => (
                  <option key={m} value={m}>
                    {m}
                  </option>
                ))}
                {current === '' || usable.includes(current) ? null : <option value={current}>{current} (not usable here)</option>}
              </select>
            )}
            {flag === null ? null : (
              <p id={flagId} className="text-sm text-amber-900 dark:text-amber-100">
                <span aria-hidden="true">! </span>
                The server will refuse this: {flag}.
              </p>
            )}
          </>
        );
      }}
    </Field>
  );
}

function Field({ label, help, children, problems }: { readonly label: string; readonly help: string | null; readonly children: (id: string, describedBy: string | undefined) => ReactNode; readonly problems?: readonly PlacedFinding[] }) {
  const id = useId();
  const helpId = help === null ? undefined : `${id}-help`;
  const problemId = problems === undefined || problems.length === 0 ? undefined : `${id}-problems`;
  const describedBy = [helpId, problemId].filter((x) => x !== undefined).join(' ') || undefined;
  return (
    <div className="flex flex-col gap-1">
      <label htmlFor={id} className="text-sm font-medium">
        {label}
      </label>
      {children(id, describedBy)}
      {problemId === undefined ? null : (
        <ul id={problemId} className="flex flex-col gap-0.5 text-sm text-red-800 dark:text-red-200">
          {problems?.map((p, i) => (
            <li key={i}>
              <span aria-hidden="true">✗ </span>
              {p.finding.message}
            </li>
          ))}
        </ul>
      )}
      {helpId === undefined ? null : (
        <p id={helpId} className={`text-xs ${muted}`}>
          {help}
        </p>
      )}
    </div>
  );
}

function FindingList({ title, findings, onShow }: { readonly title: string; readonly findings: PlacedFindings; readonly onShow?: (p: PlacedFinding) => void }) {
  const all = [...findings.errors.map((f) => ['error', f] as const), ...findings.warnings.map((f) => ['warning', f] as const)];
  if (all.length === 0) return null;
  return (
    <section aria-label={title} className="flex flex-col gap-1">
      <h3 className="text-sm font-semibold">{title}</h3>
      <ul className="flex flex-col gap-1">
        {all.map(([level, p], i) => (
          <li key={i} className={`rounded border px-2 py-1 text-sm ${level === 'error' ? 'border-red-700 text-red-900 dark:border-red-400 dark:text-red-100' : 'border-amber-700 text-amber-900 dark:border-amber-300 dark:text-amber-100'}`}>
            <span className="font-semibold">{level === 'error' ? '✗ Error' : '! Warning'}</span> <code className="font-mono text-xs">{locText(p.finding.loc)}</code>: {p.finding.message}{' '}
            {onShow === undefined || p.target.kind === 'composition' || p.target.kind === 'budgets' ? null : (
              <button type="button" className="underline underline-offset-2" onClick={() => { onShow(p); }}>
                Show
              </button>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}

function on(findings: PlacedFindings, field: string): PlacedFinding[] {
  return findings.errors.filter((p) => (p.target.kind === 'node' || p.target.kind === 'edge') && p.target.field === field);
}

export function NodeInspector({ node, ...common }: Common & { readonly node: CanvasNode }) {
  const { doc, findings, capabilities, schema, registry, registryProblem, readOnly, apply, onSelect } = common;
  const [idDraft, setIdDraft] = useState<{ readonly key: string; readonly text: string } | null>(null);
  const [idError, setIdError] = useState<string | null>(null);
  const [target, setTarget] = useState('');
  const [connectError, setConnectError] = useState<string | null>(null);
  const mine = findingsOnNode(findings, node.key);
  const fields = fieldsOf(node.kind);
  const help = (field: string): string | null => fieldHelp(schema, ['nodes', field]);
  const set = (field: string, change: Parameters<typeof setNodeFields>[2]): void => {
    apply((d) => setNodeFields(d, node.key, change), `node:${node.key}:${field}`);
  };
  const draft = idDraft !== null && idDraft.key === node.key ? idDraft.text : node.id;
  const commitId = (): void => {
    if (draft === node.id) return;
    const refused = apply((d) => renameNode(d, node.key, draft.trim()));
    setIdError(refused?.message ?? null);
    if (refused === null) setIdDraft(null);
  };
  const others = doc.nodes.filter((n) => n.key !== node.key);
  const routed = doc.edges.filter((e) => e.from === node.id && e.when !== null);
  const choices = registry === null ? null : toolChoices(registry, capabilities);
  return (
    <div className="flex flex-col gap-3">
      <h2 className="text-base font-semibold">
        Node <code className="font-mono">{node.id}</code> <span className={`text-sm font-normal ${muted}`}>({node.kind})</span>
      </h2>
      <Field label="Id" help={`${help('id') ?? ''} Edges and children follow a rename.`.trim()} problems={on(mine, 'id')}>
        {(id, describedBy) => (
          <>
            <input
              id={id}
              className={`${input} font-mono`}
              value={draft}
              readOnly={readOnly}
              aria-describedby={describedBy}
              aria-invalid={idError === null ? undefined : true}
              onChange={(e) => {
                setIdDraft({ key: node.key, text: e.target.value });
                setIdError(null);
              }}
              onBlur={commitId}
              onKeyDown={(e) => {
                if (e.key === 'Enter') {
                  e.preventDefault();
                  commitId();
                }
              }}
            />
            {idError === null ? null : (
              <p role="alert" className="text-sm text-red-800 dark:text-red-200">
                Not renamed: {idError}.
              </p>
            )}
          </>
        )}
      </Field>
      <Field label="Description" help={help('description')} problems={on(mine, 'description')}>
        {(id, describedBy) => <input id={id} className={input} value={node.description ?? ''} readOnly={readOnly} aria-describedby={describedBy} onChange={(e) => { set('description', { description: e.target.value }); }} />}
      </Field>
      {fields.model ? (
        <>
          <Field label="Instruction" help={help('instruction')} problems={on(mine, 'instruction')}>
            {(id, describedBy) => (
              <textarea id={id} rows={4} className={input} value={node.instruction ?? ''} readOnly={readOnly} aria-describedby={describedBy} onChange={(e) => { set('instruction', { instruction: e.target.value }); }} />
            )}
          </Field>
          <ModelField node={node} registry={registry} capabilities={capabilities} help={help('model')} problems={on(mine, 'model')} readOnly={readOnly} onChange={(model) => { set('model', { model }); }} />
          {fields.tools || (node.tools ?? []).length > 0 ? (
            <ToolPicker
              nodeId={node.id}
              takesTools={fields.tools}
              kind={node.kind}
              tools={node.tools ?? []}
              choices={choices}
              registryProblem={registryProblem}
              help={help('tools')}
              problems={on(mine, 'tools')}
              readOnly={readOnly}
              onChange={(tools) => { apply((d) => setNodeFields(d, node.key, { tools })); }}
            />
          ) : null}
        </>
      ) : null}
      {fields.labels ? (
        <Field label="Route labels (comma-separated)" help={fieldHelp(schema, ['nodes', 'output', 'labels']) ?? help('output')} problems={on(mine, 'output')}>
          {(id, describedBy) => (
            <input
              id={id}
              className={`${input} font-mono`}
              value={(node.labels ?? []).join(', ')}
              readOnly={readOnly}
              aria-describedby={describedBy}
              onChange={(e) => { set('labels', {
                  labels: e.target.value
                    .split(',')
                    .map((l) => l.trim())
                    .filter((l, i, all) => l !== '' || i === all.length - 1),
                }); }
              }
            />
          )}
        </Field>
      ) : null}
      {fields.prompt ? (
        <Field label="Prompt" help={help('prompt')} problems={on(mine, 'prompt')}>
          {(id, describedBy) => <textarea id={id} rows={3} className={input} value={node.prompt ?? ''} readOnly={readOnly} aria-describedby={describedBy} onChange={(e) => { set('prompt', { prompt: e.target.value }); }} />}
        </Field>
      ) : null}
      {fields.children ? (
        <fieldset className="flex flex-col gap-1">
          <legend className="text-sm font-medium">Children (delegated to as tools)</legend>
          {others.length === 0 ? <p className={`text-sm ${muted}`}>Add LLM agents to delegate to.</p> : null}
          {others.map((other) => (
            <label key={other.key} className="flex items-center gap-2 text-sm">
              <input
                type="checkbox"
                disabled={readOnly}
                checked={node.children?.includes(other.id) === true}
                onChange={(e) => { set('children', { children: e.target.checked ? [...(node.children ?? []), other.id] : (node.children ?? []).filter((c) => c !== other.id) }); }}
              />
              <code className="font-mono">{other.id}</code> <span className={muted}>({other.kind})</span>
            </label>
          ))}
          {fieldHelp(schema, ['nodes', 'children']) === null ? null : <p className={`text-xs ${muted}`}>{fieldHelp(schema, ['nodes', 'children'])}</p>}
        </fieldset>
      ) : null}
      {readOnly ? null : (
        <form
          className="flex flex-col gap-1"
          onSubmit={(e) => {
            e.preventDefault();
            const to = others.find((o) => o.key === target);
            if (to === undefined) return;
            const made: { edge: CanvasEdge | null } = { edge: null };
            const refused = apply((d) => {
              const result = connect(d, node.key, to.key);
              if (!result.ok) return result;
              made.edge = result.edge;
              return { ok: true, doc: result.doc };
            });
            setConnectError(refused?.message ?? null);
            if (made.edge !== null) onSelect({ kind: 'edge', key: made.edge.key });
          }}
        >
          <label htmlFor={`connect-${node.key}`} className="text-sm font-medium">
            Connect to…
          </label>
          <div className="flex gap-1">
            <select id={`connect-${node.key}`} className={`${input} min-w-0 flex-1`} value={target} onChange={(e) => { setTarget(e.target.value); }}>
              <option value="">Choose a node</option>
              {others.map((o) => (
                <option key={o.key} value={o.key}>
                  {o.id}
                </option>
              ))}
            </select>
            <button type="submit" className={button} disabled={target === ''}>
              Connect
            </button>
          </div>
          {connectError === null ? null : (
            <p role="alert" className="text-sm text-red-800 dark:text-red-200">
              Not connected: {connectError}.
            </p>
          )}
        </form>
      )}
      <div className="flex flex-wrap gap-2">
        {!readOnly && routeLabels(node).length > 0 && routed.length === 2 ? (
          <button type="button" className={button} onClick={() => apply((d) => swapRoutes(d, node.key))}>
            Swap the labels of its two routes
          </button>
        ) : null}
        {readOnly ? null : (
          <button
            type="button"
            className={dangerButton}
            onClick={() => {
              if (apply((d) => removeNode(d, node.key)) === null) onSelect(null);
            }}
          >
            Remove node {node.id}
          </button>
        )}
      </div>
      <FindingList title={`Problems of ${node.id}`} findings={mine} />
    </div>
  );
}

export function EdgeInspector({ edge, ...common }: Common & { readonly edge: CanvasEdge }) {
  const { doc, findings, schema, readOnly, apply, onSelect } = common;
  const mine = findingsOnEdge(findings, edge.key);
  const from = doc.nodes.find((n) => n.id === edge.from);
  const labels = from === undefined ? [] : routeLabels(from);
  const help = (field: string): string | null => fieldHelp(schema, ['edges', field]);
  const set = (field: string, change: Parameters<typeof setEdgeFields>[2]): void => {
    apply((d) => setEdgeFields(d, edge.key, change), `edge:${edge.key}:${field}`);
  };
  return (
    <div className="flex flex-col gap-3">
      <h2 className="text-base font-semibold">
        Edge <code className="font-mono">{edge.from}</code> → <code className="font-mono">{edge.to}</code>
      </h2>
      <Field label="When (the label that takes it)" help={help('when')} problems={on(mine, 'when')}>
        {(id, describedBy) => (
          <>
            <input id={id} list={`${id}-labels`} className={`${input} font-mono`} value={edge.when ?? ''} readOnly={readOnly} aria-describedby={describedBy} onChange={(e) => { set('when', { when: e.target.value }); }} />
            <datalist id={`${id}-labels`}>
              {labels.map((l) => (
                <option key={l} value={l} />
              ))}
            </datalist>
          </>
        )}
      </Field>
      <Field label="Loop cap (maxIterations, on an edge back to an earlier node)" help={help('maxIterations')} problems={on(mine, 'maxIterations')}>
        {(id, describedBy) => (
          <input
            id={id}
            type="number"
            min={1}
            className={input}
            value={edge.maxIterations ?? ''}
            readOnly={readOnly}
            aria-describedby={describedBy}
            onChange={(e) => { set('maxIterations', { maxIterations: e.target.value === '' ? null : Number(e.target.value) }); }}
          />
        )}
      </Field>
      <label className="flex items-center gap-2 text-sm">
        <input type="checkbox" disabled={readOnly} checked={edge.screen === true} onChange={(e) => { set('screen', { screen: e.target.checked }); }} />
        Screen what passes along this edge
      </label>
      {help('screen') === null ? null : <p className={`text-xs ${muted}`}>{help('screen')}</p>}
      {readOnly ? null : (
        <div>
          <button
            type="button"
            className={dangerButton}
            onClick={() => {
              if (apply((d) => removeEdge(d, edge.key)) === null) onSelect(null);
            }}
          >
            Remove edge
          </button>
        </div>
      )}
      <FindingList title="Problems of this edge" findings={mine} />
    </div>
  );
}

export function CompositionInspector({ ...common }: Common) {
  const { doc, findings, capabilities, schema, readOnly, apply, onSelect } = common;
  const help = (...path: string[]): string | null => fieldHelp(schema, path);
  const budgetProblems = (key: BudgetKey): PlacedFinding[] => findings.errors.filter((p) => p.target.kind === 'budgets' && p.target.budget === key);
  return (
    <div className="flex flex-col gap-3">
      <h2 className="text-base font-semibold">Composition</h2>
      <Field label="Pattern" help={help('pattern')} problems={findings.errors.filter((p) => p.target.kind === 'composition' && p.target.field === 'pattern')}>
        {(id, describedBy) => (
          <select id={id} className={input} value={doc.pattern ?? ''} disabled={readOnly} aria-describedby={describedBy} onChange={(e) => apply((d) => setComposition(d, { pattern: e.target.value }))}>
            <option value="">Choose a pattern</option>
            {(capabilities?.patterns ?? []).map((p) => (
              <option key={p.name} value={p.name} disabled={!p.supported}>
                {p.name}
                {p.supported ? '' : ` (not run here${p.note === null ? '' : `: ${p.note}`})`}
              </option>
            ))}
            {doc.pattern !== null && !(capabilities?.patterns ?? []).some((p) => p.name === doc.pattern) ? <option value={doc.pattern}>{doc.pattern}</option> : null}
          </select>
        )}
      </Field>
      <Field label="Description" help={help('description')}>
        {(id, describedBy) => <input id={id} className={input} value={doc.description ?? ''} readOnly={readOnly} aria-describedby={describedBy} onChange={(e) => apply((d) => setComposition(d, { description: e.target.value }), 'composition:description')} />}
      </Field>
      <fieldset className="flex flex-col gap-2">
        <legend className="text-sm font-medium">Budgets</legend>
        {help('budgets') === null ? null : <p className={`text-xs ${muted}`}>{help('budgets')}</p>}
        {BUDGET_KEYS.map((key) => {
          const ceiling = capabilities?.ceilings[key];
          return (
            <Field key={key} label={`${key}${ceiling === undefined ? '' : ` (at most ${ceiling.toLocaleString('en')})`}`} help={help('budgets', key)} problems={budgetProblems(key)}>
              {(id, describedBy) => (
                <input
                  id={id}
                  type="number"
                  min={0}
                  {...(ceiling === undefined ? {} : { max: ceiling })}
                  className={input}
                  value={doc.budgets.values[key] ?? ''}
                  placeholder={ceiling === undefined ? 'the ceiling' : `${ceiling} (the ceiling)`}
                  readOnly={readOnly}
                  aria-describedby={describedBy}
                  onChange={(e) => apply((d) => setBudgets(d, { [key]: e.target.value === '' ? null : Number(e.target.value) }), `budgets:${key}`)}
                />
              )}
            </Field>
          );
        })}
      </fieldset>
      <FindingList
        title="Every problem"
        findings={findings}
        onShow={(p) => {
          if (p.target.kind === 'node') onSelect({ kind: 'node', key: p.target.node });
          else if (p.target.kind === 'edge') onSelect({ kind: 'edge', key: p.target.edge });
        }}
      />
    </div>
  );
}
