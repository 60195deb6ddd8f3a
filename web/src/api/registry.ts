// `GET /api/v1/namespaces/{ns}/registry`: the namespace's RegistryEntries the caller may read,
// each with its spec, readiness (`ready`, `reason`, `message`) and status (pins, tools, skills,
// last error), as the registry view and the canvas's tool picker read them. Read leniently: an
// entry the console cannot read is left out, never thrown on.

import { apiPath, callApi, isRecord, isStringArray, shapeProblem, type ApiOptions } from './http.ts';
import type { Result } from './runs.ts';

export type EntryKind = 'mcp' | 'a2a' | 'model' | 'unknown';

export interface RegistryItem {
  readonly name: string;
  readonly kind: EntryKind;
  readonly ready: boolean | null;
  readonly reason: string | null;
  readonly message: string | null;
  /** A2A: the skills a composition may use (`spec.a2a.skills`). */
  readonly skills: readonly string[];
  /** A2A: `ReadOnly` or `Acting` (`spec.a2a.effect`). */
  readonly effect: string | null;
  readonly spec: Readonly<Record<string, unknown>>;
  readonly status: Readonly<Record<string, unknown>>;
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

export function parseRegistry(body: unknown): RegistryItem[] | null {
  if (!isRecord(body) || !Array.isArray(body['items'])) return null;
  const out: RegistryItem[] = [];
  for (const item of body['items']) {
    if (!isRecord(item)) continue;
    const name = text(item['name']);
    const spec = isRecord(item['spec']) ? item['spec'] : {};
    if (name === null) continue;
    const kind: EntryKind = isRecord(spec['mcp']) ? 'mcp' : isRecord(spec['a2a']) ? 'a2a' : isRecord(spec['model']) ? 'model' : 'unknown';
    const a2a = isRecord(spec['a2a']) ? spec['a2a'] : {};
    const ready = item['ready'];
    out.push({
      name,
      kind,
      ready: typeof ready === 'boolean' ? ready : null,
      reason: text(item['reason']),
      message: text(item['message']),
      skills: isStringArray(a2a['skills']) ? a2a['skills'] : [],
      effect: text(a2a['effect']),
      spec,
      status: isRecord(item['status']) ? item['status'] : {},
    });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

export async function listRegistry(token: string, namespace: string, options: ApiOptions = {}): Promise<Result<RegistryItem[]>> {
  const reply = await callApi(token, apiPath('namespaces', namespace, 'registry'), {}, options);
  if (!reply.ok) return reply;
  const items = parseRegistry(reply.body);
  return items === null ? { ok: false, problem: shapeProblem(reply.status, 'the registry') } : { ok: true, value: items };
}
