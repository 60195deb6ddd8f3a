import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { Approval } from '../api/approvals.ts';
import type { Me } from '../api/me.ts';
import { parseRun } from '../api/runs.ts';
import { SessionContext, type Session } from '../app/session.tsx';
import { ApprovalCardView, type CardViewProps } from './ApprovalCard.tsx';
import { ApprovalCards, OutcomeMessage } from './ApprovalCards.tsx';
import { ApprovalsPage, groupsOf } from './ApprovalsPage.tsx';
import type { Waiting } from './waiting.ts';

const approval: Approval = {
  id: 'approval-1',
  kind: 'Approval',
  node: 'review',
  prompt: 'Approve these release notes for publication?',
  text: 'Release notes for: version 2.4',
  textNote: null,
  exactText: 'Release notes for: version 2.4',
  digest: 'ab'.repeat(32),
  size: 30,
  complete: true,
  expiresAt: '2026-12-02T10:15:00.000Z',
  state: 'pending',
};

const ready: CardViewProps = {
  run: 'notes-1',
  approval,
  digest: { state: 'match', digest: 'ab'.repeat(32) },
  seconds: 600,
  person: true,
  read: true,
  busy: null,
  recorded: false,
  comment: '',
  answer: '',
};

function card(props: Partial<CardViewProps> = {}): string {
  return renderToStaticMarkup(<ApprovalCardView {...ready} {...props} />);
}

/** The attributes of the first `<button>` whose text is `label`. */
function buttonTag(html: string, label: string): string {
  const match = new RegExp(`<button([^>]*)>${label}</button>`).exec(html);
  expect(match, `a button "${label}"`).not.toBeNull();
  return match?.[1] ?? '';
}

/** The text of the element with `id`. */
function textOf(html: string, id: string): string {
  const match = new RegExp(`id="${id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"[^>]*>(.*?)</p>`).exec(html);
  return (match?.[1] ?? '').replace(/<[^>]+>/g, '');
}

describe('an approval card', () => {
  it('shows the prompt, kind, node, time left and the text in a labelled region the keyboard can scroll', () => {
    const html = card();
    expect(html).toContain('<h3');
    expect(html).toContain('Approve these release notes for publication?');
    expect(html).toContain('Review (HumanApproval node)');
    expect(html).toContain('>review</dd>');
    expect(html).toContain('10 min 00 s left');
    const labelledBy = /<div[^>]*role="region"[^>]*aria-labelledby="([^"]+)"[^>]*tabindex="0"/.exec(html)?.[1] ?? '';
    expect(labelledBy).not.toBe('');
    expect(textOf(html, labelledBy)).toBe('Text under review (approval-1 of run notes-1)');
    expect(html).toContain('Release notes for: version 2.4');
    expect(html).toContain('Digest checked');
  });

  it('labels the comment box and leaves Approve and Reject on when all holds', () => {
    const html = card();
    const id = /<textarea[^>]* id="([^"]+)"/.exec(html)?.[1] ?? '';
    expect(id).not.toBe('');
    expect(html).toContain(`<label for="${id}"`);
    expect(html).toContain('Comment');
    expect(buttonTag(html, 'Approve')).not.toContain('aria-disabled="true"');
    expect(buttonTag(html, 'Approve')).not.toContain('aria-describedby');
    expect(buttonTag(html, 'Reject')).not.toContain('aria-disabled="true"');
  });

  it('keeps Approve focusable but off, describing its reason shown beside it', () => {
    const html = card({ digest: { state: 'mismatch', computed: 'cd', server: 'ab' } });
    const attributes = buttonTag(html, 'Approve');
    expect(attributes).toContain('aria-disabled="true"');
    expect(attributes).not.toMatch(/\sdisabled=""/);
    const describedBy = /aria-describedby="([^"]+)"/.exec(attributes)?.[1] ?? '';
    expect(textOf(html, describedBy)).toContain('The digest does not match: do not approve.');
    expect(html).toContain('Digest does not match: do not approve.');
    expect(buttonTag(html, 'Reject')).not.toContain('aria-disabled="true"');
  });

  it('says when the text is too long to show whole, and offers only Reject', () => {
    const html = card({ approval: { ...approval, complete: false, size: 200_000 } });
    expect(html).toContain('Only the first part of the text is shown: it is 200,000 bytes');
    expect(buttonTag(html, 'Approve')).toContain('aria-disabled="true"');
    expect(buttonTag(html, 'Reject')).not.toContain('aria-disabled="true"');
  });

  it('says "expiring" in the last ten seconds and turns Approve off', () => {
    const html = card({ seconds: 8 });
    expect(html).toContain('Expiring: 8 s left.');
    expect(html).toContain('This request expires in seconds');
    expect(buttonTag(html, 'Approve')).toContain('aria-disabled="true"');
  });

  it('outside a secure context says the server digest stands unchecked, and lets a person approve', () => {
    const html = card({ digest: { state: 'unchecked', reason: "This page is not in a secure context, so the server's digest stands unchecked." } });
    expect(html).toContain('Digest not checked here');
    expect(html).toContain('the server&#x27;s digest stands unchecked');
    expect(buttonTag(html, 'Approve')).not.toContain('aria-disabled="true"');
  });

  it('is read-only for a service account, saying why', () => {
    const html = card({ person: false });
    expect(buttonTag(html, 'Approve')).toContain('aria-disabled="true"');
    expect(buttonTag(html, 'Reject')).toContain('aria-disabled="true"');
    expect(html).toContain('approvals are decided by people only');
    expect(html).not.toContain('<textarea');
  });

  it('marks the escapes the sidecar wrote and shows its note', () => {
    const html = card({
      approval: { ...approval, text: 'Notes\\x1b[2K\\rrm -rf /', textNote: '⚠ this text contains 2 control or invisible characters' },
    });
    expect(html).toContain('<mark class="rounded bg-amber-200 px-0.5 text-amber-950 dark:bg-amber-800 dark:text-amber-50">\\x1b</mark>');
    expect(html).toContain('<mark class="rounded bg-amber-200 px-0.5 text-amber-950 dark:bg-amber-800 dark:text-amber-50">\\r</mark>');
    expect(html).toContain('⚠ this text contains 2 control or invisible characters');
  });

  it("marks a remote agent's question as written by an external agent, with an answer box, Send answer and Decline", () => {
    const question = { ...approval, kind: 'Input' as const, prompt: 'The remote agent asks', text: 'Which version should the notes cover?' };
    const html = card({ approval: question });
    expect(html).toContain('Written by an external agent');
    expect(html).toContain('never answer with secrets');
    expect(html).toMatch(/<label[^>]*>Your answer/);
    expect(html).toContain('Question from the remote agent<span class="sr-only"> (approval-1 of run notes-1)</span>');
    const off = buttonTag(html, 'Send answer');
    expect(off).toContain('aria-disabled="true"');
    expect(textOf(html, /aria-describedby="([^"]+)"/.exec(off)?.[1] ?? '')).toContain('Write an answer first.');
    expect(buttonTag(html, 'Decline')).not.toContain('aria-disabled="true"');
    expect(buttonTag(card({ approval: question, answer: '2.4' }), 'Send answer')).not.toContain('aria-disabled="true"');
  });

  it("words an acting remote's request as a call that changes things", () => {
    const html = card({ approval: { ...approval, kind: 'Action', prompt: 'Call deploy.rollout?', text: '{"service":"web","version":"2.4"}' } });
    expect(html).toContain('This call changes things outside the run.');
    expect(html).toContain('Confirm and send');
    expect(html).toContain('Refuse');
    expect(html).toContain('Request the remote agent would receive<span');
  });

  it('shows "Sending…" while a decision is on its way', () => {
    const html = card({ busy: 'Approve' });
    expect(buttonTag(html, 'Sending…')).toContain('aria-disabled="true"');
  });
});

describe("a decision's outcome", () => {
  it('is a focusable message (the focus moves there when it arrives)', () => {
    const html = renderToStaticMarkup(<OutcomeMessage outcome={{ tone: 'success', title: 'Approved.', detail: 'The run took your decision: approved.' }} seq={1} />);
    expect(html).toContain('tabindex="-1"');
    expect(html).toContain('Approved.');
  });
});

const alice: Me = { username: 'alice', groups: ['team-a'], person: true, namespaces: ['team-a'] };

function session(me: Me = alice, namespace = 'team-a'): Session {
  return { token: 't', me, api: {}, namespace, setNamespace: () => undefined, signOut: () => undefined, expire: () => undefined };
}

const run = parseRun({
  metadata: { name: 'notes-1', namespace: 'team-a', uid: 'uid-1', creationTimestamp: '2026-12-02T10:00:00Z' },
  spec: { owner: 'alice', compositionRef: { name: 'human-review' }, input: 'version 2.4' },
  status: { phase: 'AwaitingApproval', pendingApprovals: [{ id: 'approval-1', node: 'review', kind: 'Approval', digest: 'ab', expiresAt: '2026-12-02T10:15:00Z' }] },
});

function waiting(items: Waiting['items'], count: number | null = items.length): Waiting {
  return { count, items, problem: null, refresh: () => undefined };
}

describe('the Approvals page', () => {
  it('says when nothing waits', () => {
    const html = renderToStaticMarkup(
      <SessionContext value={session()}>
        <ApprovalsPage waiting={waiting([])} />
      </SessionContext>,
    );
    expect(html).toContain('<h1');
    expect(html).toContain('Nothing is waiting for you in namespace team-a.');
  });

  it('groups what waits by run, with a link to the run', () => {
    if (run === null) throw new Error('the test run does not parse');
    const html = renderToStaticMarkup(
      <SessionContext value={session()}>
        <ApprovalsPage waiting={waiting([{ run, approval: run.pendingApprovals[0] ?? { id: '', node: '', kind: '', digest: '', expiresAt: '' } }])} />
      </SessionContext>,
    );
    expect(html).toContain('1 approval waits for you in namespace team-a');
    expect(html).toContain('href="#/runs/team-a/notes-1"');
    expect(html).toMatch(/<h2[^>]*>Run <a/);
    expect(html).toContain('human-review');
    expect(html).toContain('Reading the text under review of approval-1');
  });

  it('puts the most urgent run first and keeps a run decided on here in its place once nothing waits in it', () => {
    if (run === null) throw new Error('the test run does not parse');
    const decided = { ...run, name: 'notes-0' };
    const later = { ...run, name: 'notes-2' };
    const ask = (id: string, expiresAt: string) => ({ id, node: 'review', kind: 'Approval', digest: 'ab', expiresAt });
    const groups = groupsOf(
      [
        { run: later, approval: ask('approval-1', '2026-12-02T10:30:00Z') },
        { run, approval: ask('approval-2', '2026-12-02T10:20:00Z') },
        { run, approval: ask('approval-1', '2026-12-02T10:15:00Z') },
      ],
      new Map([['team-a/notes-0', { run: decided, urgency: '2026-12-02T10:16:00Z' }]]),
    );
    expect(groups.map((g) => [g.run.name, g.pendingIds])).toEqual([
      ['notes-1', ['approval-2', 'approval-1']],
      ['notes-0', []],
      ['notes-2', ['approval-1']],
    ]);
  });

  it('shows a service account the cards read-only, saying why', () => {
    const html = renderToStaticMarkup(
      <SessionContext value={session({ username: 'system:serviceaccount:team-a:ci', groups: [], person: false, namespaces: [] })}>
        <ApprovalCards
          namespace="team-a"
          name="notes-1"
          uid="uid-1"
          pending={[
            {
              requested: { seq: 5, runId: 'uid-1', ts: '2026-12-02T10:00:00.000Z', type: 'approval.requested', approvalId: 'approval-1', nodeId: 'review', kind: 'Approval', digest: 'ab', size: 30, complete: true, expiresAt: '2026-12-02T10:15:00.000Z' },
              decided: null,
            },
          ]}
          onDecided={() => undefined}
        />
      </SessionContext>,
    );
    expect(html).toContain('system:serviceaccount:team-a:ci</span>, a service account: approvals are decided by people only');
  });
});
