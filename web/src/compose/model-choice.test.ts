import { describe, expect, it } from 'vitest';
import { parseRegistry, type RegistryItem } from '../api/registry.ts';
import { readCapabilities, type Capabilities } from './capabilities.ts';
import { modelChoice, modelFlag, usableModels } from './model-choice.ts';

const registry =
  parseRegistry({
    items: [
      { name: 'smart', spec: { model: { provider: 'OpenAI', model: 'gpt' } } },
      { name: 'fast', spec: { model: { provider: 'OpenAI', model: 'gpt-mini' } } },
      { name: 'Zeta', spec: { model: { provider: 'Scripted' } } },
      { name: 'tools', spec: { mcp: { url: 'http://t', tools: ['a'] } } },
    ],
  }) ?? [];

const caps = (extra: Record<string, unknown>): Capabilities | null => readCapabilities({ capabilities: { nodeKinds: [], patterns: [], ...extra } });

describe('the model field (12.18)', () => {
  it.each<[string, readonly RegistryItem[] | null, Capabilities | null, readonly string[] | null]>([
    ["every model entry where the deployment lists none, in the server's order", registry, caps({}), ['Zeta', 'fast', 'smart']],
    ['the model entries the deployment allows', registry, caps({ allowedModels: ['fast', 'missing'] }), ['fast']],
    ['the allowed list alone while the registry is not read', null, caps({ allowedModels: ['smart', 'fast'] }), ['fast', 'smart']],
    ['nothing known: no list', null, caps({}), null],
  ])('lists %s', (_what, items, capabilities, usable) => {
    expect(usableModels(items, capabilities)).toEqual(usable);
  });

  it.each<[string, string | null, readonly RegistryItem[] | null, Capabilities | null, string | null]>([
    ['a model the deployment allows', 'fast', registry, caps({ allowedModels: ['fast'] }), null],
    ['a model outside the allowed list', 'smart', registry, caps({ allowedModels: ['fast'] }), "model 'smart' is not allowed in this deployment; use one of: fast"],
    ['a name that is no model entry', 'tools', registry, caps({}), "model 'tools' of node 'writer' is not a model entry in the registry; use one of: Zeta, fast, smart"],
    ['an imported model outside the list, the registry not read', 'gpt-9', null, caps({ allowedModels: ['fast'] }), "model 'gpt-9' is not allowed in this deployment; use one of: fast"],
    ['no model, the default usable', null, registry, caps({ defaultModel: 'fast' }), null],
    ['no model, the default not allowed', null, registry, caps({ defaultModel: 'smart', allowedModels: ['fast'] }), "node 'writer' names no model, and the deployment's default model 'smart' is not a usable model entry; set model to one of: fast"],
    ['no model, no default, one usable', '', registry, caps({ allowedModels: ['fast'] }), null],
    ['no model, no default, several usable', null, registry, caps({}), "node 'writer' names no model, and the deployment sets no default; set model to one of: Zeta, fast, smart"],
    ['no model, none usable', null, [], caps({}), "node 'writer' needs a model, and the registry has no usable model entry; add a RegistryEntry with spec.model and name it here"],
    ['no model before the schema answers (12.10: the server decides)', null, registry, null, null],
  ])('flags %s as the server would', (_what, model, items, capabilities, flag) => {
    expect(modelFlag('writer', model, items, capabilities)).toBe(flag);
  });

  it('says what a node without a model runs', () => {
    expect(modelChoice(registry, caps({ defaultModel: 'fast' })).fallback).toBe('fast');
    expect(modelChoice(registry, caps({ allowedModels: ['smart'] })).fallback).toBe('smart');
    expect(modelChoice(registry, caps({})).fallback).toBeNull();
    expect(modelChoice(registry, caps({ defaultModel: 'smart', allowedModels: ['fast'] })).fallback).toBeNull();
  });
});
