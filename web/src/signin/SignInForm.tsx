import { useEffect, useId, useRef, useState, type SubmitEvent } from 'react';
import { fetchMe, type Me } from '../api/me.ts';
import { cleanToken, signInFailure } from './messages.ts';

interface Props {
  readonly onSignedIn: (token: string, me: Me) => void;
  /** Why the person is signing in again (their token was refused mid-session), if so. */
  readonly notice?: string | null;
}

type State = { readonly step: 'idle' } | { readonly step: 'checking' } | { readonly step: 'failed'; readonly message: string };

/** Paste a bearer token; `GET /api/v1/me` says whose it is. */
export function SignInForm({ onSignedIn, notice = null }: Props) {
  const [token, setToken] = useState('');
  const [state, setState] = useState<State>({ step: 'idle' });
  const input = useRef<HTMLInputElement>(null);
  const ids = useId();
  const hintId = `${ids}-hint`;
  const errorId = `${ids}-error`;

  // At first, and after a failure, the token field has the focus (the alert says what failed).
  useEffect(() => {
    if (state.step !== 'checking') input.current?.focus();
  }, [state.step]);

  const submit = async (event: SubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (state.step === 'checking') return;
    const cleaned = cleanToken(token);
    if (cleaned === '') {
      setState({ step: 'failed', message: 'Paste a token first.' });
      return;
    }
    setState({ step: 'checking' });
    const result = await fetchMe(cleaned);
    if (result.ok) {
      onSignedIn(cleaned, result.me);
    } else {
      setState({ step: 'failed', message: signInFailure(result.problem) });
    }
  };

  const checking = state.step === 'checking';
  return (
    <form
      aria-labelledby={`${ids}-title`}
      className="flex flex-col gap-4 rounded-lg border border-slate-300 bg-white p-6 shadow-sm dark:border-slate-700 dark:bg-slate-900"
      noValidate
      onSubmit={(event) => {
        void submit(event);
      }}
    >
      <h2 id={`${ids}-title`} className="text-xl font-semibold">
        Sign in with your cluster identity
      </h2>
      {notice === null ? null : (
        <p role="alert" className="rounded-md border border-amber-700 bg-amber-50 p-3 text-amber-950 dark:border-amber-400 dark:bg-amber-950 dark:text-amber-100">
          {notice}
        </p>
      )}
      <div className="flex flex-col gap-2">
        <label htmlFor={`${ids}-token`} className="font-medium">
          Bearer token
        </label>
        <input
          ref={input}
          id={`${ids}-token`}
          name="token"
          type="password"
          autoComplete="off"
          spellCheck={false}
          value={token}
          aria-describedby={state.step === 'failed' ? `${hintId} ${errorId}` : hintId}
          aria-invalid={state.step === 'failed'}
          readOnly={checking}
          onChange={(event) => {
            setToken(event.target.value);
          }}
          className="rounded-md border border-slate-400 bg-white px-3 py-2 font-mono text-sm text-slate-900 focus-visible:outline-3 focus-visible:outline-offset-2 focus-visible:outline-sky-600 dark:border-slate-500 dark:bg-slate-950 dark:text-slate-100 dark:focus-visible:outline-sky-400"
        />
        <p id={hintId} className="text-sm text-slate-700 dark:text-slate-300">
          A token your cluster accepts: an OIDC id token, or one from <code className="font-mono">kubectl create token</code>. It is kept in
          this page&apos;s memory only, sent as <code className="font-mono">Authorization</code> to this sidecar, never stored; reloading or
          closing the page forgets it.
        </p>
      </div>
      <div className="flex items-center gap-4">
        <button
          type="submit"
          disabled={checking}
          className="rounded-md bg-sky-700 px-4 py-2 font-medium text-white hover:bg-sky-800 focus-visible:outline-3 focus-visible:outline-offset-2 focus-visible:outline-sky-600 disabled:opacity-60 dark:bg-sky-500 dark:text-slate-950 dark:hover:bg-sky-400 dark:focus-visible:outline-sky-400"
        >
          Sign in
        </button>
        <p role="status" className="text-sm">
          {checking ? 'Asking the sidecar who this token is…' : ''}
        </p>
      </div>
      {state.step === 'failed' ? (
        <p id={errorId} role="alert" className="rounded-md border border-red-700 bg-red-50 p-3 text-red-900 dark:border-red-400 dark:bg-red-950 dark:text-red-100">
          {state.message}
        </p>
      ) : null}
    </form>
  );
}
