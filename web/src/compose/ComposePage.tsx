// Compose (console part 2, rules 12.7–12.30): the canvas. A palette of node kinds from the
// server's capabilities, the graph (React Flow and ELK, loaded with this page), the inspector
// (what is selected, and the composition with every finding), the pattern gallery, undo and
// redo, Tidy. Validation runs as the spec changes (POST …/validate, 300 ms after the last
// edit), and its findings are marked on the nodes, edges and fields they are about. The canvas
// keeps its document while the person visits other pages (the store lives as long as the tab).

import { lazy, Suspense, useCallback, useEffect, useMemo, useRef, useState, useSyncExternalStore } from 'react';
import { useStore } from 'zustand';
import { fetchSchema } from '../api/schema.ts';
import { listRegistry, type RegistryItem } from '../api/registry.ts';
import { isRecord } from '../api/http.ts';
import { useSession } from '../app/session.tsx';
import { fromSpec, toSpec, type CanvasDocument } from '../canvas/document.ts';
import { addNode, removeEdge, removeNode, connect } from '../canvas/edit.ts';
import { placeFindings, standingFindings, type PlacedFindings } from '../canvas/findings.ts';
import type { CanvasState, Edit } from '../canvas/store.ts';
import { canvasStore, clearArrival, peekArrival, type Arrival } from './canvas-store.ts';
import { Tabs } from '../run/Tabs.tsx';
import { PageHeading } from '../ui/PageHeading.tsx';
import { button, link as linkClass, muted, primaryButton } from '../ui/classes.ts';
import { readCapabilities, type Capabilities } from './capabilities.ts';
import type { Selection } from './EditGraph.tsx';
import { CompositionInspector, EdgeInspector, NodeInspector } from './Inspector.tsx';
import { Palette } from './Palette.tsx';
import { RegistryPanel } from './RegistryPanel.tsx';
import { paletteEntries, remoteAgentOffer, type PaletteItem } from './palette.ts';
import { toolChoices } from './tool-picker.ts';
import { TEMPLATES, type Template } from './templates.ts';
import { TemplatesDialog } from './TemplatesDialog.tsx';
import { ExportDialog, ImportDialog } from './Manifests.tsx';
import { RunDialog } from './RunDialog.tsx';
import { NameDialog, OpenDialog, SaveTroublePanel, type SaveTrouble } from './SaveOpen.tsx';
import { saveComposition, type StoredComposition } from '../api/compositions.ts';
import type { Revision } from '../api/revisions.ts';
import { linkTo, openedSaid, saveLabel, savedSaid, statusOnlyConflict } from './revision-state.ts';
import { RevisionMark } from './Revisions.tsx';
import type { LoadedComposition } from '../canvas/manifest.ts';
import { lastVerdict, useValidation } from './validation.ts';
import { Following, useFollow } from './Following.tsx';

const EditGraph = lazy(() => import('./EditGraph.tsx'));

/** The waits before the schema is asked again (rule 12.10: after 1 s and 3 s). */
export const SCHEMA_RETRIES_MS = [1000, 3000];

/** The demo's template (12.7: one click from an empty canvas). */
export const DEMO_TEMPLATE = 'critic-loop';

function useMedia(query: string): boolean {
  return useSyncExternalStore(
    (callback) => {
      const list = window.matchMedia(query);
      list.addEventListener('change', callback);
      return () => {
        list.removeEventListener('change', callback);
      };
    },
    () => window.matchMedia(query).matches,
  );
}

interface Published {
  readonly capabilities: Capabilities | null;
  readonly schema: Readonly<Record<string, unknown>> | null;
  /** Still asking (nothing is gated meanwhile). */
  readonly pending: boolean;
}

/** The published schema, asked again after 1 s and 3 s if it does not answer (12.10). */
function usePublished(token: string): Published {
  const [published, setPublished] = useState<Published>({ capabilities: null, schema: null, pending: true });
  useEffect(() => {
    let alive = true;
    let timer = 0;
    const ask = (attempt: number): void => {
      void fetchSchema(token).then((reply) => {
        if (!alive) return;
        if (reply.ok) {
          const composition = reply.value.raw['composition'];
          setPublished({ capabilities: readCapabilities(reply.value.raw), schema: isRecord(composition) ? composition : null, pending: false });
          return;
        }
        const wait = SCHEMA_RETRIES_MS[attempt];
        if (wait === undefined) setPublished((p) => ({ ...p, pending: false }));
        else timer = window.setTimeout(() => { ask(attempt + 1); }, wait);
      });
    };
    ask(0);
    return () => {
      alive = false;
      window.clearTimeout(timer);
    };
  }, [token]);
  return published;
}

const specOf = (doc: CanvasDocument): unknown => toSpec(doc);

export default function ComposePage() {
  const { token, api, namespace, expire } = useSession();
  const store = canvasStore();
  const doc = useStore(store, (s: CanvasState) => s.doc);
  const dirty = useStore(store, (s: CanvasState) => s.dirty);
  const canUndo = useStore(store, (s: CanvasState) => s.canUndo);
  const canRedo = useStore(store, (s: CanvasState) => s.canRedo);
  const link = useStore(store, (s: CanvasState) => s.link);
  const published = usePublished(token);
  const [registry, setRegistry] = useState<readonly RegistryItem[]>([]);
  const [registryProblem, setRegistryProblem] = useState<string | null>(null);
  const [registryRead, setRegistryRead] = useState(false);
  const [selection, setSelection] = useState<Selection>(null);
  const [tab, setTab] = useState<'selection' | 'composition' | 'registry'>('composition');
  const [layoutEpoch, setLayoutEpoch] = useState(0);
  const [gallery, setGallery] = useState(false);
  const [dialog, setDialog] = useState<'import' | 'export' | 'run' | 'open' | 'save-as' | 'save-copy' | null>(null);
  const [saving, setSaving] = useState(false);
  const [trouble, setTrouble] = useState<{ readonly name: string; readonly trouble: SaveTrouble } | null>(null);
  // What History's Show put on the canvas (12.60), said once with Undo, as a load is.
  const [banner, setBanner] = useState<Arrival | null>(peekArrival);
  useEffect(() => {
    clearArrival();
  }, []);
  // The linked Composition followed in the cluster: changed elsewhere, taken or offered.
  const follow = useFollow({ store, token, api, expire, saving, onNews: () => { setBanner(null); } });
  const [refusal, setRefusal] = useState<string | null>(null);
  const narrow = useMedia('(max-width: 767px)');
  const rail = useMedia('(max-width: 1279px)');
  const readOnly = narrow;

  useEffect(() => {
    if (namespace === '') return undefined;
    let alive = true;
    void listRegistry(token, namespace, api).then((reply) => {
      if (!alive) return;
      if (reply.ok) {
        setRegistry(reply.value);
        setRegistryRead(true);
        setRegistryProblem(null);
      } else if (reply.problem.status === 401) expire(reply.problem);
      else setRegistryProblem(`The registry could not be read (${reply.problem.status}): ${reply.problem.message}`);
    });
    return () => {
      alive = false;
    };
  }, [token, namespace, api, expire]);

  const empty = doc.nodes.length === 0;
  // An empty canvas is not sent: there is nothing to say about it yet.
  const validation = useValidation(token, empty ? '' : namespace, doc, specOf, api, expire);
  const checked = lastVerdict(validation);
  const findings: PlacedFindings = useMemo(() => (checked === null ? { errors: [], warnings: [] } : standingFindings(placeFindings(checked.subject, checked.verdict), doc)), [checked, doc]);

  const select = useCallback((next: Selection) => {
    setSelection(next);
    if (next !== null) setTab('selection');
  }, []);

  // The selection goes when what it names does (undo, a removal).
  const selected = selection === null ? null : selection.kind === 'node' ? doc.nodes.find((n) => n.key === selection.key) : doc.edges.find((e) => e.key === selection.key);

  const add = (item: PaletteItem): void => {
    const added: { key: string | null } = { key: null };
    store.getState().edit((d) => {
      const made = item.add === 'kind' ? addNode(d, item.kind) : addNode(d, 'LLMAgent', { tools: [item.tool], instruction: 'Ask the remote agent and pass on its answer.' });
      added.key = made.node.key;
      return made.doc;
    });
    if (added.key !== null) select({ kind: 'node', key: added.key });
  };

  /** Puts a document on the canvas, unlinked and undoably from the banner (12.25, 12.57). */
  const put = (next: CanvasDocument, said: string): void => {
    store.getState().load(next);
    setSelection(null);
    setTab('composition');
    setGallery(false);
    setDialog(null);
    setRefusal(null);
    setLayoutEpoch((n) => n + 1);
    setBanner({ said, back: null });
  };

  /**
   * Saves the canvas as `name` (12.53–12.55): with the version the canvas was read from when it
   * is that Composition (a change meanwhile is a conflict), else as a new one; `force` takes over
   * fields another manager owns.
   */
  const save = (name: string, options: { readonly resourceVersion?: string | null; readonly force?: boolean; readonly again?: boolean } = {}): void => {
    if (namespace === '' || (saving && options.again !== true)) return;
    const spec = toSpec(doc);
    setSaving(true);
    setBanner(null);
    void saveComposition(
      token,
      namespace,
      name,
      { spec, ...(options.resourceVersion == null ? {} : { resourceVersion: options.resourceVersion }), ...(options.force === true ? { force: true } : {}) },
      api,
    ).then((outcome) => {
      setSaving(false);
      if (outcome.kind === 'saved') {
        const c = outcome.composition;
        store.getState().markSaved(linkTo(c, namespace), c.spec);
        setTrouble(null);
        setDialog(null);
        setBanner({ said: savedSaid(c, outcome.created, link), back: null, undoable: false });
        return;
      }
      // Only the operator's status write came between (the spec is the one the canvas was read
      // at): saved again, once, on the new resourceVersion.
      const again = outcome.kind === 'conflict' && options.again !== true && options.resourceVersion != null ? statusOnlyConflict(link, outcome.current) : null;
      if (again !== null) {
        save(name, { ...options, resourceVersion: again, again: true });
        return;
      }
      if (outcome.kind === 'refused' && outcome.problem.status === 401) {
        expire(outcome.problem);
        return;
      }
      setDialog(null);
      setTrouble({ name, trouble: outcome });
    });
  };
  const saveNow = (): void => {
    if (link !== null && link.namespace === namespace) save(link.name, { resourceVersion: link.resourceVersion ?? null });
    else setDialog('save-as');
  };
  /** Puts `c` on the canvas, or its older revision `opened` (12.56: saving that restores it). */
  const open = (c: StoredComposition, opened: Revision | null = null): void => {
    const problems = store.getState().replaceFromServer(opened?.spec ?? c.spec, linkTo(c, namespace, opened));
    setDialog(null);
    if (problems !== null) {
      setRefusal(`${c.name} could not be put on the canvas: ${problems.map((p) => p.message).join('; ')}`);
      return;
    }
    setSelection(null);
    setTab('composition');
    setTrouble(null);
    setLayoutEpoch((n) => n + 1);
    setBanner({ said: openedSaid(c, opened), back: null, undoable: false });
  };

  const load = (template: Template): void => {
    const read = fromSpec(template.spec);
    if (!read.ok) {
      setRefusal(`${template.name} could not be read: ${read.problems.map((p) => p.message).join('; ')}`);
      return;
    }
    put(read.doc, `Loaded the template ${template.name}.`);
  };

  const imported = (loaded: LoadedComposition): void => {
    const name = typeof loaded.metadata['name'] === 'string' ? loaded.metadata['name'] : `document ${loaded.document}`;
    put(loaded.doc, `Imported ${name}; it is not linked to a Composition until you save it.`);
  };

  // Undo and redo from the keyboard, outside text fields (they keep their own).
  useEffect(() => {
    const onKey = (event: KeyboardEvent): void => {
      const target = event.target;
      if (target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement) return;
      if (!(event.ctrlKey || event.metaKey)) return;
      const key = event.key.toLowerCase();
      if (key === 'z' && !event.shiftKey) {
        event.preventDefault();
        store.getState().undo();
      } else if ((key === 'z' && event.shiftKey) || key === 'y') {
        event.preventDefault();
        store.getState().redo();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => {
      window.removeEventListener('keydown', onKey);
    };
  }, [store]);

  // Ctrl/Cmd+S saves, Ctrl/Cmd+Shift+S saves a copy, from anywhere on the page (12.53, 12.55).
  const saveKeys = useRef({ saveNow, copy: () => { setDialog('save-copy'); } });
  useEffect(() => {
    saveKeys.current = { saveNow, copy: () => { setDialog('save-copy'); } };
  });
  useEffect(() => {
    const onKey = (event: KeyboardEvent): void => {
      if (!(event.ctrlKey || event.metaKey) || event.key.toLowerCase() !== 's') return;
      event.preventDefault();
      if (event.shiftKey) saveKeys.current.copy();
      else saveKeys.current.saveNow();
    };
    window.addEventListener('keydown', onKey);
    return () => {
      window.removeEventListener('keydown', onKey);
    };
  }, []);

  const apply = useCallback((change: Edit, group?: string) => store.getState().edit(change, group), [store]);
  const title = link === null ? 'an unsaved composition' : `${link.name}${link.revision === null ? '' : `, revision ${String(link.revision)}`}`;
  const entries = paletteEntries(published.capabilities, remoteAgentOffer(registryRead ? toolChoices(registry, published.capabilities) : null, registryProblem));
  const errors = findings.errors.length;
  const warnings = findings.warnings.length;
  const verdictLine = empty
    ? 'Add a node, or load a template: the composition is checked with the server as you edit.'
    : namespace === ''
      ? 'Choose a namespace (on the Runs page) to check the composition against its registry.'
      : validation.state === 'idle'
        ? 'Not checked yet.'
        : validation.state === 'checking'
          ? 'Checking with the server…'
          : validation.state === 'failed'
            ? `Could not check it: ${validation.problem.message}.`
            : errors === 0
              ? `Valid${warnings === 0 ? '' : `, with ${warnings} ${warnings === 1 ? 'warning' : 'warnings'}`}.`
              : `${errors} ${errors === 1 ? 'problem' : 'problems'}${warnings === 0 ? '' : ` and ${warnings} ${warnings === 1 ? 'warning' : 'warnings'}`}: see the Composition tab.`;

  const common = { doc, findings, capabilities: published.capabilities, schema: published.schema, registry: registryRead ? registry : null, registryProblem, readOnly, apply, onSelect: select };

  return (
    <section className="flex flex-col gap-3" aria-labelledby="compose-heading">
      <div className="flex flex-wrap items-center gap-x-4 gap-y-2">
        <PageHeading id="compose-heading">Compose</PageHeading>
        <p className={muted}>
          {title}
          {dirty ? ' · unsaved changes' : ''}
        </p>
        <RevisionMark link={link} dirty={dirty} />
        <div role="toolbar" aria-label="Canvas" className="ml-auto flex flex-wrap gap-2">
          <button type="button" className={button} onClick={() => { setDialog('open'); }}>
            Open…
          </button>
          <button type="button" className={button} disabled={empty || saving} onClick={saveNow} aria-keyshortcuts="Control+S">
            {saving ? 'Saving…' : saveLabel(link, dirty)}
          </button>
          <button type="button" className={button} disabled={empty || saving} onClick={() => { setDialog('save-copy'); }} aria-keyshortcuts="Control+Shift+S">
            Save copy…
          </button>
          <button type="button" className={button} onClick={() => { setGallery(true); }}>
            Templates…
          </button>
          <button type="button" className={button} onClick={() => { setDialog('import'); }}>
            Import…
          </button>
          <button type="button" className={button} disabled={empty} onClick={() => { setDialog('export'); }}>
            Export…
          </button>
          <button type="button" className={primaryButton} disabled={empty} onClick={() => { setDialog('run'); }}>
            Run…
          </button>
          <button type="button" className={button} disabled={!canUndo} onClick={() => { store.getState().undo(); }} aria-keyshortcuts="Control+Z">
            Undo
          </button>
          <button type="button" className={button} disabled={!canRedo} onClick={() => { store.getState().redo(); }} aria-keyshortcuts="Control+Shift+Z">
            Redo
          </button>
          <button type="button" className={button} disabled={doc.nodes.length === 0} onClick={() => { setLayoutEpoch((n) => n + 1); }}>
            Tidy
          </button>
        </div>
      </div>
      <p role="status" className={`text-sm ${errors > 0 ? 'text-red-800 dark:text-red-200' : muted}`}>
        {verdictLine}
      </p>
      <Following follow={follow} />
      {banner === null ? null : (
        <div role="status" className="flex flex-wrap items-center gap-3 rounded-md border border-sky-700 bg-sky-50 px-3 py-2 text-sky-950 dark:border-sky-300 dark:bg-sky-950 dark:text-sky-50">
          <span>{banner.said}</span>
          {banner.back === null ? null : (
            <a className={linkClass} href={banner.back.href}>
              {banner.back.label}
            </a>
          )}
          {banner.undoable === false ? null : (
            <button
              type="button"
              className={button}
              onClick={() => {
                store.getState().undo();
                setBanner(null);
                setLayoutEpoch((n) => n + 1);
              }}
            >
              Undo
            </button>
          )}
          <button type="button" className={button} onClick={() => { setBanner(null); }}>
            Dismiss
          </button>
        </div>
      )}
      {trouble === null ? null : (
        <SaveTroublePanel
          trouble={trouble.trouble}
          name={trouble.name}
          onKeepTheirs={open}
          onKeepMine={(current) => {
            save(trouble.name, { resourceVersion: current.resourceVersion });
          }}
          onTakeOver={() => {
            save(trouble.name, { resourceVersion: link?.name === trouble.name ? (link.resourceVersion ?? null) : null, force: true });
          }}
          onDismiss={() => {
            setTrouble(null);
          }}
        />
      )}
      {refusal === null ? null : (
        <p role="alert" className="text-red-800 dark:text-red-200">
          {refusal}
        </p>
      )}
      {narrow ? (
        <p className="rounded-md border border-amber-700 bg-amber-50 px-3 py-2 text-amber-950 dark:border-amber-300 dark:bg-amber-950 dark:text-amber-50">
          The canvas is read-only on a screen this narrow: select a node or an edge to inspect it. Widen the window to edit.
        </p>
      ) : null}
      <div className={`flex gap-3 ${narrow ? 'flex-col' : 'h-[calc(100vh-12rem)] min-h-[32rem]'}`}>
        {narrow ? null : <Palette entries={entries} rail={rail} readOnly={readOnly} pending={published.pending} onAdd={add} />}
        <div className={narrow ? 'relative h-96 w-full' : 'relative min-w-0 flex-1'}>
          <Suspense
            fallback={
              <p role="status" className="p-4">
                Loading the canvas…
              </p>
            }
          >
            <EditGraph
              doc={doc}
              title={title}
              findings={findings}
              selection={selection}
              onSelect={select}
              onConnect={(from, to) => {
                const refused = apply((d) => {
                  const result = connect(d, from, to);
                  return result.ok ? { ok: true, doc: result.doc } : result;
                });
                setRefusal(refused === null ? null : `Not connected: ${refused.message}.`);
              }}
              onDelete={(gone) => {
                apply((d) => (gone.kind === 'node' ? removeNode(d, gone.key) : removeEdge(d, gone.key)));
                if (selection?.key === gone.key) setSelection(null);
              }}
              onDropItem={(item: PaletteItem) => {
                add(item);
              }}
              readOnly={readOnly}
              layoutEpoch={layoutEpoch}
            />
          </Suspense>
          {doc.nodes.length === 0 ? (
            <div className="pointer-events-none absolute inset-0 flex items-center justify-center p-6">
              <div className="pointer-events-auto flex max-w-md flex-col items-center gap-3 rounded-lg border border-slate-300 bg-white p-4 text-center shadow-sm dark:border-slate-600 dark:bg-slate-900">
                <p className="font-semibold">The canvas is empty.</p>
                <p className={muted}>Drag a node kind from the palette onto it, or start from a template.</p>
                <div className="flex flex-wrap justify-center gap-2">
                  <button type="button" className={primaryButton} onClick={() => { setGallery(true); }}>
                    Open the pattern gallery
                  </button>
                  <button
                    type="button"
                    className={button}
                    onClick={() => {
                      const demo = TEMPLATES.find((t) => t.name === DEMO_TEMPLATE);
                      if (demo !== undefined) load(demo);
                    }}
                  >
                    Load the demo ({DEMO_TEMPLATE})
                  </button>
                </div>
              </div>
            </div>
          ) : null}
        </div>
        <aside aria-label="Inspector" className={`flex shrink-0 flex-col overflow-y-auto ${narrow ? '' : 'w-96'}`}>
          <Tabs
            label="Inspector"
            selected={tab}
            onSelect={setTab}
            tabs={[
              {
                id: 'selection',
                label: 'Selection',
                panel:
                  selected === undefined || selected === null ? (
                    <p className={`p-2 ${muted}`}>Select a node or an edge on the canvas (Tab to it, then Enter) to edit it here.</p>
                  ) : 'kind' in selected ? (
                    <NodeInspector key={selected.key} node={selected} {...common} />
                  ) : (
                    <EdgeInspector key={selected.key} edge={selected} {...common} />
                  ),
              },
              {
                id: 'composition',
                label: errors > 0 ? `Composition (${errors})` : 'Composition',
                panel: <CompositionInspector {...common} />,
              },
              {
                id: 'registry',
                label: 'Registry',
                panel: <RegistryPanel items={registry} namespace={namespace} problem={registryProblem} />,
              },
            ]}
          />
        </aside>
      </div>
      <RunDialog open={dialog === 'run'} token={token} api={api} namespace={namespace} spec={toSpec(doc)} link={link} dirty={dirty} expire={expire} onClose={() => { setDialog(null); }} />
      <OpenDialog open={dialog === 'open'} token={token} api={api} namespace={namespace} dirty={dirty} expire={expire} onOpen={open} onClose={() => { setDialog(null); }} />
      <NameDialog key={dialog ?? 'closed'} open={dialog === 'save-as' || dialog === 'save-copy'} title={dialog === 'save-copy' ? 'Save a copy as a new Composition' : 'Save as a new Composition'} initial={link === null ? '' : `${link.name}-copy`} onSave={(name) => { save(name); }} onClose={() => { setDialog(null); }} />
      <ImportDialog open={dialog === 'import'} namespace={namespace} onLoad={imported} onClose={() => { setDialog(null); }} />
      <ExportDialog open={dialog === 'export'} name={link?.name ?? null} namespace={link?.namespace ?? namespace} spec={toSpec(doc)} registry={registry} onClose={() => { setDialog(null); }} />
      <TemplatesDialog open={gallery} capabilities={published.capabilities} onLoad={load} onClose={() => { setGallery(false); }} />
    </section>
  );
}
