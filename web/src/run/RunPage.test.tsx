import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { SessionContext, type Session } from '../app/session.tsx';
import { RunPage } from './RunPage.tsx';

const session: Session = {
  token: 'alice-token',
  me: { username: 'alice', groups: [], person: true, namespaces: ['team-a'] },
  api: {},
  namespace: 'team-a',
  setNamespace: () => undefined,
  signOut: () => undefined, expire: () => undefined,
};

describe('the live run panel before anything is read', () => {
  it('names the run, says it is reading it, and loads no graph yet (the canvas is its own chunk)', () => {
    const html = renderToStaticMarkup(
      <SessionContext value={session}>
        <RunPage namespace="team-a" name="notes.1" waiting={{ count: 0, items: [], problem: null, refresh: () => undefined }} />
      </SessionContext>,
    );
    expect(html).toContain('>notes.1</h1>');
    expect(html).toContain('Reading the run…');
    expect(html).toContain('Reading the spec the run ran…');
    expect(html).toContain('href="#/runs/team-a"');
    expect(html).not.toContain('react-flow');
    expect(html).not.toContain('alice-token');
  });
});
