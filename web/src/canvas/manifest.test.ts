import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { toSpec } from './document.ts';
import { API_VERSION, entriesUsed, exportYaml, importYaml, LAST_APPLIED, manifestMetadata } from './manifest.ts';

const EXAMPLES = join(import.meta.dirname, '..', '..', '..', 'examples', 'compositions');

const SPEC = {
  pattern: 'CriticLoop',
  nodes: [
    { id: 'writer', kind: 'LLMAgent', model: 'scripted', tools: ['a2a:demo-writer.draft', 'mcp:demo-tools.search_articles', 'mcp:demo-tools.get_article'] },
    { id: 'critic', kind: 'LLMAgent', model: 'gone', output: { labels: ['approved', 'rejected'] }, description: 'yes' },
  ],
  edges: [{ from: 'writer', to: 'critic' }],
};

/** A Composition as `GET …/compositions/{name}` returns it. */
const FROM_SERVER = {
  apiVersion: API_VERSION,
  kind: 'Composition',
  metadata: {
    name: 'notes',
    namespace: 'team-a',
    uid: 'u-1',
    resourceVersion: '42',
    generation: 3,
    creationTimestamp: '2026-01-01T00:00:00Z',
    managedFields: [{ manager: 'kubectl' }],
    labels: { team: 'docs' },
    annotations: { [LAST_APPLIED]: '{"big":"copy"}', owner: 'alice' },
  },
  spec: SPEC,
  status: { revision: 3 },
};

/** Two entries as `GET …/registry` lists them, one as a whole object. */
const REGISTRY = [
  { name: 'demo-tools', spec: { mcp: { url: 'http://tools' } }, ready: true, status: { conditions: [] } },
  { metadata: { name: 'demo-writer', namespace: 'team-a', uid: 'u-2', annotations: { [LAST_APPLIED]: '{}' } }, spec: { a2a: { url: 'http://writer' } }, status: {} },
  { name: 'scripted', spec: { model: { provider: 'scripted' } } },
  { name: 'unused', spec: { model: { provider: 'x' } } },
];

function documentsOf(yaml: string): unknown[] {
  return parseAllDocuments(yaml).map((d) => d.toJS() as unknown);
}

describe('the metadata a manifest keeps', () => {
  it('is the name, namespace, labels and annotations, without the server\'s fields or kubectl\'s last-applied copy', () => {
    expect(manifestMetadata(FROM_SERVER.metadata)).toStrictEqual({ name: 'notes', namespace: 'team-a', labels: { team: 'docs' }, annotations: { owner: 'alice' } });
  });

  it('has no annotations when the last-applied copy was the only one', () => {
    expect(manifestMetadata({ name: 'x', annotations: { [LAST_APPLIED]: '{}' }, labels: {} })).toStrictEqual({ name: 'x' });
  });

  it('is empty for no metadata', () => {
    expect(manifestMetadata(undefined)).toStrictEqual({});
  });
});

describe('the registry entries a spec uses', () => {
  it('are its models and the entries its tools name, sorted, each once', () => {
    expect(entriesUsed(SPEC)).toEqual(['demo-tools', 'demo-writer', 'gone', 'scripted']);
  });

  it.each([null, {}, { nodes: 'x' }, { nodes: [null, { tools: ['catalog:x', 'mcp:noentry'] }] }])('are none in %j', (spec) => {
    expect(entriesUsed(spec)).toEqual([]);
  });
});

describe('export', () => {
  const exported = exportYaml(FROM_SERVER, REGISTRY);
  const documents = documentsOf(exported.yaml);

  it('writes the Composition first, stripped to what a person applies', () => {
    expect(documents[0]).toStrictEqual({
      apiVersion: API_VERSION,
      kind: 'Composition',
      metadata: { name: 'notes', namespace: 'team-a', labels: { team: 'docs' }, annotations: { owner: 'alice' } },
      spec: SPEC,
    });
  });

  it('then each RegistryEntry the spec uses, by name, stripped the same way', () => {
    expect(documents.slice(1)).toStrictEqual([
      { apiVersion: API_VERSION, kind: 'RegistryEntry', metadata: { name: 'demo-tools' }, spec: { mcp: { url: 'http://tools' } } },
      { apiVersion: API_VERSION, kind: 'RegistryEntry', metadata: { name: 'demo-writer', namespace: 'team-a' }, spec: { a2a: { url: 'http://writer' } } },
      { apiVersion: API_VERSION, kind: 'RegistryEntry', metadata: { name: 'scripted' }, spec: { model: { provider: 'scripted' } } },
    ]);
    expect(exported.entries).toEqual(['demo-tools', 'demo-writer', 'scripted']);
  });

  it('names the entries the spec uses that it was not given', () => {
    expect(exported.missing).toEqual(['gone']);
  });

  it('leaves out the server\'s fields everywhere', () => {
    for (const field of ['uid', 'resourceVersion', 'generation', 'creationTimestamp', 'managedFields', 'status', LAST_APPLIED]) {
      expect(exported.yaml).not.toContain(field);
    }
  });

  it('quotes a string YAML 1.1 would read as a boolean, so kubectl reads it as written', () => {
    expect(exported.yaml).toContain('description: "yes"');
    expect(documentsOf(exported.yaml)).toEqual(parseAllDocuments(exported.yaml, { version: '1.1' }).map((d) => d.toJS() as unknown));
  });

  it('comes back through import as the same Composition', () => {
    const result = importYaml(exported.yaml);
    expect(result.problems).toEqual([]);
    expect(result.loaded.map((c) => [c.metadata, c.spec])).toEqual([[{ name: 'notes', namespace: 'team-a', labels: { team: 'docs' }, annotations: { owner: 'alice' } }, SPEC]]);
    expect(result.loaded[0] === undefined ? null : toSpec(result.loaded[0].doc)).toStrictEqual(SPEC);
  });
});

describe('import', () => {
  it.each(['critic-loop.yaml', 'human-review.yaml', 'supervisor.yaml'])('loads the example %s', (file) => {
    const result = importYaml(readFileSync(join(EXAMPLES, file), 'utf8'), { file });
    expect(result.problems).toEqual([]);
    expect(result.loaded).toHaveLength(1);
    expect(result.loaded[0]?.metadata['name']).toBe(file.replace('.yaml', ''));
    expect(result.loaded[0]?.line).toBeGreaterThan(1);
  });

  it('loads only Compositions and lists every other kind as refused', () => {
    const text = [
      'apiVersion: studio.orrery.dev/v1alpha1\nkind: Composition\nmetadata: {name: a}\nspec: {pattern: Pipeline, nodes: [{id: x, kind: LLMAgent}]}',
      'apiVersion: studio.orrery.dev/v1alpha1\nkind: RegistryEntry\nmetadata: {name: tools}\nspec: {mcp: {url: "http://t"}}',
      'apiVersion: v1\nkind: Secret\nmetadata: {name: key}\ndata: {}',
      '{"spec_version": 1, "name": "seed"}',
    ].join('\n---\n');
    const result = importYaml(text, { file: 'bundle.yaml', namespace: 'team-a' });
    expect(result.problems).toEqual([]);
    expect(result.loaded.map((c) => c.metadata['name'])).toEqual(['a']);
    expect(result.refused).toEqual([
      { document: 2, line: 6, kind: 'RegistryEntry', name: 'tools', reason: expect.stringContaining('kubectl') as unknown, command: 'kubectl apply -n team-a -f bundle.yaml' },
      { document: 3, line: 11, kind: 'Secret', name: 'key', reason: 'a Secret: the canvas loads only Compositions', command: null },
      { document: 4, line: 16, kind: 'seed spec', name: null, reason: expect.stringContaining('seed spec') as unknown, command: 'orrery import bundle.yaml > composition.yaml' },
    ]);
  });

  it.each<[string, { file?: string; namespace?: string }, string]>([
    ['pasted text, read from stdin', {}, 'kubectl apply -f -'],
    ['a document that names its namespace', { file: 'e.yaml', namespace: 'team-a' }, 'kubectl apply -f e.yaml'],
    ['a file name with a space, quoted', { file: 'my entries.yaml' }, "kubectl apply -f 'my entries.yaml'"],
  ])('tells the kubectl command for a RegistryEntry from %s', (_what, options, command) => {
    const text = `apiVersion: ${API_VERSION}\nkind: RegistryEntry\nmetadata: {name: t${options.namespace === undefined ? '' : ', namespace: team-b'}}\nspec: {}`;
    expect(importYaml(text, options).refused[0]?.command).toBe(command);
  });

  it.each<[string, string, { document: number; line: number }[]]>([
    ['a YAML syntax error', 'kind: Secret\n---\nkind: [Composition\n', [{ document: 2, line: 4 }]],
    ['a key given twice', `kind: Composition\napiVersion: ${API_VERSION}\nkind: Composition\n`, [{ document: 1, line: 3 }]],
    ['a list, not an object', 'kind: Secret\n---\n- a\n- b\n', [{ document: 2, line: 3 }]],
    ['plain text', 'hello\n', [{ document: 1, line: 1 }]],
    ['a document with no kind', 'apiVersion: v1\nmetadata: {}\n', [{ document: 1, line: 1 }]],
    ['a Composition of another version', `kind: Composition\napiVersion: studio.orrery.dev/v1\nspec: {nodes: []}\n`, [{ document: 1, line: 2 }]],
    ['a Composition with no spec', `apiVersion: ${API_VERSION}\nkind: Composition\nmetadata: {name: a}\n`, [{ document: 1, line: 1 }]],
    ['a node with no id, at the node', `apiVersion: ${API_VERSION}\nkind: Composition\nspec:\n  nodes:\n    - id: a\n      kind: LLMAgent\n    - kind: Join\n`, [{ document: 1, line: 7 }]],
    [
      'an edge listed twice (rule 12.67)',
      `apiVersion: ${API_VERSION}\nkind: Composition\nspec:\n  nodes: [{id: a, kind: Router}, {id: b, kind: LLMAgent}]\n  edges:\n    - {from: a, to: b, when: x}\n    - {from: a, to: b, when: y}\n    - {from: a, to: b, when: x}\n`,
      [{ document: 1, line: 8 }],
    ],
    ['an infinity', `apiVersion: ${API_VERSION}\nkind: Composition\nspec:\n  budgets:\n    maxTokens: .inf\n  nodes: []\n`, [{ document: 1, line: 5 }]],
    ['binary data', `apiVersion: ${API_VERSION}\nkind: Composition\nspec:\n  nodes: []\n  blob: !!binary aGk=\n`, [{ document: 1, line: 5 }]],
  ])('reports %s at its document and line, and loads nothing', (_what, bad, places) => {
    const good = `apiVersion: ${API_VERSION}\nkind: Composition\nmetadata: {name: fine}\nspec: {pattern: Pipeline, nodes: [{id: x, kind: LLMAgent}]}\n`;
    const result = importYaml(`${bad}${bad.endsWith('\n') ? '' : '\n'}---\n${good}`);
    expect(result.problems.map((p) => ({ document: p.document, line: p.line }))).toEqual(places);
    expect(result.problems.every((p) => p.message.startsWith(`document ${p.document}, line ${p.line}: `))).toBe(true);
    expect(result.loaded).toEqual([]);
  });

  it('gives the parser\'s reason in one sentence', () => {
    expect(importYaml('k: 1\nk: 2\n').problems.map((p) => p.message)).toEqual(['document 1, line 2: Map keys must be unique']);
  });

  it('skips empty documents, as kubectl does, and counts them', () => {
    const result = importYaml(`---\n# nothing\n---\napiVersion: ${API_VERSION}\nkind: Secret\n`);
    expect(result.refused.map((r) => r.document)).toEqual([2]);
  });

  it('loads nothing and reports nothing for an empty text', () => {
    expect(importYaml('')).toEqual({ loaded: [], refused: [], problems: [] });
  });

  it('reads YAML as kubectl does: yes is true, a date stays text', () => {
    const text = `apiVersion: ${API_VERSION}\nkind: Composition\nspec:\n  description: 2026-01-01\n  nodes: [{id: a, kind: LLMAgent}]\n  edges: [{from: a, to: a, screen: yes}]\n`;
    const [loaded] = importYaml(text).loaded;
    expect(loaded?.spec).toEqual({ description: '2026-01-01', nodes: [{ id: 'a', kind: 'LLMAgent' }], edges: [{ from: 'a', to: 'a', screen: true }] });
  });

  it('strips the server\'s fields from what kubectl get -o yaml gave', () => {
    const [loaded] = importYaml(exportYaml(FROM_SERVER, []).yaml.replace('name: notes', 'name: notes\n  uid: u-1\n  resourceVersion: "7"')).loaded;
    expect(loaded?.metadata).toStrictEqual({ name: 'notes', namespace: 'team-a', labels: { team: 'docs' }, annotations: { owner: 'alice' } });
  });

  it('keeps a key named __proto__ as data, never as a prototype', () => {
    const [loaded] = importYaml(`apiVersion: ${API_VERSION}\nkind: Composition\nspec:\n  __proto__: {polluted: true}\n  nodes: [{id: a, kind: LLMAgent}]\n`).loaded;
    expect(loaded === undefined ? null : Object.hasOwn(loaded.spec, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });
});
