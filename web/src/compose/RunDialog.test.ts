import { describe, expect, it } from 'vitest';
import { startRequest } from './RunDialog.tsx';

const spec = { pattern: 'Pipeline', nodes: [{ id: 'a', kind: 'LLMAgent' }] };

describe('what runs the canvas (12.58)', () => {
  it('runs a saved Composition the canvas has not changed by reference, so the run is filed under it', () => {
    expect(startRequest(spec, { namespace: 'team-a', name: 'notes', revision: 3 }, 'v2.4', false)).toEqual({ compositionRef: { name: 'notes', revision: 3 }, input: 'v2.4' });
    expect(startRequest(spec, { namespace: 'team-a', name: 'notes', revision: null }, 'v2.4', true)).toEqual({ compositionRef: { name: 'notes' }, input: 'v2.4', captureContent: true });
  });

  it('runs anything else inline, as the canvas holds it', () => {
    expect(startRequest(spec, null, 'v2.4', false)).toEqual({ composition: spec, input: 'v2.4' });
  });
});
