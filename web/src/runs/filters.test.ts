import { describe, expect, it } from 'vitest';
import { href, parseRoute, runsRoute } from '../app/route.ts';
import { NO_FILTERS, captionText, filtersToQuery, hasFilters, listRequest, phaseLabel, queryToFilters, refreshLimit, type RunsQuery } from './filters.ts';

describe('the runs page keeps its filters in the address', () => {
  const cases: readonly { readonly address: string; readonly filters: RunsQuery }[] = [
    { address: '#/runs/team-a', filters: NO_FILTERS },
    { address: '#/runs/team-a?phase=Running', filters: { ...NO_FILTERS, phase: 'Running' } },
    { address: '#/runs/team-a?role=approver', filters: { ...NO_FILTERS, role: 'approver' } },
    { address: '#/runs/team-a?composition=human-review', filters: { ...NO_FILTERS, composition: 'human-review' } },
    {
      address: '#/runs/team-a?phase=AwaitingApproval&role=owner&composition=release.notes',
      filters: { phase: 'AwaitingApproval', role: 'owner', composition: 'release.notes' },
    },
    // what the sidecar will refuse is kept as typed, so its 400 can say why
    { address: '#/runs/team-a?phase=running', filters: { ...NO_FILTERS, phase: 'running' } },
  ];

  it.each(cases)('reads $address and writes it back the same', ({ address, filters }) => {
    const route = parseRoute(address);
    expect(route.page).toBe('runs');
    if (route.page !== 'runs') return;
    expect(queryToFilters(route.query)).toEqual(filters);
    expect(href(runsRoute('team-a', filtersToQuery(filters)))).toBe(address);
  });

  it('ignores parameters it does not know and spaces around the words', () => {
    expect(queryToFilters(new URLSearchParams('phase=%20Failed%20&sort=name'))).toEqual({ ...NO_FILTERS, phase: 'Failed' });
  });

  it('leaves an empty filter out of the address', () => {
    expect(filtersToQuery({ phase: '', role: 'owner', composition: '' })).toEqual({ role: 'owner' });
    expect(hasFilters(NO_FILTERS)).toBe(false);
    expect(hasFilters({ ...NO_FILTERS, composition: 'x' })).toBe(true);
  });
});

describe('the list asks the sidecar', () => {
  it('for a page of the filters set, after the page before', () => {
    expect(listRequest(NO_FILTERS, 50)).toEqual({ limit: 50 });
    expect(listRequest({ phase: 'Running', role: 'owner', composition: 'human-review' }, 50, '1764000000/run-abc')).toEqual({
      phase: 'Running',
      role: 'owner',
      composition: 'human-review',
      limit: 50,
      continue: '1764000000/run-abc',
    });
  });

  it('on refresh, for as many runs as are shown, within the sidecar\'s 1 to 500', () => {
    expect(refreshLimit(0)).toBe(50);
    expect(refreshLimit(120)).toBe(120);
    expect(refreshLimit(900)).toBe(500);
    expect(listRequest(NO_FILTERS, 0).limit).toBe(1);
    expect(listRequest(NO_FILTERS, 10_000).limit).toBe(500);
  });
});

describe('the table says', () => {
  const cases: readonly { readonly filters: RunsQuery; readonly caption: string }[] = [
    { filters: NO_FILTERS, caption: 'Runs alice owns or approves in team-a, newest first' },
    { filters: { ...NO_FILTERS, role: 'owner' }, caption: 'Runs alice owns in team-a, newest first' },
    { filters: { ...NO_FILTERS, role: 'approver' }, caption: 'Runs alice approves in team-a, newest first' },
    {
      filters: { phase: 'AwaitingApproval', role: '', composition: 'human-review' },
      caption: 'Runs alice owns or approves in team-a, newest first: phase Awaiting approval, Composition human-review',
    },
    { filters: { phase: 'running', role: 'boss', composition: '' }, caption: 'Runs alice owns or approves in team-a, newest first: phase running, role boss' },
  ];

  it.each(cases)('"$caption"', ({ filters, caption }) => {
    expect(captionText('alice', 'team-a', filters)).toBe(caption);
  });

  it('each phase in words', () => {
    expect(phaseLabel('AwaitingApproval')).toBe('Awaiting approval');
    expect(phaseLabel('BudgetExhausted')).toBe('Budget exhausted');
    expect(phaseLabel(null)).toBe('Not started');
  });
});
