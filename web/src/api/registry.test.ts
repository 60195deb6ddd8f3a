import { describe, expect, it } from 'vitest';
import { parseRegistry } from './registry.ts';

const body = {
  items: [
    { name: 'search', spec: { mcp: { url: 'http://search' } }, ready: true, reason: 'Pinned', message: '', status: { tools: [] } },
    { name: 'writer', spec: { a2a: { cardUrl: 'http://w', skills: ['draft', 'edit'], effect: 'Acting' } }, ready: false, reason: 'PinChanged', message: 'the card changed' },
    { name: 'scripted', spec: { model: { provider: 'Scripted' } } },
    { spec: {} },
    'odd',
  ],
};

describe('the registry as the console reads it', () => {
  it('reads each entry’s kind, readiness and A2A skills, sorted by name, leaving out what is no entry', () => {
    const items = parseRegistry(body);
    expect(items?.map((i) => [i.name, i.kind, i.ready, i.reason])).toEqual([
      ['scripted', 'model', null, null],
      ['search', 'mcp', true, 'Pinned'],
      ['writer', 'a2a', false, 'PinChanged'],
    ]);
    expect(items?.find((i) => i.name === 'writer')).toMatchObject({ skills: ['draft', 'edit'], effect: 'Acting', message: 'the card changed' });
    expect(parseRegistry({})).toBeNull();
  });
});
