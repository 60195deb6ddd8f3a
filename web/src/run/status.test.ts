import { describe, expect, it } from 'vitest';
import type { StreamEnd } from '../api/events.ts';
import type { Problem } from '../api/http.ts';
import { parseRun } from '../api/runs.ts';
import { RunModel } from './model.ts';
import { feedStateLine, livePhase } from './status.ts';
import { events } from './test-events.ts';

const problem: Problem = { status: 503, code: 'unavailable', message: 'the store cannot be reached.', loc: [], retryAfterSeconds: 2 };
const budgets = { maxTokens: 1000, maxToolCalls: 10, maxDelegations: 4, maxRemoteCalls: 4, timeoutSeconds: 600 };

function run(phase: string) {
  const parsed = parseRun({ metadata: { name: 'r', namespace: 'team-a', uid: 'u' }, spec: { owner: 'alice' }, status: { phase } });
  if (parsed === null) throw new Error('not a run');
  return parsed;
}

describe('how the panel says the events are coming in', () => {
  it('says connecting, live, and reconnecting with the try and the wait (12.43)', () => {
    expect(feedStateLine({ kind: 'stream', status: { state: 'connecting', lastSeq: 0 } }, 0)?.text).toBe("Connecting to the run's events…");
    expect(feedStateLine({ kind: 'stream', status: { state: 'open', lastSeq: 12 } }, 12)).toEqual({ tone: 'live', text: 'Live: following the run as it goes.', reconnect: false });
    // The line is a live region: it does not change with each event.
    expect(feedStateLine({ kind: 'stream', status: { state: 'open', lastSeq: 12 } }, 13)).toEqual(feedStateLine({ kind: 'stream', status: { state: 'open', lastSeq: 12 } }, 12));
    expect(feedStateLine({ kind: 'stream', status: { state: 'waiting', lastSeq: 12, attempt: 3, delayMs: 2000, problem } }, 12)?.text).toBe(
      'The connection dropped (the store cannot be reached). Reconnecting in 2.00 s (try 3 of 5), after event 12.',
    );
  });

  it('offers Reconnect when the stream gave up or too many are open, not when the run ended or access is refused', () => {
    const stopped = (end: StreamEnd) => feedStateLine({ kind: 'stream', status: { state: 'stopped', end } }, 5);
    expect(stopped({ reason: 'gave-up', lastSeq: 5, problem })?.reconnect).toBe(true);
    expect(stopped({ reason: 'too-many-streams', lastSeq: 5, problem, explanation: 'Close one of them.' })).toEqual({ tone: 'error', text: 'Close one of them.', reconnect: true });
    expect(stopped({ reason: 'ended', lastSeq: 5 })).toEqual({ tone: 'done', text: 'All 5 events received; the run has ended.', reconnect: false });
    expect(stopped({ reason: 'forbidden', lastSeq: 5, problem: { ...problem, status: 403, message: 'cannot get studioruns' } })?.text).toBe(
      "The cluster refuses you this run's events (403): cannot get studioruns. Ask an admin to bind you a Role that may get this StudioRun (examples/rbac/studio-user-role.yaml), then reload.",
    );
    expect(stopped({ reason: 'refused', lastSeq: 5, problem: { ...problem, status: 404, message: 'no such run of yours' } })?.reconnect).toBe(false);
  });

  it('says what to do next when the events are refused', () => {
    const stopped = (end: StreamEnd) => feedStateLine({ kind: 'stream', status: { state: 'stopped', end } }, 5)?.text;
    expect(stopped({ reason: 'unauthenticated', lastSeq: 5, problem: { ...problem, status: 401, message: 'token expired' } })).toBe(
      'Your token is no longer accepted (401): token expired. Sign in again with a fresh token.',
    );
    expect(stopped({ reason: 'refused', lastSeq: 5, problem: { ...problem, status: 404, message: 'no such run of yours' } })).toBe(
      "The sidecar refused the run's events (404): no such run of yours. The run may have been deleted, or you are neither its owner nor one of its approvers.",
    );
    expect(stopped({ reason: 'refused', lastSeq: 5, problem: { ...problem, status: 400, message: 'bad query' } })).toBe(
      "The sidecar refused the run's events (400): bad query. Reload the page to try again; if it happens again, the sidecar's log says why.",
    );
  });

  it('says how the stored pages were read', () => {
    expect(feedStateLine({ kind: 'pages', reading: true, complete: false, problem: null }, 500)?.text).toBe("Reading the run's stored events…");
    expect(feedStateLine({ kind: 'pages', reading: false, complete: true, problem: null }, 1)?.text).toBe('All 1 event read; the run has ended.');
    expect(feedStateLine({ kind: 'pages', reading: false, complete: false, problem: null }, 9)?.text).toBe("9 events read; the stored events end before the run's last one.");
    expect(feedStateLine({ kind: 'idle' }, 0)).toBeNull();
  });
});

describe('the run\'s phase as the panel shows it', () => {
  it('follows the events: running once started, awaiting while an approval waits, the outcome once ended', () => {
    const model = new RunModel();
    expect(livePhase(run('Pending'), model)).toBe('Pending');
    const all = events(
      { type: 'run.start', composition: 'c', pattern: 'Pipeline', nodes: 1, budgets, captureContent: false, dryRunTools: false, inputSize: 1 },
      { type: 'approval.requested', approvalId: 'a1', nodeId: 'review', kind: 'Approval', digest: 'd', size: 1, complete: true, expiresAt: '2026-12-05T11:00:00.000Z' },
      { type: 'approval.decided', approvalId: 'a1', nodeId: 'review', kind: 'Approval', decision: 'approved', waitMs: 1 },
      { type: 'run.end', outcome: 'Succeeded', totals: {}, dropped: 0, outputSize: 0 },
    );
    model.applyAll(all.slice(0, 1));
    expect(livePhase(run('Pending'), model)).toBe('Running');
    model.applyAll(all.slice(1, 2));
    expect(livePhase(run('Running'), model)).toBe('AwaitingApproval');
    model.applyAll(all.slice(2, 3));
    expect(livePhase(run('AwaitingApproval'), model)).toBe('Running');
    model.applyAll(all.slice(3));
    expect(livePhase(run('Running'), model)).toBe('Succeeded');
  });

  it('takes an ended run\'s phase from the run when its events stop short', () => {
    expect(livePhase(run('Failed'), new RunModel())).toBe('Failed');
    expect(livePhase(null, new RunModel())).toBeNull();
  });
});
