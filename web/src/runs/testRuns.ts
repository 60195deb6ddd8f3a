// StudioRun objects as the sidecar sends them, for the runs page's tests.

import { parseRun, type Run } from '../api/runs.ts';

export interface RunShape {
  readonly name: string;
  readonly owner?: string;
  readonly phase?: string;
  readonly ref?: { readonly name: string; readonly revision?: number } | null;
  readonly ranRevision?: number;
  readonly startTime?: string;
  readonly completionTime?: string;
  readonly tokens?: number;
  readonly pending?: number;
  readonly cancel?: boolean;
  readonly error?: string;
  readonly message?: string;
  readonly created?: string;
}

/** The JSON of a StudioRun in team-a. */
export function runJson(shape: RunShape): Record<string, unknown> {
  const ref = shape.ref === undefined ? { name: 'human-review' } : shape.ref;
  const status: Record<string, unknown> = {};
  if (shape.phase !== undefined) status['phase'] = shape.phase;
  if (ref !== null && shape.phase !== undefined && shape.phase !== 'Pending') {
    status['composition'] = { name: ref.name, revision: shape.ranRevision ?? ref.revision ?? 1, digest: 'sha256:0f' };
  }
  if (shape.startTime !== undefined) status['startTime'] = shape.startTime;
  if (shape.completionTime !== undefined) status['completionTime'] = shape.completionTime;
  if (shape.tokens !== undefined) status['totals'] = { tokens: shape.tokens, tokensByModel: { scripted: shape.tokens }, toolCalls: 2, delegations: 0, remoteCalls: 1, wallTimeMs: 1000 };
  if (shape.pending !== undefined) {
    status['pendingApprovals'] = Array.from({ length: shape.pending }, (_, i) => ({
      id: `approval-${i + 1}`,
      node: 'review',
      kind: 'Approval',
      digest: 'ab'.repeat(32),
      expiresAt: '2026-12-05T10:30:00.000Z',
    }));
  }
  if (shape.error !== undefined) status['error'] = { message: shape.error, node: 'writer' };
  if (shape.message !== undefined) status['conditions'] = [{ type: 'Succeeded', status: 'Unknown', message: shape.message, lastTransitionTime: '2026-12-05T10:00:00Z' }];
  return {
    apiVersion: 'studio.orrery.dev/v1alpha1',
    kind: 'StudioRun',
    metadata: { name: shape.name, namespace: 'team-a', uid: `uid-${shape.name}`, creationTimestamp: shape.created ?? shape.startTime ?? '2026-12-05T10:00:00Z' },
    spec: {
      ...(ref === null ? { composition: { nodes: [] } } : { compositionRef: ref }),
      input: 'version 2.4',
      owner: shape.owner ?? 'alice',
      ...(shape.cancel === true ? { cancel: true } : {}),
    },
    status,
  };
}

export function run(shape: RunShape): Run {
  const parsed = parseRun(runJson(shape));
  if (parsed === null) throw new Error(`not a run: ${shape.name}`);
  return parsed;
}
