// The list's filters: phase, role and Composition. Each change is a new address (a history
// entry), so back and forward step through them; the Composition filter applies on Enter.

import { useId, useState } from 'react';
import { RUN_PHASES } from '../api/runs.ts';
import { href, runsRoute } from '../app/route.ts';
import { button, input, link } from '../ui/classes.ts';
import type { CompositionChoice } from './compositions.ts';
import { filtersToQuery, hasFilters, isRole, isRunPhase, phaseLabel, type RunsQuery } from './filters.ts';

interface Props {
  readonly namespace: string;
  readonly filters: RunsQuery;
  readonly choices?: readonly CompositionChoice[];
  readonly onChange: (filters: RunsQuery) => void;
}

export function FilterBar({ namespace, filters, choices = [], onChange }: Props) {
  const ids = useId();
  // The Composition typed follows the address when it changes (back, forward, a link).
  const [typed, setTyped] = useState(filters.composition);
  const [seen, setSeen] = useState(filters.composition);
  if (seen !== filters.composition) {
    setSeen(filters.composition);
    setTyped(filters.composition);
  }
  const select = `${input} py-1`;
  return (
    <form
      role="search"
      aria-label="Filter runs"
      className="flex flex-wrap items-end gap-x-4 gap-y-2"
      noValidate
      onSubmit={(event) => {
        event.preventDefault();
        onChange({ ...filters, composition: typed.trim() });
      }}
    >
      <div className="flex flex-col gap-1">
        <label htmlFor={`${ids}-phase`} className="text-sm font-medium">
          Phase
        </label>
        <select
          id={`${ids}-phase`}
          className={select}
          value={filters.phase}
          onChange={(event) => {
            onChange({ ...filters, phase: event.target.value });
          }}
        >
          <option value="">Any phase</option>
          {RUN_PHASES.map((phase) => (
            <option key={phase} value={phase}>
              {phaseLabel(phase)}
            </option>
          ))}
          {filters.phase === '' || isRunPhase(filters.phase) ? null : <option value={filters.phase}>{filters.phase} (not a phase)</option>}
        </select>
      </div>
      <div className="flex flex-col gap-1">
        <label htmlFor={`${ids}-role`} className="text-sm font-medium">
          Your role
        </label>
        <select
          id={`${ids}-role`}
          className={select}
          value={filters.role}
          onChange={(event) => {
            onChange({ ...filters, role: event.target.value });
          }}
        >
          <option value="">Owner or approver</option>
          <option value="owner">Owner</option>
          <option value="approver">Approver</option>
          {filters.role === '' || isRole(filters.role) ? null : <option value={filters.role}>{filters.role} (not a role)</option>}
        </select>
      </div>
      <div className="flex flex-col gap-1">
        <label htmlFor={`${ids}-composition`} className="text-sm font-medium">
          Composition
        </label>
        <div className="flex gap-2">
          <input
            id={`${ids}-composition`}
            className={`${input} w-48 py-1 font-mono`}
            value={typed}
            autoComplete="off"
            spellCheck={false}
            list={choices.length === 0 ? undefined : `${ids}-choices`}
            placeholder="any"
            aria-describedby={`${ids}-composition-hint`}
            onChange={(event) => {
              setTyped(event.target.value);
            }}
          />
          <button type="submit" className={`${button} py-1`}>
            Apply
          </button>
        </div>
        <span id={`${ids}-composition-hint`} className="sr-only">
          By name; runs with an inline composition are left out. Press Enter to apply.
        </span>
        {choices.length === 0 ? null : (
          <datalist id={`${ids}-choices`}>
            {choices.map((choice) => (
              <option key={choice.name} value={choice.name} />
            ))}
          </datalist>
        )}
      </div>
      {hasFilters(filters) ? (
        <a className={`${link} mb-1.5`} href={href(runsRoute(namespace))}>
          Clear filters
        </a>
      ) : null}
    </form>
  );
}

/** The address of the list with `filters`. */
export function filteredRoute(namespace: string, filters: RunsQuery) {
  return runsRoute(namespace, filtersToQuery(filters));
}
