// The namespace's Compositions by name, offered as suggestions when starting a run or filtering
// the list (`GET /api/v1/namespaces/{ns}/compositions`). Only a help: a person whose Role cannot
// list them still types a name, and the sidecar decides.

import { apiPath, callApi, isRecord, shapeProblem, type ApiOptions } from '../api/http.ts';
import type { Result } from '../api/runs.ts';

export interface CompositionChoice {
  readonly name: string;
  readonly description: string;
  /** The newest revision, once the operator recorded one. */
  readonly revision: number | null;
}

/** The Compositions of a list reply, by name. */
export function parseChoices(body: unknown): CompositionChoice[] | null {
  if (!isRecord(body) || !Array.isArray(body['items'])) return null;
  const out: CompositionChoice[] = [];
  for (const item of body['items']) {
    if (!isRecord(item)) continue;
    const meta = isRecord(item['metadata']) ? item['metadata'] : {};
    const spec = isRecord(item['spec']) ? item['spec'] : {};
    const status = isRecord(item['status']) ? item['status'] : {};
    const name = meta['name'];
    if (typeof name !== 'string' || name === '') continue;
    const description = spec['description'];
    const revision = status['revision'];
    out.push({
      name,
      description: typeof description === 'string' ? description : '',
      revision: typeof revision === 'number' && Number.isInteger(revision) ? revision : null,
    });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

export async function listCompositionChoices(token: string, namespace: string, options: ApiOptions = {}): Promise<Result<CompositionChoice[]>> {
  const reply = await callApi(token, apiPath('namespaces', namespace, 'compositions'), {}, options);
  if (!reply.ok) return reply;
  const choices = parseChoices(reply.body);
  return choices === null ? { ok: false, problem: shapeProblem(reply.status, 'a list of Compositions') } : { ok: true, value: choices };
}
