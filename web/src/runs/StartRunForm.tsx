// "Start a run": a Composition by name (and revision), the input, approvers, lower budgets,
// capture, a name. Checked here first; then `POST /api/v1/runs/{ns}`: 201 goes to the run's
// page; a 422's findings are shown at their fields, any other refusal in the sidecar's words,
// and nothing typed is ever lost. Ctrl+Enter (⌘+Enter) starts the run (rule 12.31). While the
// run is being created, Cancel run asks for it to be cancelled, which is sent as soon as the
// sidecar has answered with the run's name (rule 12.45).

import { useEffect, useId, useRef, useState, type KeyboardEvent, type ReactNode, type RefObject } from 'react';
import type { Problem } from '../api/http.ts';
import { cancelRun, startRun } from '../api/runs.ts';
import type { BudgetKey } from '../api/trace.ts';
import { navigate } from '../app/route.ts';
import { useSession } from '../app/session.tsx';
import { ProblemAlert } from '../ui/Problem.tsx';
import { button, card, dangerButton, focusRing, input, link, muted, primaryButton } from '../ui/classes.ts';
import type { CompositionChoice } from './compositions.ts';
import {
  BUDGET_KEYS,
  BUDGET_MINIMUM,
  EMPTY_START,
  FIELD_LABELS,
  buildStartRequest,
  erroneousFields,
  placeFindings,
  type FieldErrors,
  type FieldName,
  type StartValues,
  type Unplaced,
} from './startForm.ts';

/** What went wrong with the last try, shown in the summary at the top of the form. */
export interface StartFailure {
  readonly errors: FieldErrors;
  readonly others: readonly Unplaced[];
  /** A refusal that is not about the fields (409, 429, 403…), or a 422's own summary. */
  readonly problem: Problem | null;
  /** What was refused, when not the start itself ("Cancelling the run", rule 12.45). */
  readonly doing?: string;
}

export const NO_FAILURE: StartFailure = { errors: {}, others: [], problem: null };

interface ViewProps {
  readonly namespace: string;
  readonly values: StartValues;
  readonly failure: StartFailure;
  readonly busy: boolean;
  /** Cancel was asked while the run was being created: sent once it has a name. */
  readonly cancelAsked?: boolean;
  readonly choices?: readonly CompositionChoice[];
  readonly onChange?: (field: FieldName, values: StartValues) => void;
  readonly onSubmit?: () => void;
  /** Cancel run, while the run is being created. */
  readonly onCancelStart?: () => void;
  readonly onClose?: () => void;
  readonly summaryRef?: RefObject<HTMLDivElement | null>;
  readonly firstFieldRef?: RefObject<HTMLInputElement | null>;
}

const fieldError = 'text-sm font-medium text-red-800 dark:text-red-200';
const invalidInput = 'aria-[invalid=true]:border-red-700 aria-[invalid=true]:border-2 dark:aria-[invalid=true]:border-red-300';
const hint = `text-sm ${muted}`;

/** A field's line in the error summary: its messages, led by its name unless they name it. */
export function summaryLine(field: FieldName, messages: readonly string[]): string {
  const label = FIELD_LABELS[field];
  const text = messages.join(' ');
  return text.startsWith(label) ? text : `${label}: ${text}`;
}

/** Whether a key press asks to submit: Ctrl+Enter, or ⌘+Enter on a Mac. */
export function isSubmitChord(event: { readonly key: string; readonly ctrlKey: boolean; readonly metaKey: boolean }): boolean {
  return event.key === 'Enter' && (event.ctrlKey || event.metaKey);
}

/** The form itself, as markup from what it is given (the state lives in `StartRunForm`). */
export function StartRunFormView({ namespace, values, failure, busy, cancelAsked = false, choices = [], onChange, onSubmit, onCancelStart, onClose, summaryRef, firstFieldRef }: ViewProps) {
  const ids = useId();
  const idOf = (field: FieldName) => `${ids}-${field}`;
  const wrong = erroneousFields(failure.errors);
  const failed = wrong.length > 0 || failure.others.length > 0 || failure.problem !== null;
  const is422 = failure.problem?.status === 422;

  const change = (field: FieldName, next: Partial<StartValues>) => {
    onChange?.(field, { ...values, ...next });
  };
  const changeBudget = (key: BudgetKey, text: string) => {
    onChange?.(key, { ...values, budgets: { ...values.budgets, [key]: text } });
  };
  /** aria-describedby of a field: its hint, then its error when it has one. */
  const described = (field: FieldName, hasHint = true) => {
    const parts = hasHint ? [`${idOf(field)}-hint`] : [];
    if ((failure.errors[field]?.length ?? 0) > 0) parts.push(`${idOf(field)}-error`);
    return parts.length === 0 ? undefined : parts.join(' ');
  };
  const errorOf = (field: FieldName): ReactNode => {
    const messages = failure.errors[field] ?? [];
    if (messages.length === 0) return null;
    return (
      <p id={`${idOf(field)}-error`} className={fieldError}>
        {messages.join(' ')}
      </p>
    );
  };
  const invalid = (field: FieldName) => (failure.errors[field]?.length ?? 0) > 0;

  const onKeyDown = (event: KeyboardEvent<HTMLFormElement>) => {
    if (isSubmitChord(event)) {
      event.preventDefault();
      onSubmit?.();
    } else if (event.key === 'Escape' && !event.defaultPrevented && onClose !== undefined) {
      event.preventDefault();
      onClose();
    }
  };

  return (
    <form
      aria-labelledby={`${ids}-title`}
      className={`${card} flex flex-col gap-4`}
      noValidate
      onKeyDown={onKeyDown}
      onSubmit={(event) => {
        event.preventDefault();
        onSubmit?.();
      }}
    >
      <div className="flex items-baseline justify-between gap-4">
        <h2 id={`${ids}-title`} className="text-xl font-semibold">
          Start a run in <span className="font-mono">{namespace}</span>
        </h2>
        {onClose === undefined ? null : (
          <button type="button" className={button} onClick={onClose}>
            Close
          </button>
        )}
      </div>

      {failed ? (
        <div ref={summaryRef} tabIndex={-1} aria-labelledby={`${ids}-summary`} className={`flex flex-col gap-2 rounded-md border-2 border-red-700 p-3 dark:border-red-400 ${focusRing}`}>
          <h3 id={`${ids}-summary`} className="font-semibold text-red-900 dark:text-red-100">
            The run was not started
          </h3>
          {failure.problem === null ? null : is422 ? (
            <p>{failure.problem.message}</p>
          ) : (
            <ProblemAlert doing={failure.doing ?? 'Starting the run'} problem={failure.problem} />
          )}
          {wrong.length + failure.others.length === 0 ? null : (
            <ul className="flex list-disc flex-col gap-1 pl-5">
              {wrong.map((field) => (
                <li key={field}>
                  <a
                    href={`#${idOf(field)}`}
                    className={link}
                    onClick={(event) => {
                      event.preventDefault();
                      document.getElementById(idOf(field))?.focus();
                    }}
                  >
                    {summaryLine(field, failure.errors[field] ?? [])}
                  </a>
                </li>
              ))}
              {failure.others.map((other, index) => (
                <li key={`other-${index}`}>
                  {other.where === '' ? null : (
                    <>
                      <code className="font-mono">{other.where}</code>:{' '}
                    </>
                  )}
                  {other.message}
                </li>
              ))}
            </ul>
          )}
          <p className={hint}>Everything you typed is kept; correct it and start again.</p>
        </div>
      ) : null}

      <div className="grid grid-cols-1 gap-x-6 gap-y-4 lg:grid-cols-2">
        <div className="flex flex-col gap-4">
          <div className="grid grid-cols-[1fr_8rem] gap-x-3 gap-y-1">
            <label htmlFor={idOf('composition')} className="font-medium">
              Composition
            </label>
            <label htmlFor={idOf('revision')} className="font-medium">
              Revision
            </label>
            <input
              ref={firstFieldRef}
              id={idOf('composition')}
              className={`${input} ${invalidInput} font-mono`}
              value={values.composition}
              autoComplete="off"
              spellCheck={false}
              list={choices.length === 0 ? undefined : `${ids}-choices`}
              aria-invalid={invalid('composition')}
              aria-describedby={described('composition')}
              onChange={(event) => {
                change('composition', { composition: event.target.value });
              }}
            />
            <input
              id={idOf('revision')}
              className={`${input} ${invalidInput} tabular-nums`}
              value={values.revision}
              inputMode="numeric"
              autoComplete="off"
              aria-invalid={invalid('revision')}
              aria-describedby={described('revision')}
              onChange={(event) => {
                change('revision', { revision: event.target.value });
              }}
            />
            <p id={`${idOf('composition')}-hint`} className={hint}>
              A Composition in {namespace} by name, e.g. <code className="font-mono">human-review</code>.
            </p>
            <p id={`${idOf('revision')}-hint`} className={hint}>
              Optional; empty is the newest.
            </p>
            {choices.length === 0 ? null : (
              <datalist id={`${ids}-choices`}>
                {choices.map((choice) => (
                  <option key={choice.name} value={choice.name}>
                    {choice.description === '' ? choice.name : choice.description}
                  </option>
                ))}
              </datalist>
            )}
            <div className="col-span-2 empty:hidden">
              {errorOf('composition')}
              {errorOf('revision')}
            </div>
          </div>

          <div className="flex flex-col gap-1">
            <label htmlFor={idOf('input')} className="font-medium">
              Input
            </label>
            <textarea
              id={idOf('input')}
              className={`${input} ${invalidInput} min-h-20 resize-y`}
              rows={3}
              value={values.input}
              spellCheck
              aria-invalid={invalid('input')}
              aria-describedby={described('input')}
              onChange={(event) => {
                change('input', { input: event.target.value });
              }}
            />
            <p id={`${idOf('input')}-hint`} className={hint}>
              What the run works on, e.g. <q>version 2.4</q>. <kbd className="font-mono">Ctrl</kbd>+<kbd className="font-mono">Enter</kbd> (
              <kbd className="font-mono">⌘</kbd>+<kbd className="font-mono">Enter</kbd> on a Mac) starts the run.
            </p>
            {errorOf('input')}
          </div>

          <div className="flex flex-col gap-1">
            <label htmlFor={idOf('name')} className="font-medium">
              Run name <span className={`${muted} font-normal`}>(optional)</span>
            </label>
            <input
              id={idOf('name')}
              className={`${input} ${invalidInput} font-mono`}
              value={values.name}
              autoComplete="off"
              spellCheck={false}
              aria-invalid={invalid('name')}
              aria-describedby={described('name')}
              onChange={(event) => {
                change('name', { name: event.target.value });
              }}
            />
            <p id={`${idOf('name')}-hint`} className={hint}>
              Empty: a generated one, <code className="font-mono">run-</code> and five random characters.
            </p>
            {errorOf('name')}
          </div>
        </div>

        <div className="flex flex-col gap-4">
          <fieldset className="flex flex-col gap-2">
            <legend className="font-medium">
              Approvers besides you <span className={`${muted} font-normal`}>(optional)</span>
            </legend>
            <p id={`${ids}-approvers-hint`} className={hint}>
              Who else may decide this run&apos;s approvals and cancel it; comma-separated.
            </p>
            <div className="grid grid-cols-[5rem_1fr] items-center gap-x-3 gap-y-2">
              <label htmlFor={idOf('users')}>Users</label>
              <input
                id={idOf('users')}
                className={`${input} ${invalidInput} font-mono`}
                value={values.users}
                autoComplete="off"
                spellCheck={false}
                placeholder="bob, carol@example.com"
                aria-invalid={invalid('users')}
                aria-describedby={[`${ids}-approvers-hint`, ...(invalid('users') ? [`${idOf('users')}-error`] : [])].join(' ')}
                onChange={(event) => {
                  change('users', { users: event.target.value });
                }}
              />
              <label htmlFor={idOf('groups')}>Groups</label>
              <input
                id={idOf('groups')}
                className={`${input} ${invalidInput} font-mono`}
                value={values.groups}
                autoComplete="off"
                spellCheck={false}
                placeholder="release-managers"
                aria-invalid={invalid('groups')}
                aria-describedby={[`${ids}-approvers-hint`, ...(invalid('groups') ? [`${idOf('groups')}-error`] : [])].join(' ')}
                onChange={(event) => {
                  change('groups', { groups: event.target.value });
                }}
              />
            </div>
            {errorOf('users')}
            {errorOf('groups')}
          </fieldset>

          <fieldset className="flex flex-col gap-2">
            <legend className="font-medium">
              Lower budgets <span className={`${muted} font-normal`}>(optional)</span>
            </legend>
            <p id={`${ids}-budgets-hint`} className={hint}>
              Whole numbers, lower than the Composition&apos;s own; empty keeps its budget. The timeout does not count time spent waiting for a person.
            </p>
            <div className="grid grid-cols-3 gap-x-3 gap-y-2">
              {BUDGET_KEYS.map((key) => (
                <div key={key} className="flex flex-col gap-1">
                  <label htmlFor={idOf(key)} className="text-sm">
                    {FIELD_LABELS[key]}
                  </label>
                  <input
                    id={idOf(key)}
                    className={`${input} ${invalidInput} w-full tabular-nums`}
                    value={values.budgets[key]}
                    inputMode="numeric"
                    autoComplete="off"
                    placeholder={BUDGET_MINIMUM[key] === 0 ? '0 or more' : '1 or more'}
                    aria-invalid={invalid(key)}
                    aria-describedby={[`${ids}-budgets-hint`, ...(invalid(key) ? [`${idOf(key)}-error`] : [])].join(' ')}
                    onChange={(event) => {
                      changeBudget(key, event.target.value);
                    }}
                  />
                </div>
              ))}
            </div>
            {BUDGET_KEYS.map((key) => (
              <div key={key} className="empty:hidden">
                {errorOf(key)}
              </div>
            ))}
          </fieldset>

          <div className="flex flex-col gap-1">
            <div className="flex items-center gap-2">
              <input
                id={idOf('captureContent')}
                type="checkbox"
                className="size-4 accent-sky-700 dark:accent-sky-300"
                checked={values.captureContent}
                aria-invalid={invalid('captureContent')}
                aria-describedby={described('captureContent')}
                onChange={(event) => {
                  change('captureContent', { captureContent: event.target.checked });
                }}
              />
              <label htmlFor={idOf('captureContent')} className="font-medium">
                Capture content
              </label>
            </div>
            <p id={`${idOf('captureContent')}-hint`} className={hint}>
              Record prompts, replies and tool results in the run&apos;s events, so its page can show them. Its owner and approvers can read them.
            </p>
            {errorOf('captureContent')}
          </div>
        </div>
      </div>

      <div className="flex flex-wrap items-center gap-3 border-t border-slate-200 pt-3 dark:border-slate-700">
        <button type="submit" className={primaryButton} aria-disabled={busy}>
          {busy ? 'Starting…' : 'Start run'}
        </button>
        {busy ? (
          <button type="button" className={dangerButton} disabled={cancelAsked} onClick={onCancelStart}>
            {cancelAsked ? 'Cancel asked' : 'Cancel run'}
          </button>
        ) : (
          <span className={hint}>
            or <kbd className="font-mono">Ctrl</kbd>+<kbd className="font-mono">Enter</kbd>
          </span>
        )}
        <p role="status" className="text-sm">
          {busy ? (cancelAsked ? 'Starting the run… it is cancelled as soon as it has a name.' : 'Starting the run…') : ''}
        </p>
      </div>
    </form>
  );
}

function withoutField(errors: FieldErrors, field: FieldName): FieldErrors {
  const out: Partial<Record<FieldName, readonly string[]>> = {};
  for (const f of erroneousFields(errors)) if (f !== field) out[f] = errors[f] ?? [];
  return out;
}

interface Props {
  readonly namespace: string;
  /** Whether the form is shown; it takes the focus when it opens. */
  readonly open: boolean;
  readonly choices: readonly CompositionChoice[];
  readonly onClose: () => void;
}

/** The form with its state: kept while it is closed, so nothing typed is lost by closing it. */
export function StartRunForm({ namespace, open, choices, onClose }: Props) {
  const { token, api, expire } = useSession();
  const [values, setValues] = useState<StartValues>(EMPTY_START);
  const [failure, setFailure] = useState<StartFailure>(NO_FAILURE);
  const [busy, setBusy] = useState(false);
  const [cancelAsked, setCancelAsked] = useState(false);
  // What the pending start reads when its answer comes (state would be the render's copy).
  const cancelOnName = useRef(false);
  const [tries, setTries] = useState(0);
  const summary = useRef<HTMLDivElement>(null);
  const first = useRef<HTMLInputElement>(null);
  // A start answered after the person left the page does not pull them to the run's page.
  const mounted = useRef(true);
  useEffect(() => {
    mounted.current = true;
    return () => {
      mounted.current = false;
    };
  }, []);

  useEffect(() => {
    if (open) first.current?.focus();
  }, [open]);
  useEffect(() => {
    if (tries > 0) summary.current?.focus();
  }, [tries]);

  const fail = (next: StartFailure) => {
    setFailure(next);
    setTries((t) => t + 1);
  };

  /** Whether Cancel run was pressed since the last call, forgetting it. */
  const takeCancel = (): boolean => {
    const asked = cancelOnName.current;
    cancelOnName.current = false;
    setCancelAsked(false);
    return asked;
  };

  const submit = async () => {
    if (busy) return;
    const built = buildStartRequest(values);
    if (!built.ok) {
      fail({ errors: built.errors, others: [], problem: null });
      return;
    }
    takeCancel();
    setBusy(true);
    const result = await startRun(token, namespace, built.request, api);
    const cancel = takeCancel();
    if (result.ok && cancel) {
      // Asked while the run was being created: sent now that it has a name. Its page then
      // shows it ending Cancelled (or, had it ended first, how it ended: a 409).
      const ns = result.run.namespace === '' ? namespace : result.run.namespace;
      const cancelled = await cancelRun(token, ns, result.run.name, api);
      if (!cancelled.ok && cancelled.problem.status === 401) {
        expire(cancelled.problem);
        return;
      }
      if (!cancelled.ok && cancelled.problem.status !== 409) {
        setBusy(false);
        setValues(EMPTY_START);
        fail({
          errors: {},
          others: [],
          doing: 'Cancelling the run',
          problem: { ...cancelled.problem, message: `${cancelled.problem.message} Run ${result.run.name} was started and goes on: open it from the list to cancel it there.` },
        });
        return;
      }
    }
    setBusy(false);
    if (result.ok) {
      setValues(EMPTY_START);
      setFailure(NO_FAILURE);
      if (mounted.current) navigate({ page: 'run', namespace: result.run.namespace === '' ? namespace : result.run.namespace, name: result.run.name });
      return;
    }
    const { problem, findings } = result;
    if (problem.status === 401) {
      expire(problem);
      return;
    }
    if (problem.status === 422) {
      const placed = placeFindings(problem, findings);
      fail({ errors: placed.fields, others: placed.others, problem: findings.length > 0 ? problem : null });
      return;
    }
    // a taken name is also said at the name field, when one was typed
    const taken = problem.status === 409 && built.request.name !== undefined;
    fail({ errors: taken ? { name: [`${FIELD_LABELS.name} ${built.request.name ?? ''} is taken in ${namespace}; choose another, or leave it empty.`] } : {}, others: [], problem });
  };

  return (
    <StartRunFormView
      namespace={namespace}
      values={values}
      failure={failure}
      busy={busy}
      cancelAsked={cancelAsked}
      choices={choices}
      summaryRef={summary}
      firstFieldRef={first}
      onClose={onClose}
      onChange={(field, next) => {
        setValues(next);
        // a field's errors go once it is changed; the summary keeps the others
        if ((failure.errors[field]?.length ?? 0) > 0) {
          setFailure({ ...failure, errors: withoutField(failure.errors, field) });
        }
      }}
      onSubmit={() => {
        void submit();
      }}
      onCancelStart={() => {
        cancelOnName.current = true;
        setCancelAsked(true);
      }}
    />
  );
}
