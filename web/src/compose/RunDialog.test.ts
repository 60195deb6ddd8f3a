import { describe, expect, it } from 'vitest';
import { startRequest } from './RunDialog.tsx';
import { runPlan } from './revision-state.ts';

const spec = { pattern: 'Pipeline', nodes: [{ id: 'a', kind: 'LLMAgent' }] };
const link = { namespace: 'team-a', name: 'notes', revision: 3 };

describe('what runs the canvas (12.58)', () => {
  it('runs a saved Composition the canvas has not changed by reference, so the run is filed under it', () => {
    expect(startRequest(spec, runPlan(link, false, 'team-a'), 'v2.4', false)).toEqual({ compositionRef: { name: 'notes', revision: 3 }, input: 'v2.4' });
    expect(startRequest(spec, runPlan({ ...link, revision: null }, false, 'team-a'), 'v2.4', true)).toEqual({ compositionRef: { name: 'notes' }, input: 'v2.4', captureContent: true });
  });

  it('runs an older revision opened and unchanged by reference to that revision, not the newest', () => {
    expect(startRequest(spec, runPlan({ ...link, revision: 2, newest: 5 }, false, 'team-a'), 'v2.4', false)).toEqual({ compositionRef: { name: 'notes', revision: 2 }, input: 'v2.4' });
  });

  it('runs anything else inline, as the canvas holds it', () => {
    expect(startRequest(spec, runPlan(null, false, 'team-a'), 'v2.4', false)).toEqual({ composition: spec, input: 'v2.4' });
    expect(startRequest(spec, runPlan(link, true, 'team-a'), 'v2.4', false)).toEqual({ composition: spec, input: 'v2.4' });
    expect(startRequest(spec, runPlan({ ...link, revision: 2, newest: 5 }, true, 'team-a'), 'v2.4', false)).toEqual({ composition: spec, input: 'v2.4' });
  });
});
