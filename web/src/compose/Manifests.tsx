// Export and import as Kubernetes manifests (rules 12.25, 12.57, 12.65, 12.67;
// canvas/manifest.ts, api/import.ts). Export: the canvas as a Composition manifest and the
// RegistryEntries it uses, to copy or download; no code is generated. Import: YAML pasted or read
// from a file; only Compositions load, every other document is listed as refused with what to do
// instead, and every problem is listed at its document and line before anything loads. A seed's
// JSON (`spec_version`) goes to the sidecar's import, which converts it as `orrery import` does:
// every problem is listed at its path in the seed (and its line) before anything loads, and a
// converted one shows the server's verdict before it loads. A load is unlinked and undoable
// from its banner.

import { useId, useRef, useState } from 'react';
import { importYaml, exportYaml, manifestMetadata, type ImportResult, type LoadedComposition } from '../canvas/manifest.ts';
import { fromSpec } from '../canvas/document.ts';
import { locText } from '../canvas/findings.ts';
import { importSeed, looksLikeSeed, MAX_IMPORT_BODY_BYTES, type SeedImport } from '../api/import.ts';
import type { RegistryItem } from '../api/registry.ts';
import { useSession } from '../app/session.tsx';
import { button, focusRing, input, muted, primaryButton } from '../ui/classes.ts';
import { Dialog } from '../ui/Dialog.tsx';

interface ExportProps {
  readonly open: boolean;
  /** The Composition's name (its link's, else what the person types). */
  readonly name: string | null;
  readonly namespace: string;
  readonly spec: Readonly<Record<string, unknown>>;
  readonly registry: readonly RegistryItem[];
  readonly onClose: () => void;
}

/** A file name from a Composition's name. */
export function fileName(name: string): string {
  return `${name.replace(/[^a-z0-9._-]/gi, '-') || 'composition'}.yaml`;
}

export function ExportDialog({ open, name, namespace, spec, registry, onClose }: ExportProps) {
  const ids = useId();
  const [typed, setTyped] = useState(name ?? 'my-composition');
  const [copied, setCopied] = useState<string | null>(null);
  const finalName = name ?? typed;
  const exported = exportYaml({ metadata: { name: finalName, ...(namespace === '' ? {} : { namespace }) }, spec }, registry.map((r) => ({ name: r.name, spec: r.spec })));
  return (
    <Dialog open={open} title="Export as YAML" onClose={onClose}>
      <p className={muted}>The Composition as a Kubernetes manifest, then the RegistryEntries it uses, without the server's fields. Apply it with <code className="font-mono">kubectl apply -f {fileName(finalName)}</code>.</p>
      {name === null ? (
        <div className="flex flex-col gap-1">
          <label htmlFor={`${ids}-name`} className="text-sm font-medium">
            Name of the Composition
          </label>
          <input id={`${ids}-name`} className={`${input} font-mono`} value={typed} onChange={(e) => { setTyped(e.target.value); }} />
        </div>
      ) : null}
      {exported.missing.length === 0 ? null : (
        <p className="text-sm text-amber-900 dark:text-amber-100">
          ! Not in this namespace's registry (or not yours to read), so not included: {exported.missing.join(', ')}.
        </p>
      )}
      <pre tabIndex={0} aria-label="The manifests" className={`max-h-96 overflow-auto rounded bg-slate-100 p-2 font-mono text-xs dark:bg-slate-950 ${focusRing}`}>
        {exported.yaml}
      </pre>
      <div className="flex flex-wrap items-center gap-2">
        <button
          type="button"
          className={primaryButton}
          onClick={() => {
            void navigator.clipboard.writeText(exported.yaml).then(
              () => { setCopied('Copied.'); },
              () => { setCopied('The browser refused the clipboard: select the text above and copy it.'); },
            );
          }}
        >
          Copy
        </button>
        <button
          type="button"
          className={button}
          onClick={() => {
            const url = URL.createObjectURL(new Blob([exported.yaml], { type: 'application/yaml' }));
            const a = document.createElement('a');
            a.href = url;
            a.download = fileName(finalName);
            a.click();
            window.setTimeout(() => { URL.revokeObjectURL(url); }, 1000);
          }}
        >
          Download {fileName(finalName)}
        </button>
        <p role="status" className={`text-sm ${muted}`}>
          {copied ?? ''}
        </p>
      </div>
    </Dialog>
  );
}

interface ImportProps {
  readonly open: boolean;
  readonly namespace: string;
  readonly onLoad: (loaded: LoadedComposition) => void;
  readonly onClose: () => void;
}

/** The most text an import reads (the sidecar's import takes 1 MiB too). */
export const MAX_IMPORT_BYTES = 1024 * 1024;

/** A seed sent to the sidecar's import: on its way, or what came back. */
type SeedState = { readonly state: 'idle' } | { readonly state: 'busy' } | { readonly state: 'done'; readonly outcome: SeedImport };

export function ImportDialog({ open, namespace, onLoad, onClose }: ImportProps) {
  const ids = useId();
  const { token, api, expire } = useSession();
  const [text, setText] = useState('');
  const [file, setFile] = useState<string | null>(null);
  const [result, setResult] = useState<ImportResult | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [seed, setSeed] = useState<SeedState>({ state: 'idle' });
  const [seedName, setSeedName] = useState('');
  // Only the newest seed sent is answered: a reply to an older text is dropped.
  const sent = useRef(0);
  const isSeed = looksLikeSeed(text);
  const check = (source: string, from: string | null): void => {
    const ticket = ++sent.current;
    if (!looksLikeSeed(source)) {
      setSeed({ state: 'idle' });
      setResult(importYaml(source, { ...(from === null ? {} : { file: from }), ...(namespace === '' ? {} : { namespace }) }));
      return;
    }
    setResult(null);
    if (namespace === '') {
      setNotice('Choose a namespace (on the Runs page) first: the server converts a seed in the namespace it will run in.');
      return;
    }
    setSeed({ state: 'busy' });
    void importSeed(token, namespace, source, seedName.trim() === '' ? null : seedName.trim(), api).then((outcome) => {
      if (ticket !== sent.current) return;
      if (outcome.kind === 'failed' && outcome.problem.status === 401) {
        expire(outcome.problem);
        return;
      }
      setSeed({ state: 'done', outcome });
    });
  };
  const reset = (): void => {
    sent.current++;
    setResult(null);
    setSeed({ state: 'idle' });
  };
  return (
    <Dialog open={open} title="Import YAML or seed JSON" onClose={onClose}>
      <p className={muted}>
        Paste manifests or a seed&apos;s JSON, or read a file. Only Compositions load onto the canvas, not linked to the one open (Undo brings back what was there); RegistryEntries and other kinds are applied with kubectl. A seed
        (<code className="font-mono">spec_version</code>) is converted by the server, as <code className="font-mono">orrery import</code> does.
      </p>
      <div className="flex flex-col gap-1">
        <label htmlFor={`${ids}-file`} className="text-sm font-medium">
          A file
        </label>
        <input
          id={`${ids}-file`}
          type="file"
          accept=".yaml,.yml,.json,application/yaml,application/json"
          className={input}
          onChange={(event) => {
            const chosen = event.target.files?.[0];
            if (chosen === undefined) return;
            if (chosen.size > MAX_IMPORT_BYTES) {
              setNotice(`${chosen.name} is ${chosen.size.toLocaleString('en')} bytes; the most an import reads is ${MAX_IMPORT_BYTES.toLocaleString('en')}.`);
              return;
            }
            setNotice(null);
            void chosen.text().then((content) => {
              setText(content);
              setFile(chosen.name);
              check(content, chosen.name);
            });
            // The same file can be chosen again after an edit.
            event.target.value = '';
          }}
        />
      </div>
      <div className="flex flex-col gap-1">
        <label htmlFor={`${ids}-text`} className="text-sm font-medium">
          Or the manifests themselves
        </label>
        <textarea
          id={`${ids}-text`}
          rows={10}
          className={`${input} font-mono text-xs`}
          value={text}
          onChange={(e) => {
            setText(e.target.value);
            setFile(null);
            setNotice(null);
            reset();
          }}
        />
      </div>
      {isSeed ? (
        <div className="flex flex-col gap-1">
          <label htmlFor={`${ids}-name`} className="text-sm font-medium">
            Name of the Composition (optional)
          </label>
          <input
            id={`${ids}-name`}
            className={`${input} font-mono`}
            value={seedName}
            aria-describedby={`${ids}-name-help`}
            onChange={(e) => {
              setSeedName(e.target.value);
              reset();
            }}
          />
          <p id={`${ids}-name-help`} className={`text-xs ${muted}`}>
            This is a seed. Leave the name empty to keep the seed&apos;s own, or type another (lowercase letters, digits, &apos;-&apos; and &apos;.&apos;).
          </p>
        </div>
      ) : null}
      <div>
        <button
          type="button"
          className={button}
          disabled={text.trim() === '' || seed.state === 'busy'}
          onClick={() => {
            if (new TextEncoder().encode(text).length > MAX_IMPORT_BYTES) {
              setNotice(`That is more than the ${MAX_IMPORT_BYTES.toLocaleString('en')} bytes an import reads.`);
              return;
            }
            setNotice(null);
            check(text, file);
          }}
        >
          Check
        </button>
      </div>
      {notice === null ? null : (
        <p role="alert" className="text-red-800 dark:text-red-200">
          {notice}
        </p>
      )}
      {result === null ? null : <ImportReport result={result} onLoad={onLoad} />}
      {seed.state === 'busy' ? (
        <p role="status" className={muted}>
          Converting the seed with the server…
        </p>
      ) : null}
      {seed.state === 'done' ? <SeedReport outcome={seed.outcome} onLoad={onLoad} /> : null}
    </Dialog>
  );
}

function ImportReport({ result, onLoad }: { readonly result: ImportResult; readonly onLoad: (loaded: LoadedComposition) => void }) {
  return (
    <div className="flex flex-col gap-2" aria-live="polite">
      {result.problems.length === 0 ? null : (
        <section aria-label="Problems" className="flex flex-col gap-1">
          <h3 className="font-semibold text-red-800 dark:text-red-200">Nothing loads until these are fixed</h3>
          <ul className="flex flex-col gap-1 text-sm">
            {result.problems.map((p, i) => (
              <li key={i}>
                <span aria-hidden="true">✗ </span>Document {p.document}, line {p.line}: {p.message}
              </li>
            ))}
          </ul>
        </section>
      )}
      {result.refused.length === 0 ? null : (
        <section aria-label="Not loaded" className="flex flex-col gap-1">
          <h3 className="font-semibold">Not loaded onto the canvas</h3>
          <ul className="flex flex-col gap-1 text-sm">
            {result.refused.map((r, i) => (
              <li key={i}>
                Document {r.document} ({r.kind}
                {r.name === null ? '' : ` ${r.name}`}): {r.reason}
                {r.command === null ? null : (
                  <>
                    {' '}
                    Instead: <code className="font-mono">{r.command}</code>
                  </>
                )}
              </li>
            ))}
          </ul>
        </section>
      )}
      {result.problems.length > 0 || result.loaded.length === 0 ? (
        result.problems.length === 0 ? (
          <p className={muted}>No Composition to load.</p>
        ) : null
      ) : (
        <ul className="flex flex-col gap-1">
          {result.loaded.map((c) => (
            <li key={`${c.document}`}>
              <button type="button" className={primaryButton} onClick={() => { onLoad(c); }}>
                Load {typeof c.metadata['name'] === 'string' ? c.metadata['name'] : `document ${c.document}`} onto the canvas
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** What the server's import made of a seed: every problem at its place, or the Composition with the server's verdict and Load. */
function SeedReport({ outcome, onLoad }: { readonly outcome: SeedImport; readonly onLoad: (loaded: LoadedComposition) => void }) {
  if (outcome.kind === 'too-large') {
    return (
      <p role="alert" className="text-red-800 dark:text-red-200">
        The seed is too big for the server, which takes at most {MAX_IMPORT_BODY_BYTES.toLocaleString('en')} bytes for an import ({outcome.message}): import a smaller seed.
      </p>
    );
  }
  if (outcome.kind === 'failed') {
    return (
      <p role="alert" className="text-red-800 dark:text-red-200">
        The server could not import the seed ({outcome.problem.status === 0 ? 'no reply' : outcome.problem.status}): {outcome.problem.message}.
      </p>
    );
  }
  if (outcome.kind === 'refused') {
    return (
      <section aria-label="Problems" className="flex flex-col gap-1" aria-live="polite">
        <h3 className="font-semibold text-red-800 dark:text-red-200">Nothing loads until these are fixed in the seed</h3>
        <ul className="flex flex-col gap-1 text-sm">
          {outcome.problems.map((p, i) => (
            <li key={i}>
              <span aria-hidden="true">✗ </span>
              <code className="font-mono">{p.where}</code>
              {p.line === null ? '' : ` (line ${p.line})`}: {p.message}
            </li>
          ))}
        </ul>
      </section>
    );
  }
  const read = fromSpec(outcome.spec);
  const name = outcome.name ?? 'the imported Composition';
  if (!read.ok) {
    return (
      <section aria-label="Problems" className="flex flex-col gap-1" aria-live="polite">
        <h3 className="font-semibold text-red-800 dark:text-red-200">The server converted the seed, but the canvas cannot hold what came back</h3>
        <ul className="flex flex-col gap-1 text-sm">
          {read.problems.map((p, i) => (
            <li key={i}>
              <span aria-hidden="true">✗ </span>
              <code className="font-mono">{locText(['spec', ...p.path])}</code>: {p.message}
            </li>
          ))}
        </ul>
      </section>
    );
  }
  const verdict = outcome.verdict;
  const found = verdict === null ? [] : [...verdict.errors.map((f) => ['error', f] as const), ...verdict.warnings.map((f) => ['warning', f] as const)];
  return (
    <div className="flex flex-col gap-2" aria-live="polite">
      <section aria-label="The server's check" className="flex flex-col gap-1">
        <h3 className="font-semibold">
          {verdict === null
            ? `Converted ${name}; the server sent no verdict, so it is checked once it is on the canvas.`
            : verdict.errors.length === 0
              ? `Converted ${name}: valid${verdict.warnings.length === 0 ? '' : `, with ${verdict.warnings.length} ${verdict.warnings.length === 1 ? 'warning' : 'warnings'}`}.`
              : `Converted ${name}, with ${verdict.errors.length} ${verdict.errors.length === 1 ? 'problem' : 'problems'} to fix on the canvas (each is marked where it is):`}
        </h3>
        {found.length === 0 ? null : (
          <ul className="flex flex-col gap-1 text-sm">
            {found.map(([level, f], i) => (
              <li key={i} className={level === 'error' ? 'text-red-800 dark:text-red-200' : 'text-amber-900 dark:text-amber-100'}>
                <span aria-hidden="true">{level === 'error' ? '✗ ' : '! '}</span>
                {level === 'error' ? 'Error' : 'Warning'} <code className="font-mono">{locText(f.loc)}</code>: {f.message}
              </li>
            ))}
          </ul>
        )}
      </section>
      <div>
        <button
          type="button"
          className={primaryButton}
          onClick={() => {
            onLoad({ document: 1, line: 1, metadata: manifestMetadata(outcome.metadata), spec: outcome.spec, doc: read.doc });
          }}
        >
          Load {name} onto the canvas
        </button>
      </div>
    </div>
  );
}
