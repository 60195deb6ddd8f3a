// The pattern gallery (rules 12.7, 12.19): the example Compositions, each with its pattern and
// description, to load onto the canvas (undoably, unlinked: 12.25, 12.57) or to view as YAML. A
// template the server cannot run is viewed, not loaded, with the server's reason.

import { useState } from 'react';
import { button, focusRing, muted, primaryButton } from '../ui/classes.ts';
import { Dialog } from '../ui/Dialog.tsx';
import type { Capabilities } from './capabilities.ts';
import { TEMPLATES, templateRefusal, type Template } from './templates.ts';

interface Props {
  readonly open: boolean;
  readonly capabilities: Capabilities | null;
  readonly onLoad: (template: Template) => void;
  readonly onClose: () => void;
}

export function TemplatesDialog({ open, capabilities, onLoad, onClose }: Props) {
  const [viewing, setViewing] = useState<string | null>(null);
  return (
    <Dialog open={open} title="Pattern gallery" onClose={onClose}>
        <p className={muted}>The example Compositions of this release. Loading one replaces the canvas (Undo brings it back) and is not linked to the Composition you had open, so Save makes a new one.</p>
        <ul className="flex flex-col gap-2">
          {TEMPLATES.map((template) => {
            const refused = templateRefusal(template, capabilities);
            const shown = viewing === template.name;
            return (
              <li key={template.name} className="rounded-md border border-slate-300 p-3 dark:border-slate-600">
                <div className="flex flex-wrap items-baseline justify-between gap-2">
                  <h3 className="font-semibold">
                    <code className="font-mono">{template.name}</code> <span className={`text-sm font-normal ${muted}`}>{template.pattern}</span>
                  </h3>
                  <div className="flex gap-2">
                    <button type="button" className={button} aria-expanded={shown} aria-controls={`yaml-${template.name}`} onClick={() => { setViewing(shown ? null : template.name); }}>
                      {shown ? 'Hide YAML' : 'View YAML'}
                    </button>
                    <button
                      type="button"
                      className={primaryButton}
                      aria-disabled={refused === null ? undefined : 'true'}
                      aria-describedby={refused === null ? undefined : `refused-${template.name}`}
                      aria-label={`Load ${template.name}`}
                      onClick={() => {
                        if (refused === null) onLoad(template);
                      }}
                    >
                      Load
                    </button>
                  </div>
                </div>
                <p className="text-sm">{template.description}</p>
                {refused === null ? null : (
                  <p id={`refused-${template.name}`} className="text-sm text-amber-900 dark:text-amber-100">
                    View only: {refused}.
                  </p>
                )}
                {shown ? (
                  <pre id={`yaml-${template.name}`} tabIndex={0} aria-label={`${template.name}.yaml`} className={`mt-2 max-h-72 overflow-auto rounded bg-slate-100 p-2 font-mono text-xs dark:bg-slate-950 ${focusRing}`}>
                    {template.source}
                  </pre>
                ) : null}
              </li>
            );
          })}
        </ul>
    </Dialog>
  );
}
