// The "Start a run" form's logic, kept apart from its markup: what was typed → the request
// `POST /api/v1/runs/{ns}` takes (checked here first, each message naming its field), and the
// sidecar's refusals → the field each one is about (a 422's `loc`, or the apiserver's own
// `spec.budgets.maxTokens: Invalid value…` words), the rest listed in the form's summary.

import type { Problem } from '../api/http.ts';
import type { Finding, StartRequest } from '../api/runs.ts';
import { BUDGET_KEYS, type BudgetKey } from '../api/trace.ts';

export { BUDGET_KEYS };

/** The form's fields, in the order they are shown (the order errors are listed in). */
export const FIELDS = ['composition', 'revision', 'input', 'users', 'groups', ...BUDGET_KEYS, 'captureContent', 'name'] as const;

export type FieldName = (typeof FIELDS)[number];

export const FIELD_LABELS: Readonly<Record<FieldName, string>> = {
  composition: 'Composition',
  revision: 'Revision',
  input: 'Input',
  users: 'Approvers: users',
  groups: 'Approvers: groups',
  maxTokens: 'Max tokens',
  maxToolCalls: 'Max tool calls',
  maxDelegations: 'Max delegations',
  maxRemoteCalls: 'Max remote calls',
  timeoutSeconds: 'Timeout (seconds)',
  captureContent: 'Capture content',
  name: 'Run name',
};

/** The least each budget may be (the StudioRun schema's minimums): a count may be 0, "none". */
export const BUDGET_MINIMUM: Readonly<Record<BudgetKey, number>> = {
  maxTokens: 1,
  maxToolCalls: 0,
  maxDelegations: 0,
  maxRemoteCalls: 0,
  timeoutSeconds: 1,
};

/** What was typed, exactly (numbers as text, so nothing typed is ever silently dropped). */
export interface StartValues {
  readonly composition: string;
  readonly revision: string;
  readonly input: string;
  readonly users: string;
  readonly groups: string;
  readonly budgets: Readonly<Record<BudgetKey, string>>;
  readonly captureContent: boolean;
  readonly name: string;
}

export const EMPTY_START: StartValues = {
  composition: '',
  revision: '',
  input: '',
  users: '',
  groups: '',
  budgets: { maxTokens: '', maxToolCalls: '', maxDelegations: '', maxRemoteCalls: '', timeoutSeconds: '' },
  captureContent: false,
  name: '',
};

/** Messages per field (a field may have several, e.g. two server findings). */
export type FieldErrors = Partial<Record<FieldName, readonly string[]>>;

/** A whole number typed in a field: empty is "not set" (null), anything else is checked. */
export type Parsed = { readonly ok: true; readonly value: number | null } | { readonly ok: false; readonly message: string };

/** A whole number of at least `minimum` typed in the field `label`, or why not. */
export function parseWhole(text: string, label: string, minimum: number): Parsed {
  const t = text.trim();
  if (t === '') return { ok: true, value: null };
  const least = minimum === 0 ? '0 or more' : `${minimum} or more`;
  if (!/^[+-]?\d+$/.test(t)) return { ok: false, message: `${label} must be a whole number, ${least}; "${t}" is not.` };
  const n = Number(t);
  if (n < minimum) return { ok: false, message: `${label} must be ${least}; ${t} is ${n < 0 ? 'negative' : 'too small'}.` };
  if (!Number.isSafeInteger(n)) return { ok: false, message: `${label} is too large; type at most ${Number.MAX_SAFE_INTEGER}.` };
  return { ok: true, value: n };
}

/** A budget lowered in the form, or why not. */
export function parseBudget(key: BudgetKey, text: string): Parsed {
  return parseWhole(text, FIELD_LABELS[key], BUDGET_MINIMUM[key]);
}

/** Names separated by commas or new lines, spaces trimmed, each once, in the order typed. */
export function splitNames(text: string): string[] {
  const out: string[] = [];
  for (const part of text.split(/[,\n]/)) {
    const name = part.trim();
    if (name !== '' && !out.includes(name)) out.push(name);
  }
  return out;
}

/** A Kubernetes object name (an RFC 1123 subdomain), as runs and Compositions have. */
export function isObjectName(text: string): boolean {
  return text.length <= 253 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(text);
}

function nameProblem(label: string, text: string): string | null {
  if (isObjectName(text)) return null;
  if (text.length > 253) return `${label} is ${text.length} characters long; at most 253.`;
  return `${label} "${text}" is not a name Kubernetes accepts: lowercase letters, digits, "-" and ".", starting and ending with a letter or digit.`;
}

export type Built = { readonly ok: true; readonly request: StartRequest } | { readonly ok: false; readonly errors: FieldErrors };

/** The request the typed values make, or every problem found, each at its field. */
export function buildStartRequest(values: StartValues): Built {
  const errors: Partial<Record<FieldName, string[]>> = {};
  const add = (field: FieldName, message: string) => {
    (errors[field] ??= []).push(message);
  };

  const composition = values.composition.trim();
  if (composition === '') add('composition', 'Type the name of a Composition in this namespace, e.g. human-review.');
  else {
    const problem = nameProblem('Composition', composition);
    if (problem !== null) add('composition', problem);
  }
  const revision = parseWhole(values.revision, 'Revision', 1);
  if (!revision.ok) add('revision', revision.message);

  const budgets: Partial<Record<BudgetKey, number>> = {};
  for (const key of BUDGET_KEYS) {
    const parsed = parseBudget(key, values.budgets[key]);
    if (!parsed.ok) add(key, parsed.message);
    else if (parsed.value !== null) budgets[key] = parsed.value;
  }

  const name = values.name.trim();
  if (name !== '') {
    const problem = nameProblem('Run name', name);
    if (problem !== null) add('name', problem);
  }

  if (Object.keys(errors).length > 0) return { ok: false, errors };

  const users = splitNames(values.users);
  const groups = splitNames(values.groups);
  const request: StartRequest = {
    ...(name === '' ? {} : { name }),
    compositionRef: { name: composition, ...(revision.ok && revision.value !== null ? { revision: revision.value } : {}) },
    input: values.input,
    ...(users.length === 0 && groups.length === 0
      ? {}
      : { approvers: { ...(users.length === 0 ? {} : { users }), ...(groups.length === 0 ? {} : { groups }) } }),
    ...(Object.keys(budgets).length === 0 ? {} : { budgets }),
    ...(values.captureContent ? { captureContent: true } : {}),
  };
  return { ok: true, request };
}

const BODY_FIELDS: Readonly<Record<string, FieldName>> = {
  name: 'name',
  input: 'input',
  captureContent: 'captureContent',
  composition: 'composition',
};

/** The field a finding's `loc` (`["body", "budgets", "maxTokens"]`…) is about, or null. */
export function fieldOfLoc(loc: readonly (string | number)[]): FieldName | null {
  if (loc[0] !== 'body') return null;
  const [, first, second] = loc;
  if (typeof first !== 'string') return null;
  if (first === 'compositionRef') return second === 'revision' ? 'revision' : 'composition';
  if (first === 'approvers') return second === 'groups' ? 'groups' : second === 'users' || second === undefined ? 'users' : null;
  if (first === 'budgets') return typeof second === 'string' && (BUDGET_KEYS as readonly string[]).includes(second) ? (second as BudgetKey) : null;
  return BODY_FIELDS[first] ?? null;
}

/**
 * The field an apiserver refusal names in its words (a 422 or 403 the sidecar passes on with
 * an empty `loc`): `spec.budgets.maxTokens: Invalid value…`, `metadata.name: Invalid value…`.
 */
export function fieldOfMessage(message: string): FieldName | null {
  const path = /\b(metadata\.name|spec\.[A-Za-z]+(?:\.[A-Za-z]+)?)\b/.exec(message)?.[1];
  if (path === undefined) return null;
  if (path === 'metadata.name') return 'name';
  return fieldOfLoc(['body', ...path.split('.').slice(1)]);
}

/** A refusal not about one field, listed in the summary with where it points, if anywhere. */
export interface Unplaced {
  readonly where: string;
  readonly message: string;
}

export interface PlacedFindings {
  readonly fields: FieldErrors;
  readonly others: readonly Unplaced[];
}

/**
 * A 422's findings at their fields: each of `errors` by its `loc`; with none, the problem
 * itself (its `loc`, or the field its message names). What maps to no field is kept in `others`.
 */
export function placeFindings(problem: Problem, findings: readonly Finding[]): PlacedFindings {
  const fields: Partial<Record<FieldName, string[]>> = {};
  const others: Unplaced[] = [];
  const all: readonly Finding[] = findings.length > 0 ? findings : [{ loc: problem.loc, field: '', code: problem.code, message: problem.message }];
  for (const finding of all) {
    const field = fieldOfLoc(finding.loc) ?? (finding.loc.length <= 1 ? fieldOfMessage(finding.message) : null);
    if (field === null) others.push({ where: whereOf(finding), message: finding.message });
    else (fields[field] ??= []).push(finding.message);
  }
  return { fields, others };
}

function whereOf(finding: Finding): string {
  if (finding.field !== '') return finding.field;
  const loc = finding.loc[0] === 'body' ? finding.loc.slice(1) : finding.loc;
  return loc.map(String).join('.');
}

/** The fields with errors, in the form's order (the summary's order). */
export function erroneousFields(errors: FieldErrors): FieldName[] {
  return FIELDS.filter((f) => (errors[f]?.length ?? 0) > 0);
}
