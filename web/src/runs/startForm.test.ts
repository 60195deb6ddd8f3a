import { describe, expect, it } from 'vitest';
import type { Problem } from '../api/http.ts';
import { findingsOf } from '../api/runs.ts';
import type { BudgetKey } from '../api/trace.ts';
import { EMPTY_START, buildStartRequest, erroneousFields, fieldOfLoc, fieldOfMessage, parseBudget, placeFindings, splitNames, type FieldName, type StartValues } from './startForm.ts';

function values(change: Partial<StartValues> = {}, budgets: Partial<Record<BudgetKey, string>> = {}): StartValues {
  return { ...EMPTY_START, composition: 'human-review', input: 'version 2.4', ...change, budgets: { ...EMPTY_START.budgets, ...budgets } };
}

describe('a lowered budget', () => {
  const cases: readonly { readonly key: BudgetKey; readonly typed: string; readonly value?: number | null; readonly message?: string }[] = [
    { key: 'maxTokens', typed: '', value: null },
    { key: 'maxTokens', typed: '  ', value: null },
    { key: 'maxTokens', typed: '5000', value: 5000 },
    { key: 'maxTokens', typed: ' 12 ', value: 12 },
    { key: 'maxTokens', typed: '+7', value: 7 },
    { key: 'maxTokens', typed: '-5', message: 'Max tokens must be 1 or more; -5 is negative.' },
    { key: 'maxTokens', typed: '0', message: 'Max tokens must be 1 or more; 0 is too small.' },
    { key: 'maxTokens', typed: '1.5', message: 'Max tokens must be a whole number, 1 or more; "1.5" is not.' },
    { key: 'maxTokens', typed: '1e3', message: 'Max tokens must be a whole number, 1 or more; "1e3" is not.' },
    { key: 'maxTokens', typed: 'lots', message: 'Max tokens must be a whole number, 1 or more; "lots" is not.' },
    { key: 'maxTokens', typed: '99999999999999999999', message: 'Max tokens is too large; type at most 9007199254740991.' },
    { key: 'maxToolCalls', typed: '0', value: 0 },
    { key: 'maxToolCalls', typed: '-1', message: 'Max tool calls must be 0 or more; -1 is negative.' },
    { key: 'maxDelegations', typed: '3', value: 3 },
    { key: 'maxRemoteCalls', typed: 'two', message: 'Max remote calls must be a whole number, 0 or more; "two" is not.' },
    { key: 'timeoutSeconds', typed: '0', message: 'Timeout (seconds) must be 1 or more; 0 is too small.' },
    { key: 'timeoutSeconds', typed: '600', value: 600 },
  ];

  it.each(cases)('$key typed as "$typed"', ({ key, typed, value, message }) => {
    const parsed = parseBudget(key, typed);
    if (message === undefined) expect(parsed).toEqual({ ok: true, value });
    else expect(parsed).toEqual({ ok: false, message });
  });
});

describe('the start request', () => {
  it('names the Composition and the input, and nothing left empty', () => {
    expect(buildStartRequest(values())).toEqual({ ok: true, request: { compositionRef: { name: 'human-review' }, input: 'version 2.4' } });
  });

  it('carries everything typed: revision, approvers, lowered budgets, capture, name', () => {
    const built = buildStartRequest(
      values(
        { revision: '3', users: 'bob, carol,\n bob', groups: ' release-managers ', captureContent: true, name: ' notes-2.4 ' },
        { maxTokens: '5000', maxToolCalls: '0', timeoutSeconds: '120' },
      ),
    );
    expect(built).toEqual({
      ok: true,
      request: {
        name: 'notes-2.4',
        compositionRef: { name: 'human-review', revision: 3 },
        input: 'version 2.4',
        approvers: { users: ['bob', 'carol'], groups: ['release-managers'] },
        budgets: { maxTokens: 5000, maxToolCalls: 0, timeoutSeconds: 120 },
        captureContent: true,
      },
    });
  });

  it('keeps the input exactly as typed, spaces and new lines included', () => {
    const built = buildStartRequest(values({ input: '  two\nlines  ' }));
    expect(built.ok && built.request.input).toBe('  two\nlines  ');
  });

  it('is not built while any field is wrong, and every wrong field says why', () => {
    const built = buildStartRequest(values({ composition: '', revision: '0', name: 'Notes_1' }, { maxTokens: '-5', timeoutSeconds: 'soon' }));
    expect(built.ok).toBe(false);
    if (built.ok) return;
    expect(erroneousFields(built.errors)).toEqual<FieldName[]>(['composition', 'revision', 'maxTokens', 'timeoutSeconds', 'name']);
    expect(built.errors.composition).toEqual(['Type the name of a Composition in this namespace, e.g. human-review.']);
    expect(built.errors.maxTokens).toEqual(['Max tokens must be 1 or more; -5 is negative.']);
    expect(built.errors.name?.[0]).toContain('Run name "Notes_1" is not a name Kubernetes accepts');
  });

  it('splits approvers on commas and new lines, each once', () => {
    expect(splitNames('')).toEqual([]);
    expect(splitNames(' , ,')).toEqual([]);
    expect(splitNames('alice@example.com, system:serviceaccount:ci:bot\nalice@example.com')).toEqual(['alice@example.com', 'system:serviceaccount:ci:bot']);
  });
});

describe("the sidecar's findings go to their field", () => {
  const cases: readonly { readonly loc: readonly (string | number)[]; readonly field: FieldName | null }[] = [
    { loc: ['body', 'input'], field: 'input' },
    { loc: ['body', 'name'], field: 'name' },
    { loc: ['body', 'compositionRef'], field: 'composition' },
    { loc: ['body', 'compositionRef', 'name'], field: 'composition' },
    { loc: ['body', 'compositionRef', 'revision'], field: 'revision' },
    { loc: ['body', 'composition'], field: 'composition' },
    { loc: ['body', 'composition', 'nodes', 2, 'model'], field: 'composition' },
    { loc: ['body', 'budgets', 'maxTokens'], field: 'maxTokens' },
    { loc: ['body', 'budgets', 'timeoutSeconds'], field: 'timeoutSeconds' },
    { loc: ['body', 'budgets', 'maxWidgets'], field: null },
    { loc: ['body', 'budgets'], field: null },
    { loc: ['body', 'approvers'], field: 'users' },
    { loc: ['body', 'approvers', 'users', 0], field: 'users' },
    { loc: ['body', 'approvers', 'groups', 1], field: 'groups' },
    { loc: ['body', 'captureContent'], field: 'captureContent' },
    { loc: ['body', 'owner'], field: null },
    { loc: ['body'], field: null },
    { loc: [], field: null },
    { loc: ['query'], field: null },
  ];

  it.each(cases)('$loc → $field', ({ loc, field }) => {
    expect(fieldOfLoc(loc)).toBe(field);
  });

  const messages: readonly { readonly message: string; readonly field: FieldName | null }[] = [
    { message: 'StudioRun.studio.orrery.dev "x" is invalid: spec.budgets.maxTokens: Invalid value: 0: should be greater than or equal to 1', field: 'maxTokens' },
    { message: 'StudioRun.studio.orrery.dev "Notes" is invalid: metadata.name: Invalid value: "Notes": a lowercase RFC 1123 subdomain', field: 'name' },
    { message: 'spec.approvers.users[0]: Invalid value', field: 'users' },
    { message: 'spec.owner must be the user creating the run', field: null },
    { message: 'studioruns.studio.orrery.dev is forbidden: User "bob" cannot create resource', field: null },
  ];

  it.each(messages)('the apiserver\'s "$message" → $field', ({ message, field }) => {
    expect(fieldOfMessage(message)).toBe(field);
  });

  const problem: Problem = { status: 422, code: 'invalid', message: 'input is 70000 characters; at most 65536', loc: ['body', 'input'], retryAfterSeconds: null };

  it('a 422 without findings is one finding at its own loc', () => {
    expect(placeFindings(problem, [])).toEqual({ fields: { input: ['input is 70000 characters; at most 65536'] }, others: [] });
  });

  it("a 422 with an empty loc goes where the apiserver's words point, else to the summary", () => {
    const apiserver = { ...problem, loc: [], message: 'StudioRun.studio.orrery.dev "x" is invalid: spec.budgets.maxTokens: Invalid value: 0' };
    expect(placeFindings(apiserver, []).fields.maxTokens).toHaveLength(1);
    const elsewhere = { ...problem, loc: ['body'], message: 'missing field `input` at line 1 column 40' };
    expect(placeFindings(elsewhere, [])).toEqual({ fields: {}, others: [{ where: '', message: 'missing field `input` at line 1 column 40' }] });
  });

  it('every finding of a 422 is placed, those of no field listed with where they point', () => {
    const findings = findingsOf([
      { loc: ['body', 'composition', 'nodes', 0, 'model'], field: 'nodes[0].model', code: 'unknown_model', message: 'model gpt-x is not offered' },
      { loc: ['body', 'composition', 'edges', 1], field: 'edges[1]', code: 'unknown_node', message: 'edge to nowhere' },
      { loc: ['body', 'budgets', 'maxTokens'], field: '', code: 'invalid', message: 'too many' },
      { loc: ['body', 'extra'], field: '', code: 'invalid', message: 'unknown field `extra`' },
    ]);
    expect(placeFindings({ ...problem, loc: ['body', 'composition'] }, findings)).toEqual({
      fields: { composition: ['model gpt-x is not offered', 'edge to nowhere'], maxTokens: ['too many'] },
      others: [{ where: 'extra', message: 'unknown field `extra`' }],
    });
  });
});
