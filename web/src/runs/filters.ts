// The runs page's filters live in its address (`#/runs/team-a?phase=Running&role=owner&
// composition=human-review`), so back, forward, reload and a shared link show the same list.
// What the address says is sent to the sidecar as it is: a word it does not know (a hand-edited
// link) comes back as its 400 at `["query"]`, in its own words, rather than being dropped here.

import { PHASE_WORDS, RUN_PHASES, type RunFilters, type RunPhase } from '../api/runs.ts';

/** The filters as the address holds them; empty means "any". */
export interface RunsQuery {
  readonly phase: string;
  readonly role: string;
  readonly composition: string;
}

export const NO_FILTERS: RunsQuery = { phase: '', role: '', composition: '' };

export const ROLES = ['owner', 'approver'] as const;

/** How many runs a page asks for. */
export const PAGE_SIZE = 50;

/** The most one list call may ask for (the sidecar's `limit` ceiling). */
export const MAX_PAGE = 500;

export function isRunPhase(word: string): word is RunPhase {
  return (RUN_PHASES as readonly string[]).includes(word);
}

export function isRole(word: string): word is (typeof ROLES)[number] {
  return (ROLES as readonly string[]).includes(word);
}

/** The filters an address's query names (surrounding spaces dropped, other parameters ignored). */
export function queryToFilters(query: URLSearchParams): RunsQuery {
  return {
    phase: (query.get('phase') ?? '').trim(),
    role: (query.get('role') ?? '').trim(),
    composition: (query.get('composition') ?? '').trim(),
  };
}

/** The address query of `filters`: only those set, always in the order phase, role, composition. */
export function filtersToQuery(filters: RunsQuery): Record<string, string> {
  const out: Record<string, string> = {};
  if (filters.phase !== '') out['phase'] = filters.phase;
  if (filters.role !== '') out['role'] = filters.role;
  if (filters.composition !== '') out['composition'] = filters.composition;
  return out;
}

export function hasFilters(filters: RunsQuery): boolean {
  return filters.phase !== '' || filters.role !== '' || filters.composition !== '';
}

/** What `listRuns` is asked: the filters, a page of `limit`, after `continue` when given. */
export function listRequest(filters: RunsQuery, limit: number, after: string | null = null): RunFilters {
  return {
    ...(filters.phase === '' ? {} : { phase: filters.phase }),
    ...(filters.role === '' ? {} : { role: filters.role }),
    ...(filters.composition === '' ? {} : { composition: filters.composition }),
    limit: Math.min(MAX_PAGE, Math.max(1, limit)),
    ...(after === null ? {} : { continue: after }),
  };
}

/** How many runs a refresh asks for: as many as are shown, at least a page, at most the ceiling. */
export function refreshLimit(shown: number): number {
  return Math.min(MAX_PAGE, Math.max(PAGE_SIZE, shown));
}


/** A phase in words ("Awaiting approval"); a run with none yet has "Not started". */
export function phaseLabel(phase: RunPhase | null): string {
  return phase === null ? 'Not started' : PHASE_WORDS[phase];
}

/**
 * The table's caption: whose runs, where, in which order, and what narrows them, e.g. "Runs
 * alice owns in team-a, newest first: phase Running, Composition human-review".
 */
export function captionText(username: string, namespace: string, filters: RunsQuery): string {
  const verb = filters.role === 'owner' ? 'owns' : filters.role === 'approver' ? 'approves' : 'owns or approves';
  const narrowed: string[] = [];
  if (filters.phase !== '') narrowed.push(`phase ${isRunPhase(filters.phase) ? phaseLabel(filters.phase) : filters.phase}`);
  if (filters.role !== '' && !isRole(filters.role)) narrowed.push(`role ${filters.role}`);
  if (filters.composition !== '') narrowed.push(`Composition ${filters.composition}`);
  return `Runs ${username} ${verb} in ${namespace}, newest first${narrowed.length === 0 ? '' : `: ${narrowed.join(', ')}`}`;
}
