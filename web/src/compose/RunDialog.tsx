// Run what is on the canvas (rules 12.31, 12.58): the input, capture on or off, then Start (or
// Ctrl/Cmd+Enter). A saved Composition the canvas has not changed is run by reference (its name
// and revision), so the run is filed under it; anything else runs inline, as the canvas holds it,
// and the server validates it first (a 422's findings are listed, and marked on the canvas by
// the next validation). The run opens on its live panel.

import { useId, useState } from 'react';
import { startRun, type Finding, type StartRequest } from '../api/runs.ts';
import type { ApiOptions, Problem } from '../api/http.ts';
import { navigate } from '../app/route.ts';
import { locText } from '../canvas/findings.ts';
import type { CompositionLink } from '../canvas/store.ts';
import { input, muted, primaryButton } from '../ui/classes.ts';
import { Dialog } from '../ui/Dialog.tsx';

interface Props {
  readonly open: boolean;
  readonly token: string;
  readonly api: ApiOptions;
  readonly namespace: string;
  readonly spec: Readonly<Record<string, unknown>>;
  /** The Composition the canvas is linked to, when it has no unsaved changes. */
  readonly savedAs: CompositionLink | null;
  readonly expire: (problem: Problem) => void;
  readonly onClose: () => void;
}

/** What starts the run: by reference when the canvas is a saved Composition unchanged (12.58), else inline. */
export function startRequest(spec: Readonly<Record<string, unknown>>, savedAs: CompositionLink | null, text: string, capture: boolean): StartRequest {
  const what: Pick<StartRequest, 'composition' | 'compositionRef'> =
    savedAs === null ? { composition: spec } : { compositionRef: { name: savedAs.name, ...(savedAs.revision === null ? {} : { revision: savedAs.revision }) } };
  return { ...what, input: text, ...(capture ? { captureContent: true } : {}) };
}

export function RunDialog({ open, token, api, namespace, spec, savedAs, expire, onClose }: Props) {
  const ids = useId();
  const [text, setText] = useState('');
  const [capture, setCapture] = useState(false);
  const [busy, setBusy] = useState(false);
  const [refused, setRefused] = useState<{ readonly message: string; readonly findings: readonly Finding[] } | null>(null);
  const start = (): void => {
    if (busy || namespace === '') return;
    setBusy(true);
    setRefused(null);
    void startRun(token, namespace, startRequest(spec, savedAs, text, capture), api).then((result) => {
      setBusy(false);
      if (result.ok) {
        onClose();
        navigate({ page: 'run', namespace: result.run.namespace, name: result.run.name });
      } else if (result.problem.status === 401) expire(result.problem);
      else setRefused({ message: `The run was not started (${result.problem.status}): ${result.problem.message}`, findings: result.findings });
    });
  };
  return (
    <Dialog open={open} title="Run the canvas" onClose={onClose}>
      <p className={muted}>
        {savedAs === null ? 'Runs the composition as it is on the canvas (inline); the server checks it first.' : `Runs ${savedAs.name}${savedAs.revision === null ? '' : ` revision ${savedAs.revision}`} by reference, so the run is filed under it.`}
      </p>
      {namespace === '' ? <p role="alert">Choose a namespace on the Runs page first: a run is started in a namespace.</p> : null}
      <form
        className="flex flex-col gap-2"
        onSubmit={(event) => {
          event.preventDefault();
          start();
        }}
      >
        <label htmlFor={`${ids}-input`} className="text-sm font-medium">
          Input
        </label>
        <textarea
          id={`${ids}-input`}
          rows={5}
          className={input}
          value={text}
          aria-keyshortcuts="Control+Enter"
          onChange={(e) => { setText(e.target.value); }}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
              e.preventDefault();
              start();
            }
          }}
        />
        <label className="flex items-center gap-2 text-sm">
          <input type="checkbox" checked={capture} onChange={(e) => { setCapture(e.target.checked); }} />
          Capture content (prompts and replies are stored with the trace)
        </label>
        <div>
          <button type="submit" className={primaryButton} disabled={busy || namespace === ''}>
            {busy ? 'Starting…' : 'Start the run'}
          </button>
          <span className={`ml-2 text-sm ${muted}`}>or Ctrl+Enter in the input</span>
        </div>
      </form>
      {refused === null ? null : (
        <div role="alert" className="flex flex-col gap-1 text-red-800 dark:text-red-200">
          <p>{refused.message}</p>
          {refused.findings.length === 0 ? null : (
            <ul className="list-disc pl-5 text-sm">
              {refused.findings.map((f, i) => (
                <li key={i}>
                  <code className="font-mono">{locText(f.loc)}</code>: {f.message}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
    </Dialog>
  );
}
