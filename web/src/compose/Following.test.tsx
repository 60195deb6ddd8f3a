import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { Following, type Follow } from './Following.tsx';

const none = (): void => undefined;
const base: Follow = { name: 'notes', note: null, stopped: null, retry: none, reload: none, keep: none, dismiss: none };
const BY = { manager: 'kubectl-patch', time: '2026-12-02T10:15:00Z' };
const LINK = { namespace: 'team-a', name: 'notes', revision: 4, resourceVersion: '120' };

describe('what following shows', () => {
  it('offers a change made in the cluster as an alert naming who and when, with the diff, Reload theirs and Keep mine', () => {
    const html = renderToStaticMarkup(<Following follow={{ ...base, note: { kind: 'offer', by: BY, lines: ['node publish added', 'node writer: instruction: "a" → "b"'], link: LINK, spec: {} } }} />);
    expect(html).toContain('role="alert" aria-label="Changed in the cluster"');
    expect(html).toContain('notes was changed in the cluster by kubectl-patch at 2026-12-02 10:15:00 UTC, and you have unsaved changes.');
    expect(html).toContain('<ul aria-label="What their version changes"');
    expect(html).toContain('<li>node writer: instruction: &quot;a&quot; → &quot;b&quot;</li>');
    expect(html).toContain('>Reload theirs</button>');
    expect(html).toContain('>Keep mine</button>');
  });

  it('says a deletion as an alert with Dismiss', () => {
    const html = renderToStaticMarkup(<Following follow={{ ...base, note: { kind: 'deleted', text: 'notes was deleted from the cluster.' } }} />);
    expect(html).toContain('role="alert" aria-label="Deleted from the cluster"');
    expect(html).toContain('notes was deleted from the cluster.');
    expect(html).toContain('>Dismiss</button>');
  });

  it('says who changed a followed canvas as a polite status, and why following stopped with Retry', () => {
    const html = renderToStaticMarkup(<Following follow={{ ...base, note: { kind: 'updated', text: 'notes was changed in the cluster by kubectl-patch.' }, stopped: { text: 'Not following changes to notes: no.' } }} />);
    expect(html).toContain('<p role="status" class="text-sm');
    expect(html).toContain('notes was changed in the cluster by kubectl-patch.');
    expect(html).toContain('<span role="status">Not following changes to notes: no.</span>');
    expect(html).toContain('aria-label="Retry following changes"');
    expect(html).not.toContain('role="alert"');
  });

  it('shows nothing while there is nothing to say', () => {
    expect(renderToStaticMarkup(<Following follow={base} />)).toBe('');
  });
});
