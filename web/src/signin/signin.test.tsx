import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { Identity } from './Identity.tsx';
import { cleanToken, signInFailure } from './messages.ts';
import { SignInForm } from './SignInForm.tsx';

const noop = () => undefined;

describe('the sign-in shell', () => {
  it('labels the token field and says where the token is kept', () => {
    const html = renderToStaticMarkup(<SignInForm onSignedIn={noop} />);
    const id = /<input[^>]* id="([^"]+)"/.exec(html)?.[1];
    expect(id).toBeDefined();
    expect(html).toContain(`<label for="${id ?? ''}"`);
    expect(html).toContain('type="password"');
    expect(html).toMatch(/autocomplete="off"/i); // HTML attribute names are case-insensitive
    expect(html).toContain('memory only');
  });

  it('warns a service account that it cannot decide approvals, and not a person', () => {
    const account = renderToStaticMarkup(
      <Identity me={{ username: 'system:serviceaccount:team-a:ci', groups: [], person: false, namespaces: [] }} onSignOut={noop} />,
    );
    expect(account).toContain('a service account');
    expect(account).toContain('A service account cannot decide approvals.');
    const person = renderToStaticMarkup(<Identity me={{ username: 'alice', groups: ['team-a'], person: true, namespaces: ['team-a'] }} onSignOut={noop} />);
    expect(person).toContain('alice');
    expect(person).toContain('this install serves team-a');
    expect(person).not.toContain('cannot decide approvals');
  });

  it('says why a token was refused, in the sidecar\'s words', () => {
    const message = 'the cluster does not accept this token: send a bearer token it accepts (`kubectl create token`, your OIDC id token)';
    const problem = { status: 401, code: 'unauthenticated', message, loc: [], retryAfterSeconds: null };
    expect(signInFailure(problem)).toBe(`This token was refused (401): ${message}`);
    expect(signInFailure({ ...problem, status: 0, code: 'network', message: 'the sidecar could not be reached (Failed to fetch)' })).toContain('Is the sidecar running');
  });

  it('takes a pasted token with spaces, a newline or a Bearer prefix', () => {
    expect(cleanToken('  eyJhbGciOi.x.y\n')).toBe('eyJhbGciOi.x.y');
    expect(cleanToken('Bearer eyJhbGciOi.x.y')).toBe('eyJhbGciOi.x.y');
    expect(cleanToken('   ')).toBe('');
  });
});
