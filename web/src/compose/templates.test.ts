import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { readCapabilities } from './capabilities.ts';
import { TEMPLATES, readTemplate, templateRefusal } from './templates.ts';

const examples = path.resolve(import.meta.dirname, '../../../examples/compositions');

describe('the templates are the example Compositions (12.70)', () => {
  it('holds one template per example file, each with the spec the file has', () => {
    const files = readdirSync(examples)
      .filter((f) => f.endsWith('.yaml'))
      .sort();
    expect(TEMPLATES.map((t) => t.file).sort()).toEqual(files);
    for (const template of TEMPLATES) {
      const text = readFileSync(path.join(examples, template.file), 'utf8');
      expect(template.source).toBe(text);
      const manifest = parse(text) as { metadata: { name: string }; spec: unknown };
      expect(template.name).toBe(manifest.metadata.name);
      expect(template.spec).toEqual(manifest.spec);
    }
  });

  it('includes a template per supported pattern plus release notes and human review (12.19)', () => {
    const patterns = new Set(TEMPLATES.map((t) => t.pattern));
    for (const p of ['Pipeline', 'Router', 'CriticLoop', 'FanOutFanIn', 'Supervisor', 'MapReduce', 'Debate', 'PlanAndExecute']) expect(patterns, p).toContain(p);
    expect(TEMPLATES.map((t) => t.name)).toContain('human-review');
  });

  it('says why a file holds no template', () => {
    expect(readTemplate('x.yaml', 'kind: RegistryEntry\nmetadata: {name: a}\nspec: {}\n')).toBe('x.yaml: not a Composition');
    expect(readTemplate('y.yaml', 'a: [1\n')).toMatch(/^y\.yaml: /);
    expect(readTemplate('z.yaml', '---\na: 1\n---\nb: 2\n')).toBe('z.yaml: one YAML document expected');
  });

  it('can be viewed but not loaded when the server does not run its pattern or a node kind (12.19)', () => {
    const template = TEMPLATES.find((t) => t.name === 'human-review');
    if (template === undefined) throw new Error('no human-review template');
    const runsAll = readCapabilities({ capabilities: { nodeKinds: [{ kind: 'HumanApproval', supported: true }], patterns: [{ pattern: 'CriticLoop', supported: true }] } });
    expect(templateRefusal(template, runsAll)).toBeNull();
    const noApprovals = readCapabilities({ capabilities: { nodeKinds: [{ kind: 'HumanApproval', supported: false, note: 'approvals are off here' }], patterns: [] } });
    expect(templateRefusal(template, noApprovals)).toBe('this server does not run HumanApproval: approvals are off here');
    const noLoops = readCapabilities({ capabilities: { nodeKinds: [], patterns: [{ pattern: 'CriticLoop', supported: false }] } });
    expect(templateRefusal(template, noLoops)).toBe('this server does not run CriticLoop');
    expect(templateRefusal(template, null)).toBeNull();
  });
});
