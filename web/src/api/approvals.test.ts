import { describe, expect, it } from 'vitest';
import { FakeFetch } from '../testing/fake-fetch.ts';
import { decide, listApprovals, NOT_TAKEN_UP, parseApproval, type Approval } from './approvals.ts';
import type { Fetch } from './http.ts';

const wire = {
  id: 'approval-1',
  kind: 'Approval',
  node: 'review',
  prompt: 'Publish these notes?',
  text: 'Release notes for: version 2.4\\x1b[2K',
  textNote: '⚠ this text contains 1 control or invisible character',
  exactText: 'Release notes for: version 2.4\u001b[2K',
  digest: '4be1'.padEnd(64, '0'),
  size: 35,
  complete: true,
  expiresAt: '2026-12-02T10:15:00.000Z',
  state: 'pending',
};

const parsed: Approval = { ...wire, kind: 'Approval', state: 'pending' };

/** The FakeFetch's fetch, also keeping each request's method and body (the fake records neither). */
function recording(server: FakeFetch): { fetch: Fetch; sent: { method: string; body: unknown }[] } {
  const sent: { method: string; body: unknown }[] = [];
  return {
    sent,
    fetch: (input, init) => {
      sent.push({ method: init.method ?? 'GET', body: typeof init.body === 'string' ? JSON.parse(init.body) : undefined });
      return server.fetch(input, init);
    },
  };
}

describe("a run's approvals", () => {
  it('are read with the token as Authorization only, each field as the sidecar sent it', async () => {
    const server = new FakeFetch().reply({ kind: 'json', status: 200, body: { items: [wire, { ...wire, id: 'approval-2', textNote: null, state: 'approved', text: '', exactText: '' }] } });
    const result = await listApprovals('alice-token', 'team-a', 'notes.1', { fetch: server.fetch });
    expect(result).toEqual({ ok: true, value: [parsed, { ...parsed, id: 'approval-2', textNote: null, state: 'approved', text: '', exactText: '' }] });
    const request = server.requests[0];
    expect(request?.url).toBe('/api/v1/runs/team-a/notes.1/approvals');
    expect(request?.headers.get('Authorization')).toBe('Bearer alice-token');
    expect(request?.url).not.toContain('alice-token');
  });

  it('treat a missing textNote as none', () => {
    const rest: Record<string, unknown> = { ...wire };
    delete rest['textNote'];
    expect(parseApproval(rest)).toEqual({ ...parsed, textNote: null });
  });

  it('are refused whole when any item is not the documented shape', async () => {
    const broken = [
      { ...wire, kind: 'Question' },
      { ...wire, state: 'waiting' },
      { ...wire, size: '35' },
      { ...wire, complete: 'yes' },
      { ...wire, expiresAt: 'soon' },
      { ...wire, exactText: undefined },
      { ...wire, id: '' },
      { ...wire, textNote: 3 },
    ];
    for (const item of broken) {
      const server = new FakeFetch().reply({ kind: 'json', status: 200, body: { items: [wire, item] } });
      const result = await listApprovals('t', 'team-a', 'r', { fetch: server.fetch });
      expect(result).toMatchObject({ ok: false, problem: { status: 200, code: 'reply' } });
    }
    const notAList = await listApprovals('t', 'team-a', 'r', { fetch: new FakeFetch().reply({ kind: 'json', status: 200, body: { approvals: [] } }).fetch });
    expect(notAList).toMatchObject({ ok: false, problem: { code: 'reply' } });
  });

  it("are a 404 in the sidecar's words to someone who is neither owner nor approver", async () => {
    const message = 'no studiorun team-a/r owned or approved by bob: only a run\'s owner and its approvers may read its events and approvals';
    const server = new FakeFetch().reply({ kind: 'json', status: 404, body: { loc: [], code: 'not_found', message } });
    expect(await listApprovals('bob', 'team-a', 'r', { fetch: server.fetch })).toEqual({
      ok: false,
      problem: { status: 404, code: 'not_found', message, loc: [], retryAfterSeconds: null },
    });
  });
});

describe('a decision', () => {
  it('approves with the digest and is taken up (200)', async () => {
    const server = new FakeFetch().reply({ kind: 'json', status: 200, body: { id: 'approval-1', index: 0, outcome: 'approved' } });
    const { fetch, sent } = recording(server);
    const result = await decide('alice-token', 'team-a', 'notes.1', 'approval-1', { decision: 'Approve', digest: wire.digest }, { fetch });
    expect(result).toEqual({ ok: true, taken: true, id: 'approval-1', index: 0, outcome: 'approved' });
    expect(server.requests[0]?.url).toBe('/api/v1/runs/team-a/notes.1/approvals/approval-1');
    expect(server.requests[0]?.headers.get('Authorization')).toBe('Bearer alice-token');
    expect(server.requests[0]?.headers.get('Content-Type')).toBe('application/json');
    expect(sent).toEqual([{ method: 'POST', body: { decision: 'Approve', digest: wire.digest } }]);
  });

  it('rejects with the comment, and answers a question with the answer', async () => {
    const server = new FakeFetch().reply(
      { kind: 'json', status: 200, body: { id: 'approval-1', index: 1, outcome: 'rejected' } },
      { kind: 'json', status: 200, body: { id: 'q-1', index: 2, outcome: 'approved' } },
    );
    const { fetch, sent } = recording(server);
    expect(await decide('t', 'team-a', 'r', 'approval-1', { decision: 'Reject', comment: 'Mention the CVE fix.' }, { fetch })).toMatchObject({ ok: true, outcome: 'rejected' });
    expect(await decide('t', 'team-a', 'r', 'q-1', { decision: 'Approve', digest: 'ab', answer: '2.4.1' }, { fetch })).toMatchObject({ ok: true, outcome: 'approved', index: 2 });
    expect(sent.map((s) => s.body)).toEqual([
      { decision: 'Reject', comment: 'Mention the CVE fix.' },
      { decision: 'Approve', digest: 'ab', answer: '2.4.1' },
    ]);
  });

  it('recorded but not taken up yet is a 202, with its message', async () => {
    const server = new FakeFetch().reply(
      { kind: 'json', status: 202, body: { id: 'approval-1', index: 3, outcome: null, message: NOT_TAKEN_UP } },
      { kind: 'json', status: 202, body: { id: 'approval-1', index: 3, outcome: null } },
    );
    expect(await decide('t', 'ns', 'r', 'approval-1', { decision: 'Reject' }, { fetch: server.fetch })).toEqual({ ok: true, taken: false, id: 'approval-1', index: 3, message: NOT_TAKEN_UP });
    expect(await decide('t', 'ns', 'r', 'approval-1', { decision: 'Reject' }, { fetch: server.fetch })).toMatchObject({ ok: true, taken: false, message: NOT_TAKEN_UP });
  });

  it("that lost a race is the sidecar's 409, in its words", async () => {
    const message = 'the decision came too late: approval approval-1 was settled first (expired)';
    const server = new FakeFetch().reply({ kind: 'json', status: 409, body: { loc: [], code: 'conflict', message } });
    expect(await decide('t', 'ns', 'r', 'approval-1', { decision: 'Approve', digest: 'ab' }, { fetch: server.fetch })).toEqual({
      ok: false,
      problem: { status: 409, code: 'conflict', message, loc: [], retryAfterSeconds: null },
    });
  });

  it('is a problem when the reply is not a decision', async () => {
    for (const body of [{ id: 'approval-1', outcome: 'approved' }, { id: 'approval-1', index: 0, outcome: 'expired' }, { id: 'approval-1', index: -1, outcome: 'approved' }]) {
      const server = new FakeFetch().reply({ kind: 'json', status: 200, body });
      expect(await decide('t', 'ns', 'r', 'approval-1', { decision: 'Reject' }, { fetch: server.fetch })).toMatchObject({ ok: false, problem: { code: 'reply' } });
    }
  });
});
