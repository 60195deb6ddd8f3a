// WAI-ARIA tabs (the Tabs pattern, automatic activation): one tab stop for the list; Left and
// Right move between tabs (wrapping), Home and End go to the first and last; the panel shown
// is the selected tab's, reachable with Tab.

import { useId, useRef, type KeyboardEvent, type ReactNode } from 'react';
import { focusRing } from '../ui/classes.ts';

export interface TabSpec<Id extends string> {
  readonly id: Id;
  readonly label: ReactNode;
  readonly panel: ReactNode;
}

interface Props<Id extends string> {
  /** What the tab list is, for screen readers. */
  readonly label: string;
  readonly tabs: readonly TabSpec<Id>[];
  readonly selected: Id;
  readonly onSelect: (id: Id) => void;
}

/** The tab a key moves to from `index` of `count`, or null for a key the tabs do not take. */
export function tabKeyTarget(key: string, index: number, count: number): number | null {
  if (count === 0) return null;
  switch (key) {
    case 'ArrowRight':
      return (index + 1) % count;
    case 'ArrowLeft':
      return (index - 1 + count) % count;
    case 'Home':
      return 0;
    case 'End':
      return count - 1;
    default:
      return null;
  }
}

export function Tabs<Id extends string>({ label, tabs, selected, onSelect }: Props<Id>) {
  const base = useId();
  const buttons = useRef(new Map<Id, HTMLButtonElement>());
  const onKeyDown = (event: KeyboardEvent<HTMLDivElement>): void => {
    const index = tabs.findIndex((t) => t.id === selected);
    const target = tabKeyTarget(event.key, Math.max(0, index), tabs.length);
    if (target === null) return;
    event.preventDefault();
    const tab = tabs[target];
    if (tab === undefined) return;
    onSelect(tab.id);
    buttons.current.get(tab.id)?.focus();
  };
  const current = tabs.find((t) => t.id === selected) ?? tabs[0];
  return (
    <div className="flex min-w-0 flex-col">
      <div role="tablist" aria-label={label} className="flex gap-1 border-b border-slate-300 dark:border-slate-700" onKeyDown={onKeyDown}>
        {tabs.map((tab) => {
          const on = tab.id === current?.id;
          return (
            <button
              key={tab.id}
              ref={(element) => {
                if (element === null) buttons.current.delete(tab.id);
                else buttons.current.set(tab.id, element);
              }}
              type="button"
              role="tab"
              id={`${base}-tab-${tab.id}`}
              aria-selected={on}
              aria-controls={`${base}-panel-${tab.id}`}
              tabIndex={on ? 0 : -1}
              onClick={() => {
                onSelect(tab.id);
              }}
              className={`-mb-px rounded-t-md border border-b-0 px-3 py-1.5 font-medium ${on ? 'border-slate-300 bg-white text-slate-950 dark:border-slate-700 dark:bg-slate-900 dark:text-slate-50' : 'border-transparent text-slate-700 hover:bg-slate-100 dark:text-slate-300 dark:hover:bg-slate-800'} ${focusRing}`}
            >
              {tab.label}
            </button>
          );
        })}
      </div>
      {current === undefined ? null : (
        <div role="tabpanel" id={`${base}-panel-${current.id}`} aria-labelledby={`${base}-tab-${current.id}`} className="min-w-0 pt-3">
          {current.panel}
        </div>
      )}
    </div>
  );
}
