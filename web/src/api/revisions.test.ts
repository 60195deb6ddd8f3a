import { describe, expect, it } from 'vitest';
import { FakeFetch } from '../testing/fake-fetch.ts';
import type { Fetch, Problem } from './http.ts';
import { getRevision, listRevisions, newestFirst, parseRevision, readLastChanges, revisionsProblemText, shortDigest, type Revision } from './revisions.ts';

const spec = { pattern: 'Pipeline', nodes: [{ id: 'a', kind: 'LLMAgent' }] };
const item = (revision: number, created = `2026-12-0${revision}T10:00:00Z`) => ({ revision, created, digest: `${revision}`.repeat(64), spec });

describe('a Composition’s revisions as the Open dialog reads them (12.56)', () => {
  it('lists them from …/compositions/{name}/revisions, newest first, whatever order they came in', async () => {
    const server = new FakeFetch().reply({ kind: 'json', status: 200, body: { items: [item(2), item(5), item(3)] } });
    const result = await listRevisions('t', 'team-a', 'release-notes', { fetch: server.fetch });
    expect(server.requests[0]?.url).toBe('/api/v1/namespaces/team-a/compositions/release-notes/revisions');
    expect(server.requests[0]?.headers.get('Authorization')).toBe('Bearer t');
    expect(result.ok ? result.value.map((r) => r.revision) : null).toEqual([5, 3, 2]);
  });

  it('reads one revision from …/revisions/{n}', async () => {
    const server = new FakeFetch().reply({ kind: 'json', status: 200, body: item(3) });
    const result = await getRevision('t', 'team-a', 'notes', 3, { fetch: server.fetch });
    expect(server.requests[0]?.url).toBe('/api/v1/namespaces/team-a/compositions/notes/revisions/3');
    expect(result).toEqual({ ok: true, value: { revision: 3, created: '2026-12-03T10:00:00Z', digest: '3'.repeat(64), spec } });
  });

  it.each<[string, unknown, Revision | null]>([
    ['a whole revision', item(1), { revision: 1, created: '2026-12-01T10:00:00Z', digest: '1'.repeat(64), spec }],
    ['no time or digest (kept, with empty text)', { revision: 4, spec }, { revision: 4, created: '', digest: '', spec }],
    ['a time that is not text', { revision: 4, created: 7, digest: null, spec }, { revision: 4, created: '', digest: '', spec }],
    ['no spec', { revision: 4 }, null],
    ['a spec that is a list', { revision: 4, spec: [] }, null],
    ['a revision that is text', { revision: '4', spec }, null],
    ['a revision of 0', { revision: 0, spec }, null],
    ['a fractional revision', { revision: 1.5, spec }, null],
    ['not an object', 'revision 4', null],
    ['null', null, null],
  ])('reads %s leniently', (_, value, expected) => {
    expect(parseRevision(value)).toEqual(expected);
  });

  it('leaves out items it cannot read, and a repeated number once', async () => {
    const server = new FakeFetch().reply({ kind: 'json', status: 200, body: { items: [item(1), { revision: 'x' }, item(2), { ...item(2), digest: 'later' }, 'junk'] } });
    const result = await listRevisions('t', 'team-a', 'notes', { fetch: server.fetch });
    expect(result.ok ? result.value.map((r) => [r.revision, r.digest.slice(0, 5)]) : null).toEqual([
      [2, '22222'],
      [1, '11111'],
    ]);
  });

  it.each([{ items: 'none' }, [], null, { revisions: [] }])('calls a reply without an items list %j not a list of revisions', async (body) => {
    const server = new FakeFetch().reply({ kind: 'json', status: 200, body });
    const result = await listRevisions('t', 'team-a', 'notes', { fetch: server.fetch });
    expect(result.ok ? null : result.problem.code).toBe('reply');
  });

  it('orders newest first by number, not by time', () => {
    expect(newestFirst([item(1, '2026-12-09T00:00:00Z'), item(3, '2026-12-01T00:00:00Z'), item(2)]).map((r) => r.revision)).toEqual([3, 2, 1]);
  });

  it('shows the first 12 characters of a digest', () => {
    expect(shortDigest('4be1c0ffee00112233445566')).toBe('4be1c0ffee00');
    expect(shortDigest('4be1')).toBe('4be1');
  });

  const problem = (status: number, message: string): Problem => ({ status, code: 'x', message, loc: [], retryAfterSeconds: null });
  it.each([
    [403, 'the cluster refuses …; reading a Composition’s revisions needs `controllerrevisions get` and `list`', 'You may not read the revisions of notes (403): the cluster refuses …; reading a Composition’s revisions needs `controllerrevisions get` and `list`'],
    [404, 'revision 2 is no longer kept', 'notes or that revision is no longer there (404): revision 2 is no longer kept. Close this and open the list again.'],
    [409, 'hashes to 1…, not 2…', 'A revision of notes does not hold the spec the Composition recorded, so it is not shown (409): hashes to 1…, not 2…'],
    [503, 'the apiserver is gone', 'The revisions of notes could not be read (503): the apiserver is gone'],
  ])('says a %i in plain words, with the sidecar’s reason', (status, message, said) => {
    expect(revisionsProblemText('notes', problem(status, message))).toBe(said);
  });
});

/** A fetch that answers each revision by its URL (a URL not named is a 404), recording the URLs asked. */
function byUrl(answers: Readonly<Record<string, { status: number; body: unknown }>>, seen: string[]): Fetch {
  return (url) => {
    seen.push(url);
    const answer = answers[url] ?? { status: 404, body: { loc: [], code: 'not_found', message: 'no such' } };
    return Promise.resolve(new Response(JSON.stringify(answer.body), { status: answer.status, headers: { 'Content-Type': 'application/json' } }));
  };
}

describe('when each Composition last changed (12.56: the list is newest first by its last change)', () => {
  const base = '/api/v1/namespaces/team-a/compositions';

  it('reads the time of each one’s current revision, and skips one with no revision yet', async () => {
    const seen: string[] = [];
    const fetch = byUrl(
      {
        [`${base}/a/revisions/3`]: { status: 200, body: item(3, '2026-12-07T00:00:00Z') },
        [`${base}/b/revisions/1`]: { status: 200, body: item(1, '2026-12-02T00:00:00Z') },
        [`${base}/c/revisions/9`]: { status: 200, body: { revision: 9, spec } },
      },
      seen,
    );
    const changes = await readLastChanges('t', 'team-a', [{ name: 'a', revision: 3 }, { name: 'b', revision: 1 }, { name: 'new', revision: null }, { name: 'c', revision: 9 }], { fetch }, 2);
    expect([...changes.times].sort()).toEqual([
      ['a', '2026-12-07T00:00:00Z'],
      ['b', '2026-12-02T00:00:00Z'],
    ]);
    expect(changes.problem).toBeNull();
    expect(seen.sort()).toEqual([`${base}/a/revisions/3`, `${base}/b/revisions/1`, `${base}/c/revisions/9`]);
  });

  it('stops asking at the first 403 and gives it, so the dialog can say which rule is missing', async () => {
    const seen: string[] = [];
    const refused = { status: 403, body: { loc: [], code: 'forbidden', message: 'needs `controllerrevisions get` and `list`' } };
    const fetch = byUrl({ [`${base}/a/revisions/1`]: refused, [`${base}/b/revisions/1`]: refused, [`${base}/c/revisions/1`]: refused }, seen);
    const changes = await readLastChanges('t', 'team-a', [{ name: 'a', revision: 1 }, { name: 'b', revision: 1 }, { name: 'c', revision: 1 }], { fetch }, 1);
    expect(seen).toEqual([`${base}/a/revisions/1`]);
    expect(changes.problem?.status).toBe(403);
    expect(changes.times.size).toBe(0);
  });

  it('goes on past a revision no longer kept (404), keeping the others’ times', async () => {
    const seen: string[] = [];
    const fetch = byUrl({ [`${base}/b/revisions/2`]: { status: 200, body: item(2) } }, seen);
    const changes = await readLastChanges('t', 'team-a', [{ name: 'a', revision: 1 }, { name: 'b', revision: 2 }], { fetch }, 1);
    expect(changes.times.get('b')).toBe('2026-12-02T10:00:00Z');
    expect(changes.problem?.status).toBe(404);
  });

  it('asks nothing when aborted', async () => {
    const seen: string[] = [];
    const abort = new AbortController();
    abort.abort();
    const changes = await readLastChanges('t', 'team-a', [{ name: 'a', revision: 1 }], { fetch: byUrl({}, seen), signal: abort.signal });
    expect(seen).toEqual([]);
    expect(changes.times.size).toBe(0);
  });
});
