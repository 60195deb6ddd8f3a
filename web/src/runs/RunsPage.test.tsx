import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { Problem } from '../api/http.ts';
import { appendPage, EmptyRuns } from './RunList.tsx';
import { compositionOf, durationText, isLive, reasonOf, tokensText } from './rows.ts';
import { RunsTable } from './RunsTable.tsx';
import { EMPTY_START, FIELD_LABELS, FIELDS, type FieldName } from './startForm.ts';
import { NO_FAILURE, StartRunFormView, isSubmitChord, summaryLine, type StartFailure } from './StartRunForm.tsx';
import { run } from './testRuns.ts';

const noop = () => undefined;
const NOW = Date.parse('2026-12-05T10:05:00Z');

const runs = [
  run({ name: 'notes-3', phase: 'AwaitingApproval', startTime: '2026-12-05T10:02:00Z', tokens: 1840, pending: 1, ref: { name: 'human-review', revision: 3 } }),
  run({ name: 'notes-2', phase: 'Running', owner: 'bob', startTime: '2026-12-05T10:04:30Z', tokens: 200 }),
  run({ name: 'adhoc-1', phase: 'Succeeded', ref: null, startTime: '2026-12-05T09:00:00Z', completionTime: '2026-12-05T09:03:05Z', tokens: 12345 }),
  run({ name: 'notes-1', phase: 'Failed', startTime: '2026-12-05T08:00:00Z', completionTime: '2026-12-05T08:00:12.400Z', error: 'the model answered 500' }),
  run({ name: 'queued-1' }),
];

function table(): string {
  return renderToStaticMarkup(
    <RunsTable runs={runs} caption="Runs alice owns or approves in team-a, newest first" username="alice" now={NOW} linkId={(n) => `run-${n}`} onCancel={() => Promise.resolve('asked')} />,
  );
}

describe('the runs table', () => {
  it('has a caption saying whose runs these are, and a header for every column', () => {
    const html = table();
    expect(html).toContain('<caption');
    expect(html).toContain('Runs alice owns or approves in team-a, newest first</caption>');
    const headers = [...html.matchAll(/<th scope="col"[^>]*>([^<]+)<\/th>/g)].map((m) => m[1]);
    expect(headers).toEqual(['Run', 'Phase', 'Composition', 'Owner', 'Tokens', 'Started', 'Duration', 'Approvals waiting', 'Actions']);
    expect(html.match(/<th scope="row"/g)).toHaveLength(runs.length);
  });

  it('names each run with a link to its page', () => {
    const html = table();
    expect(html).toContain('href="#/runs/team-a/notes-3"');
    expect(html).toMatch(/<a id="run-notes-3" href="#\/runs\/team-a\/notes-3"[^>]*>notes-3<\/a>/);
  });

  it('writes each phase in words beside its colour', () => {
    const html = table();
    for (const words of ['Awaiting approval', 'Running', 'Succeeded', 'Failed', 'Not started']) expect(html).toContain(words);
    expect(html).toContain('<span aria-hidden="true">✓</span>Succeeded');
  });

  it('shows the Composition and revision, or inline, the owner, tokens, start and duration', () => {
    const html = table();
    expect(html).toContain('rev 3');
    expect(html).toContain('>inline<');
    expect(html).toContain('<span title="alice">you</span>');
    expect(html).toContain('>bob<');
    expect(html).toContain('12,345');
    expect(html).toContain('2026-12-05 09:00:00 UTC');
    expect(html).toContain('3 min 05 s');
    expect(html).toContain('30.0 s so far');
    expect(html).toContain('the model answered 500');
  });

  it('links the approvals waiting to the run, and offers Cancel only on live runs', () => {
    const html = table();
    expect(html).toContain('1 waiting<span class="sr-only"> in run notes-3</span>');
    const cancels = [...html.matchAll(/Cancel<span class="sr-only"> run ([^<]+)<\/span>/g)].map((m) => m[1]);
    expect(cancels).toEqual(['notes-3', 'notes-2', 'queued-1']);
  });

  it('says Cancelling… for a run already asked to cancel', () => {
    const html = renderToStaticMarkup(
      <RunsTable runs={[run({ name: 'x', phase: 'Running', cancel: true })]} caption="c" username="alice" now={NOW} linkId={(n) => n} onCancel={() => Promise.resolve('asked')} />,
    );
    expect(html).toContain('Cancelling…');
    expect(html).not.toContain('sr-only"> run x');
  });
});

describe('a row says', () => {
  it('the revision a run asked for, else the one it ran, else (newest)', () => {
    expect(compositionOf(run({ name: 'a', ref: { name: 'h', revision: 2 }, phase: 'Running', ranRevision: 2 }))).toEqual({ name: 'h', revision: 2 });
    expect(compositionOf(run({ name: 'a', ref: { name: 'h' }, phase: 'Running', ranRevision: 7 }))).toEqual({ name: 'h', revision: 7 });
    expect(compositionOf(run({ name: 'a', ref: { name: 'h' } }))).toEqual({ name: 'h', revision: null });
    expect(compositionOf(run({ name: 'a', ref: null }))).toBeNull();
  });

  it('durations from start to end, or so far for a live run, and – before the start', () => {
    expect(durationText(run({ name: 'a', phase: 'Succeeded', startTime: '2026-12-05T10:00:00Z', completionTime: '2026-12-05T10:00:02.500Z' }), NOW)).toBe('2.50 s');
    expect(durationText(run({ name: 'a', phase: 'Running', startTime: '2026-12-05T10:03:00Z' }), NOW)).toBe('2 min 00 s so far');
    expect(durationText(run({ name: 'a' }), NOW)).toBe('–');
  });

  it('tokens once counted, why a run failed or waits to start, and which runs are live', () => {
    expect(tokensText(run({ name: 'a' }))).toBe('–');
    expect(tokensText(run({ name: 'a', phase: 'Succeeded', tokens: 1_000_000 }))).toBe('1,000,000');
    expect(reasonOf(run({ name: 'a', phase: 'Failed', error: 'boom' }))).toBe('writer: boom');
    expect(reasonOf(run({ name: 'a', message: 'the runner pod is starting' }))).toBe('the runner pod is starting');
    expect(reasonOf(run({ name: 'a', phase: 'Succeeded', message: 'the run ended Succeeded' }))).toBeNull();
    expect([isLive(run({ name: 'a' })), isLive(run({ name: 'a', phase: 'AwaitingApproval' })), isLive(run({ name: 'a', phase: 'Cancelled' }))]).toEqual([true, true, false]);
  });

  it('a next page without the runs already shown', () => {
    const [first, second, third] = runs;
    if (first === undefined || second === undefined || third === undefined) throw new Error('fixture');
    expect(appendPage([first, second], [second, third]).map((r) => r.name)).toEqual(['notes-3', 'notes-2', 'adhoc-1']);
  });
});

describe('with no runs', () => {
  it('says so for the namespace, with a button to start one', () => {
    const html = renderToStaticMarkup(<EmptyRuns namespace="team-a" filtered={false} onStart={noop} />);
    expect(html).toContain('No runs of yours in <span class="font-mono">team-a</span> yet');
    expect(html).toMatch(/<button type="button"[^>]*>Start your first run<\/button>/);
  });

  it('offers to clear filters when they hide every run', () => {
    const html = renderToStaticMarkup(<EmptyRuns namespace="team-a" filtered onStart={noop} />);
    expect(html).toContain('No runs of yours match these filters');
    expect(html).toContain('href="#/runs/team-a"');
  });
});

function form(failure: StartFailure = NO_FAILURE, busy = false, cancelAsked = false): string {
  return renderToStaticMarkup(
    <StartRunFormView namespace="team-a" values={{ ...EMPTY_START, budgets: { ...EMPTY_START.budgets, maxTokens: '-5' } }} failure={failure} busy={busy} cancelAsked={cancelAsked} />,
  );
}

/** The id of the control labelled `label` (a `<label for>` before it). */
function labelled(html: string, label: string): string | undefined {
  const escaped = label.replace(/[()]/g, '\\$&');
  return new RegExp(`<label for="([^"]+)"[^>]*>${escaped}[<\\s]`).exec(html)?.[1];
}

describe('the start form', () => {
  const labels: readonly [FieldName, string][] = [
    ['composition', 'Composition'],
    ['revision', 'Revision'],
    ['input', 'Input'],
    ['users', 'Users'],
    ['groups', 'Groups'],
    ['maxTokens', 'Max tokens'],
    ['maxToolCalls', 'Max tool calls'],
    ['maxDelegations', 'Max delegations'],
    ['maxRemoteCalls', 'Max remote calls'],
    ['timeoutSeconds', 'Timeout (seconds)'],
    ['captureContent', 'Capture content'],
    ['name', 'Run name'],
  ];

  it.each(labels)('labels the %s field "%s"', (_field, label) => {
    const html = form();
    const id = labelled(html, label);
    expect(id).toBeDefined();
    expect(html).toMatch(new RegExp(`<(input|textarea)[^>]* id="${id ?? ''}"`));
  });

  it('has a label for every field it sends', () => {
    expect(labels.map(([field]) => field).sort()).toEqual([...FIELDS].sort());
  });

  it('shows no error summary before a try, and says how to submit from the keyboard', () => {
    const html = form();
    expect(html).not.toContain('The run was not started');
    expect(html).toContain('<kbd class="font-mono">Ctrl</kbd>+<kbd class="font-mono">Enter</kbd>');
    expect(html).toContain('>Start run</button>');
    expect(html).toContain('value="-5"');
  });

  it('marks a wrong field, describes it by its error and lists it in the summary', () => {
    const html = form({ errors: { maxTokens: ['Max tokens must be 1 or more; -5 is negative.'] }, others: [], problem: null });
    const id = labelled(html, 'Max tokens') ?? '';
    expect(html).toContain('The run was not started');
    expect(html).toMatch(new RegExp(`<input[^>]* id="${id}"[^>]* aria-invalid="true"[^>]* aria-describedby="[^"]*${id}-error"`));
    expect(html).toContain(`<p id="${id}-error" class="text-sm font-medium text-red-800 dark:text-red-200">Max tokens must be 1 or more; -5 is negative.</p>`);
    expect(html).toContain(`href="#${id}"`);
    expect(html).toMatch(new RegExp(`href="#${id}"[^>]*>Max tokens must be 1 or more; -5 is negative.</a>`));
    expect(summaryLine('maxTokens', ['invalid value: integer `-5`, expected u64'])).toBe(`${FIELD_LABELS.maxTokens}: invalid value: integer \`-5\`, expected u64`);
    expect(html).toContain('Everything you typed is kept');
  });

  it("lists a 422's findings of no field with where they point, after the sidecar's summary", () => {
    const problem: Problem = { status: 422, code: 'invalid_composition', message: 'the composition has 2 error(s)', loc: ['body', 'composition'], retryAfterSeconds: null };
    const html = form({ errors: { composition: ['model gpt-x is not offered'] }, others: [{ where: 'extra', message: 'unknown field `extra`' }], problem });
    expect(html).toContain('<p>the composition has 2 error(s)</p>');
    expect(html).toContain('<code class="font-mono">extra</code>: unknown field `extra`');
    expect(html).toContain('model gpt-x is not offered');
    expect(html).not.toContain('role="alert"');
  });

  it.each([
    [409, 'studioruns "notes" already exists; choose another name', null],
    [429, 'more than 30 starts a minute', 12],
    [403, 'studioruns is forbidden: User "bob" cannot create resource "studioruns"', null],
  ] as const)("shows a %i in the sidecar's words", (status, message, retry) => {
    const html = form({ errors: {}, others: [], problem: { status, code: 'x', message, loc: [], retryAfterSeconds: retry } });
    expect(html).toContain('role="alert"');
    expect(html).toContain(`Starting the run failed (${status}):</strong> ${message.replace(/"/g, '&quot;')}`);
    if (retry !== null) expect(html).toContain(`Try again in ${retry} s.`);
  });

  it('says it is starting while the request is out', () => {
    expect(form(NO_FAILURE, true)).toContain('Starting the run…');
    // while the run is being created it can be cancelled (rule 12.45), and says when it will be
    expect(form(NO_FAILURE, true)).toMatch(/<button type="button"[^>]*>Cancel run<\/button>/);
    expect(form(NO_FAILURE, false)).not.toContain('Cancel run');
    const asked = form(NO_FAILURE, true, true);
    expect(asked).toMatch(/<button type="button"[^>]* disabled="">Cancel asked<\/button>/);
    expect(asked).toContain('Starting the run… it is cancelled as soon as it has a name.');
  });

  it('submits on Ctrl+Enter and ⌘+Enter, not on Enter alone', () => {
    expect(isSubmitChord({ key: 'Enter', ctrlKey: true, metaKey: false })).toBe(true);
    expect(isSubmitChord({ key: 'Enter', ctrlKey: false, metaKey: true })).toBe(true);
    expect(isSubmitChord({ key: 'Enter', ctrlKey: false, metaKey: false })).toBe(false);
    expect(isSubmitChord({ key: 'a', ctrlKey: true, metaKey: false })).toBe(false);
  });
});
