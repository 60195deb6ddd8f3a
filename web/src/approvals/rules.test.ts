import { describe, expect, it } from 'vitest';
import {
  approveBlocked,
  clockOf,
  conflictTitle,
  decisionOutcome,
  escapeRuns,
  formatSecondsLeft,
  rejectBlocked,
  secondsLeft,
  SERVICE_ACCOUNT_REASON,
  timeLeftText,
  type ApproveInputs,
} from './rules.ts';

const checked: ApproveInputs = {
  person: true,
  kind: 'Approval',
  complete: true,
  size: 30,
  digest: { state: 'match', digest: 'ab' },
  seconds: 600,
  read: true,
  recorded: false,
  answer: '',
};

describe('Approve is on only for a person who read a checked, whole text with time left (rule 12.37)', () => {
  const table: readonly { readonly when: string; readonly inputs: ApproveInputs; readonly reason: string | RegExp | null }[] = [
    { when: 'checked, read, whole, time left', inputs: checked, reason: null },
    { when: 'the digest is still being computed', inputs: { ...checked, digest: { state: 'checking' } }, reason: /Checking the digest/ },
    { when: 'the digest does not match', inputs: { ...checked, digest: { state: 'mismatch', computed: 'ab', server: 'cd' } }, reason: /does not match: do not approve/ },
    { when: 'the text is incomplete', inputs: { ...checked, complete: false, size: 200_000 }, reason: /too long to show whole \(200,000 bytes\).*Reject it/ },
    { when: 'the text is incomplete, even unchecked', inputs: { ...checked, complete: false, digest: { state: 'checking' } }, reason: /too long to show whole/ },
    { when: 'ten seconds are left', inputs: { ...checked, seconds: 10 }, reason: /Too little time.*You can still reject/ },
    { when: 'one second is left', inputs: { ...checked, seconds: 1 }, reason: /Too little time/ },
    { when: 'eleven seconds are left', inputs: { ...checked, seconds: 11 }, reason: null },
    { when: 'it has expired', inputs: { ...checked, seconds: 0 }, reason: 'This request has expired.' },
    { when: 'a service account is signed in', inputs: { ...checked, person: false }, reason: SERVICE_ACCOUNT_REASON },
    { when: 'a service account, whatever else holds', inputs: { ...checked, person: false, seconds: 0, complete: false }, reason: SERVICE_ACCOUNT_REASON },
    { when: 'no secure context: the server digest stands', inputs: { ...checked, digest: { state: 'unchecked', reason: 'no Web Crypto' } }, reason: null },
    { when: 'the text was not scrolled to its end', inputs: { ...checked, read: false }, reason: /Scroll the text to its end/ },
    { when: 'a decision is recorded, not taken up', inputs: { ...checked, recorded: true }, reason: /recorded; the run has not taken it up yet/ },
    { when: 'a question has no answer yet', inputs: { ...checked, kind: 'Input', answer: '  ' }, reason: 'Write an answer first.' },
    { when: 'a question has an answer', inputs: { ...checked, kind: 'Input', answer: '2.4.1' }, reason: null },
    { when: 'a question is expiring', inputs: { ...checked, kind: 'Input', answer: 'x', seconds: 5 }, reason: /to send answer safely.*You can still decline/ },
    { when: 'an action is incomplete', inputs: { ...checked, kind: 'Action', complete: false }, reason: /Refuse it/ },
  ];
  for (const { when, inputs, reason } of table) {
    it(`when ${when}`, () => {
      const got = approveBlocked(inputs);
      if (reason === null) expect(got).toBeNull();
      else if (typeof reason === 'string') expect(got).toBe(reason);
      else expect(got).toMatch(reason);
    });
  }

  it('Reject stays on while expiring, and goes off once expired, recorded or for a service account', () => {
    expect(rejectBlocked({ person: true, recorded: false, seconds: 3 })).toBeNull();
    expect(rejectBlocked({ person: true, recorded: false, seconds: 0 })).toBe('This request has expired.');
    expect(rejectBlocked({ person: true, recorded: true, seconds: 300 })).toMatch(/recorded/);
    expect(rejectBlocked({ person: false, recorded: false, seconds: 300 })).toBe(SERVICE_ACCOUNT_REASON);
  });
});

describe('the countdown', () => {
  it('counts whole seconds up to the expiry, never below zero', () => {
    const at = Date.parse('2026-12-02T10:15:00.000Z');
    expect(secondsLeft('2026-12-02T10:15:00.000Z', at - 60_000)).toBe(60);
    expect(secondsLeft('2026-12-02T10:15:00.000Z', at - 200)).toBe(1);
    expect(secondsLeft('2026-12-02T10:15:00.000Z', at)).toBe(0);
    expect(secondsLeft('2026-12-02T10:15:00.000Z', at + 5000)).toBe(0);
    expect(secondsLeft('not a time', at)).toBe(0);
  });

  it('reads as seconds, minutes and hours', () => {
    expect(formatSecondsLeft(0)).toBe('0 s');
    expect(formatSecondsLeft(9)).toBe('9 s');
    expect(formatSecondsLeft(59)).toBe('59 s');
    expect(formatSecondsLeft(60)).toBe('1 min 00 s');
    expect(formatSecondsLeft(14 * 60 + 5)).toBe('14 min 05 s');
    expect(formatSecondsLeft(3600 + 2 * 60 + 9)).toBe('1 h 02 min 09 s');
    expect(formatSecondsLeft(86_400)).toBe('24 h 00 min 00 s');
  });

  it('says "expiring" in the last ten seconds and "expired" after', () => {
    expect(clockOf(11)).toBe('running');
    expect(clockOf(10)).toBe('expiring');
    expect(clockOf(1)).toBe('expiring');
    expect(clockOf(0)).toBe('expired');
    expect(timeLeftText(900)).toBe('15 min 00 s left');
    expect(timeLeftText(7)).toBe('Expiring: 7 s left.');
    expect(timeLeftText(0)).toBe('Expired: nothing can be decided any more.');
  });
});

describe("every 409 is told as what happened, from the sidecar's message", () => {
  const cases: readonly [string, RegExp][] = [
    ["the digest ab12 is not the digest of approval approval-1's text (cd34); read the text again and approve its digest", /^Digest mismatch: .*Nothing was decided/],
    ['approval approval-1 is already settled: approved', /^Already settled: it was already approved before your decision arrived/],
    ['approval approval-1 is already settled: expired', /^Already settled: it expired/],
    ['approval approval-1 is already settled: cancelled', /^Already settled: the run was cancelled/],
    ['the decision came too late: approval approval-1 was settled first (expired)', /^Too late: the approval expired before the run took up your decision/],
    ['the decision came too late: approval approval-1 was settled first (cancelled)', /^Too late: the run was cancelled/],
    ['the decision came too late: approval approval-1 was settled first (rejected)', /^Too late: another decision was taken first \(rejected\)/],
    ['the run refused this decision: the digest does not match the text asked', /^The run refused your decision: the digest does not match the text asked$/],
    ['something new', /conflicts with the state of the run/],
  ];
  for (const [message, title] of cases) {
    it(`"${message}"`, () => {
      expect(conflictTitle(message)).toMatch(title);
      const outcome = decisionOutcome('Approval', { ok: false, problem: { status: 409, code: 'conflict', message, loc: [], retryAfterSeconds: null } });
      expect(outcome.tone).toBe('error');
      expect(outcome.title).toMatch(title);
      expect(outcome.detail).toBe(message);
    });
  }
});

describe('what every other answer comes to', () => {
  const problem = (status: number, message: string, retryAfterSeconds: number | null = null) => ({ ok: false as const, problem: { status, code: 'x', message, loc: [], retryAfterSeconds } });

  it('200 is approved or rejected, in the words of the kind', () => {
    expect(decisionOutcome('Approval', { ok: true, taken: true, id: 'a', index: 0, outcome: 'approved' })).toMatchObject({ tone: 'success', title: 'Approved.' });
    expect(decisionOutcome('Approval', { ok: true, taken: true, id: 'a', index: 0, outcome: 'rejected' })).toMatchObject({ tone: 'success', title: 'Rejected.' });
    expect(decisionOutcome('Input', { ok: true, taken: true, id: 'a', index: 0, outcome: 'approved' }).title).toBe('Answer sent.');
    expect(decisionOutcome('Input', { ok: true, taken: true, id: 'a', index: 0, outcome: 'rejected' }).title).toBe('Declined.');
    expect(decisionOutcome('Action', { ok: true, taken: true, id: 'a', index: 0, outcome: 'rejected' }).title).toBe('Refused: nothing was sent.');
    expect(decisionOutcome('Action', { ok: true, taken: true, id: 'a', index: 0, outcome: 'approved' }).detail).toBe('The run took your decision: approved.');
  });

  it('202 is recorded, not taken up yet', () => {
    const outcome = decisionOutcome('Approval', { ok: true, taken: false, id: 'a', index: 0, message: "recorded in the run's status; the run has not taken it up yet" });
    expect(outcome).toMatchObject({ tone: 'info', title: 'Recorded; the run has not taken it up yet.' });
  });

  it('403 tells a service account from the cluster refusing', () => {
    expect(decisionOutcome('Approval', problem(403, 'system:serviceaccount:team-a:ci is not a person: approvals are decided by people only')).title).toMatch(/service account/);
    const admission = "the cluster refuses deciding approval approval-1 of studiorun team-a/r: admission webhook denied: bob may not decide on this run: only its owner (alice) or one of its approvers may; ask one of them";
    expect(decisionOutcome('Approval', problem(403, admission))).toMatchObject({ title: 'The cluster refused your decision (its admission policy):', detail: admission });
  });

  it('404, 422, 429, 503 and no answer each say what happened', () => {
    expect(decisionOutcome('Approval', problem(404, 'no such approval')).title).toMatch(/^Not found/);
    expect(decisionOutcome('Approval', problem(422, 'an approval names the digest')).title).toMatch(/not accepted/);
    expect(decisionOutcome('Approval', problem(429, 'more than 30 decisions', 12)).detail).toBe('more than 30 decisions Try again in 12 s.');
    expect(decisionOutcome('Approval', problem(503, 'the decision cannot be recorded just now; retry')).title).toBe('The decision failed (503):');
    expect(decisionOutcome('Approval', problem(0, 'the sidecar could not be reached (Failed to fetch)')).title).toMatch(/may or may not be recorded/);
  });
});

describe('escapes in the text under review', () => {
  it('are picked out as the sidecar writes them, the rest left as it is', () => {
    expect(escapeRuns('rm -rf /\\x1b[2K\\rRelease\\u{202e} notes')).toEqual([
      { text: 'rm -rf /', escape: false },
      { text: '\\x1b', escape: true },
      { text: '[2K', escape: false },
      { text: '\\r', escape: true },
      { text: 'Release', escape: false },
      { text: '\\u{202e}', escape: true },
      { text: ' notes', escape: false },
    ]);
    expect(escapeRuns('plain')).toEqual([{ text: 'plain', escape: false }]);
  });
});
