import { describe, expect, it } from 'vitest';
import { fieldHelp } from './help.ts';

/** The shape schemars gives `Composition.spec` (`orrery schema composition`), trimmed. */
const schema = {
  type: 'object',
  properties: {
    nodes: { type: 'array', items: { $ref: '#/$defs/Node' } },
    edges: { type: 'array', items: { $ref: '#/$defs/Edge' } },
    budgets: { $ref: '#/$defs/Budgets', description: 'Limits for the whole run.\nA budget left out is set to the ceiling.' },
  },
  $defs: {
    Node: { type: 'object', description: 'One node.', properties: { model: { type: ['string', 'null'], description: 'Name of a model entry.' }, output: { anyOf: [{ $ref: '#/$defs/Output' }, { type: 'null' }] } } },
    Edge: { type: 'object', properties: { when: { description: 'The label that takes this edge.' } } },
    Output: { type: 'object', properties: { labels: { description: 'The labels the node answers with.' } } },
    Budgets: { type: 'object', description: 'The budgets type.', properties: { maxTokens: { description: 'Tokens, at most.' } } },
  },
};

describe('field help from the published schema, as kubectl explain gives it', () => {
  it.each([
    [['nodes', 'model'], 'Name of a model entry.'],
    [['edges', 'when'], 'The label that takes this edge.'],
    [['budgets'], 'Limits for the whole run. A budget left out is set to the ceiling.'],
    [['budgets', 'maxTokens'], 'Tokens, at most.'],
    [['nodes', 'output', 'labels'], 'The labels the node answers with.'],
  ])('%j says %j', (path, help) => {
    expect(fieldHelp(schema, path)).toBe(help);
  });

  it('is none for a field the schema does not describe, or with no schema yet', () => {
    expect(fieldHelp(schema, ['nodes', 'colour'])).toBeNull();
    expect(fieldHelp(null, ['nodes', 'model'])).toBeNull();
  });

  it('does not loop on a definition that refers to itself', () => {
    expect(fieldHelp({ $ref: '#/$defs/A', $defs: { A: { $ref: '#/$defs/A' } } }, ['x'])).toBeNull();
  });
});
