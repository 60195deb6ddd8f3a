// Export and import as Kubernetes manifests (rules 12.25, 12.65, 12.67; canvas/manifest.ts).
// Export: the canvas as a Composition manifest and the RegistryEntries it uses, to copy or
// download; no code is generated. Import: YAML pasted or read from a file; only Compositions
// load, every other document is listed as refused with what to do instead, and every problem is
// listed at its document and line before anything loads. A load is undoable from its banner.

import { useId, useState } from 'react';
import { importYaml, exportYaml, type ImportResult, type LoadedComposition } from '../canvas/manifest.ts';
import type { RegistryItem } from '../api/registry.ts';
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

export function ImportDialog({ open, namespace, onLoad, onClose }: ImportProps) {
  const ids = useId();
  const [text, setText] = useState('');
  const [file, setFile] = useState<string | null>(null);
  const [result, setResult] = useState<ImportResult | null>(null);
  const [tooBig, setTooBig] = useState<string | null>(null);
  const check = (source: string, from: string | null): void => {
    setResult(importYaml(source, { ...(from === null ? {} : { file: from }), ...(namespace === '' ? {} : { namespace }) }));
  };
  return (
    <Dialog open={open} title="Import YAML" onClose={onClose}>
      <p className={muted}>Paste manifests, or read a file. Only Compositions load onto the canvas (Undo brings back what was there); RegistryEntries and other kinds are applied with kubectl.</p>
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
              setTooBig(`${chosen.name} is ${chosen.size.toLocaleString('en')} bytes; the most an import reads is ${MAX_IMPORT_BYTES.toLocaleString('en')}.`);
              return;
            }
            setTooBig(null);
            void chosen.text().then((content) => {
              setText(content);
              setFile(chosen.name);
              check(content, chosen.name);
            });
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
            setResult(null);
          }}
        />
      </div>
      <div>
        <button
          type="button"
          className={button}
          disabled={text.trim() === ''}
          onClick={() => {
            if (new TextEncoder().encode(text).length > MAX_IMPORT_BYTES) {
              setTooBig(`That is more than the ${MAX_IMPORT_BYTES.toLocaleString('en')} bytes an import reads.`);
              return;
            }
            setTooBig(null);
            check(text, file);
          }}
        >
          Check
        </button>
      </div>
      {tooBig === null ? null : (
        <p role="alert" className="text-red-800 dark:text-red-200">
          {tooBig}
        </p>
      )}
      {result === null ? null : <ImportReport result={result} onLoad={onLoad} />}
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
