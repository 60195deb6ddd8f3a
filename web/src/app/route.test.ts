import { describe, expect, it } from 'vitest';
import { parseRoute, routeNamespace } from './route.ts';

describe('the namespace a page looks at', () => {
  it.each([
    ['#/runs/team-a', 'team-a'],
    ['#/runs/team-a/notes.1', 'team-a'],
    ['#/runs/team-b/notes.1/replay', 'team-b'],
    ['#/history', ''],
    ['#/approvals', ''],
    ['#/', ''],
  ])('%s looks at %j', (hash, namespace) => {
    expect(routeNamespace(parseRoute(hash))).toBe(namespace);
  });

  it('is none when the address names no valid namespace, so a mistyped link changes nothing', () => {
    expect(routeNamespace({ page: 'run', namespace: 'Team_A', name: 'x' })).toBe('');
    expect(routeNamespace({ page: 'runs', namespace: '', query: new URLSearchParams() })).toBe('');
  });
});
