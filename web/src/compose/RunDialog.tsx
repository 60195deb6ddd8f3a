// Run what is on the canvas (rules 12.31, 12.58): the input, capture on or off, then Start (or
// Ctrl/Cmd+Enter). A saved revision the canvas has not changed (the latest, or an older one
// opened from the revisions) is run by reference, its name and that revision, so the run is
// filed under it; anything else runs inline, as the canvas holds it, and the server validates it
// first (a 422's findings are listed, and marked on the canvas by the next validation). The
// dialog says which it will do (revision-state.ts `runPlan`). The run opens on its live panel.

import { useId, useState } from 'react';
import { startRun, type Finding, type StartRequest } from '../api/runs.ts';
import type { ApiOptions, Problem } from '../api/http.ts';
import { navigate } from '../app/route.ts';
import { locText } from '../canvas/findings.ts';
import type { CompositionLink } from '../canvas/store.ts';
import { input, muted, primaryButton } from '../ui/classes.ts';
import { Dialog } from '../ui/Dialog.tsx';
import { runPlan, type RunPlan } from './revision-state.ts';

interface Props {
  readonly open: boolean;
  readonly token: string;
  readonly api: ApiOptions;
  readonly namespace: string;
  readonly spec: Readonly<Record<string, unknown>>;
  /** The Composition (and revision) the canvas is linked to, if any. */
  readonly link: CompositionLink | null;
  /** Whether the canvas has changes its link's revision does not. */
  readonly dirty: boolean;
  readonly expire: (problem: Problem) => void;
  readonly onClose: () => void;
}

/** What starts the run: by reference (name and revision) when `plan` says so (12.58), else the canvas's spec inline. */
export function startRequest(spec: Readonly<Record<string, unknown>>, plan: RunPlan, text: string, capture: boolean): StartRequest {
  const what: Pick<StartRequest, 'composition' | 'compositionRef'> =
    plan.kind === 'inline' ? { composition: spec } : { compositionRef: { name: plan.name, ...(plan.revision === null ? {} : { revision: plan.revision }) } };
  return { ...what, input: text, ...(capture ? { captureContent: true } : {}) };
}

export function RunDialog({ open, token, api, namespace, spec, link, dirty, expire, onClose }: Props) {
  const ids = useId();
  const [text, setText] = useState('');
  const [capture, setCapture] = useState(false);
  const [busy, setBusy] = useState(false);
  const [refused, setRefused] = useState<{ readonly message: string; readonly findings: readonly Finding[] } | null>(null);
  const plan = runPlan(link, dirty, namespace);
  const start = (): void => {
    if (busy || namespace === '') return;
    setBusy(true);
    setRefused(null);
    void startRun(token, namespace, startRequest(spec, plan, text, capture), api).then((result) => {
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
      <p id={`${ids}-what`}>{plan.said}</p>
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
          <button type="submit" className={primaryButton} disabled={busy || namespace === ''} aria-describedby={`${ids}-what`}>
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
