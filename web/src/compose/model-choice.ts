// The model field (rule 12.18): the models a node may name, and a model outside them flagged in
// the server's words (crds/src/validate/models.rs `resolve_model`). A node's model must be a model
// entry of the registry the deployment allows (`capabilities.allowedModels`; absent: every model
// entry); a node without one runs the deployment's default, or the only usable model entry.

import type { RegistryItem } from '../api/registry.ts';
import type { Capabilities } from './capabilities.ts';
import { plainList } from './tool-picker.ts';

export interface ModelChoice {
  /** The models a node may name, in the server's order; null when not known (neither the registry nor the allowed list has been read). */
  readonly usable: readonly string[] | null;
  /** What a node without a model runs, or null when the server would refuse it (then `emptyFlag` says why). */
  readonly fallback: string | null;
}

function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Model entries of the registry the server would use (exactly one of mcp, a2a, model set). */
function modelEntries(registry: readonly RegistryItem[]): string[] {
  return registry.filter((i) => i.kind === 'model' && i.spec['mcp'] === undefined && i.spec['a2a'] === undefined).map((i) => i.name);
}

/**
 * The usable models: the registry's model entries the deployment allows. `registry` null: not
 * read (loading, or refused), so the allowed list alone, when the deployment publishes one.
 */
export function usableModels(registry: readonly RegistryItem[] | null, capabilities: Capabilities | null): readonly string[] | null {
  const allowed = capabilities?.allowedModels ?? null;
  if (registry === null) return allowed === null ? null : [...allowed].sort(byCodePoint);
  return modelEntries(registry)
    .filter((name) => allowed === null || allowed.includes(name))
    .sort(byCodePoint);
}

/** What the model select offers and what an empty model means. */
export function modelChoice(registry: readonly RegistryItem[] | null, capabilities: Capabilities | null): ModelChoice {
  const usable = usableModels(registry, capabilities);
  const fallbackName = capabilities?.defaultModel ?? null;
  if (usable === null) return { usable, fallback: fallbackName };
  if (fallbackName !== null) return { usable, fallback: usable.includes(fallbackName) ? fallbackName : null };
  return { usable, fallback: usable.length === 1 ? (usable[0] ?? null) : null };
}

/**
 * Why the server would refuse `model` on node `id` (12.18), in its words; null when it would take
 * it, or when nothing is known yet to judge by.
 */
export function modelFlag(id: string, model: string | null, registry: readonly RegistryItem[] | null, capabilities: Capabilities | null): string | null {
  const usable = usableModels(registry, capabilities);
  if (usable === null) return null;
  const choices = plainList(usable);
  if (model !== null && model !== '') {
    if (registry !== null && !modelEntries(registry).includes(model)) return `model '${model}' of node '${id}' is not a model entry in the registry; use one of: ${choices}`;
    return usable.includes(model) ? null : `model '${model}' is not allowed in this deployment; use one of: ${choices}`;
  }
  // Without the registry, or before the schema says the default, the server's refusal decides (12.10).
  if (registry === null || capabilities === null) return null;
  const fallback = capabilities.defaultModel;
  if (fallback !== null) {
    return usable.includes(fallback) ? null : `node '${id}' names no model, and the deployment's default model '${fallback}' is not a usable model entry; set model to one of: ${choices}`;
  }
  if (usable.length === 1) return null;
  if (usable.length === 0) return `node '${id}' needs a model, and the registry has no usable model entry; add a RegistryEntry with spec.model and name it here`;
  return `node '${id}' names no model, and the deployment sets no default; set model to one of: ${choices}`;
}
