// `GET /api/v1/schema`: what this deployment publishes (the Composition spec's JSON Schema, the
// trace-event schema, capabilities, budget ceilings, the approval timeout). The console calls it
// once after sign-in: 404 or 403 means the Studio is not available to this person (rule 12.4).

import { apiPath, callApi, isRecord, shapeProblem, type ApiOptions } from './http.ts';
import type { Result } from './runs.ts';

export interface Published {
  /** The whole reply, for the parts a page reads (budget ceilings, capabilities). */
  readonly raw: Readonly<Record<string, unknown>>;
}

export async function fetchSchema(token: string, options: ApiOptions = {}): Promise<Result<Published>> {
  const reply = await callApi(token, apiPath('schema'), {}, options);
  if (!reply.ok) return reply;
  return isRecord(reply.body) ? { ok: true, value: { raw: reply.body } } : { ok: false, problem: shapeProblem(reply.status, 'the published schema') };
}
