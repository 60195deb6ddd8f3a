// What this deployment runs, as `GET /api/v1/schema` publishes it (`capabilities`,
// crds/src/capabilities.rs): the node kinds and patterns with whether each runs (and what to use
// instead), the feature flags, the models nodes may name, the limits and the budget ceilings.
// Never a client-side constant (rule 12.11): until the schema answers, nothing is gated and the
// server's refusal decides (12.10).

import { isRecord, isStringArray } from '../api/http.ts';
import type { BudgetKey } from '../api/trace.ts';

/** One node kind or pattern: whether the server runs it, and what to use instead when not. */
export interface Offered {
  readonly name: string;
  readonly supported: boolean;
  readonly note: string | null;
}

export interface Capabilities {
  readonly nodeKinds: readonly Offered[];
  readonly patterns: readonly Offered[];
  readonly loops: boolean;
  readonly parallel: boolean;
  readonly supervisor: boolean;
  readonly humanApproval: boolean;
  readonly edgeScreen: boolean;
  readonly perNodeModels: boolean;
  readonly actingRemotes: boolean;
  /** Model entries nodes may name; null: every model entry in the registry. */
  readonly allowedModels: readonly string[] | null;
  readonly defaultModel: string | null;
  /** The numeric limits (`maxNodes`, `maxLoopIterations`…). */
  readonly limits: Readonly<Record<string, number>>;
  readonly ceilings: Readonly<Partial<Record<BudgetKey, number>>>;
}

function offered(list: unknown, key: 'kind' | 'pattern'): Offered[] | null {
  if (!Array.isArray(list)) return null;
  const out: Offered[] = [];
  for (const item of list) {
    if (!isRecord(item)) continue;
    const name = item[key];
    if (typeof name !== 'string' || name === '') continue;
    const note = item['note'];
    out.push({ name, supported: item['supported'] === true, note: typeof note === 'string' && note !== '' ? note : null });
  }
  return out;
}

function numbers(value: unknown): Record<string, number> {
  if (!isRecord(value)) return {};
  return Object.fromEntries(Object.entries(value).filter((e): e is [string, number] => typeof e[1] === 'number' && Number.isFinite(e[1])));
}

/** The capabilities of a `/api/v1/schema` reply, or null when it has none the console can read. */
export function readCapabilities(schema: Readonly<Record<string, unknown>>): Capabilities | null {
  const raw = schema['capabilities'];
  if (!isRecord(raw)) return null;
  const nodeKinds = offered(raw['nodeKinds'], 'kind');
  const patterns = offered(raw['patterns'], 'pattern');
  if (nodeKinds === null || patterns === null) return null;
  const flag = (key: string): boolean => raw[key] !== false;
  const models = raw['allowedModels'];
  const defaultModel = raw['defaultModel'];
  return {
    nodeKinds,
    patterns,
    loops: flag('loops'),
    parallel: flag('parallel'),
    supervisor: flag('supervisor'),
    humanApproval: flag('humanApproval'),
    edgeScreen: flag('edgeScreen'),
    perNodeModels: flag('perNodeModels'),
    actingRemotes: raw['actingRemotes'] === true,
    allowedModels: isStringArray(models) ? models : null,
    defaultModel: typeof defaultModel === 'string' && defaultModel !== '' ? defaultModel : null,
    limits: numbers(raw['limits']),
    ceilings: numbers(raw['ceilings']),
  };
}

/** Whether the server runs `name` among `list`; unknown (no capabilities yet, or a name the server did not list): not refused here. */
export function refusal(list: readonly Offered[] | undefined, name: string): string | null {
  const found = list?.find((o) => o.name === name);
  if (found === undefined || found.supported) return null;
  return found.note === null ? `this server does not run ${name}` : `this server does not run ${name}: ${found.note}`;
}
