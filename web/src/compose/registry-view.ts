// The registry as the canvas shows it (rules 12.49–12.52): read-only, each entry's readiness,
// kind, endpoint, network and last error; an A2A entry's card digest and how it was pinned, the
// card's skills with those the entry allows and whether they act (4.52); an MCP entry's tools,
// allowed and read-only or not. When a probe found pins that differ from the pinned ones
// (`PinChanged`), what changed and the kubectl commands that accept them or probe again: pins
// are accepted as resources (by someone who may annotate the entry), never in the console.

import { isRecord, isStringArray } from '../api/http.ts';
import type { RegistryItem } from '../api/registry.ts';

export interface ToolView {
  readonly name: string;
  /** The entry lets compositions use it (`spec.mcp.tools`, empty: all). */
  readonly allowed: boolean;
  /** Declared read-only by the entry (`spec.mcp.readOnly`), else the server's hint. */
  readonly readOnly: boolean;
  readonly hint: boolean | null;
}

export interface SkillView {
  readonly name: string;
  readonly allowed: boolean;
  /** The entry says its skills act on the world (`effect: Acting`). */
  readonly acting: boolean;
}

export interface PinChange {
  readonly cardDigest: { readonly from: string | null; readonly to: string | null } | null;
  readonly skillsAdded: readonly string[];
  readonly skillsRemoved: readonly string[];
  readonly toolsAdded: readonly string[];
  readonly toolsRemoved: readonly string[];
  /** A tool whose description, input schema or annotations changed, and which. */
  readonly toolsChanged: readonly { readonly name: string; readonly parts: readonly ('description' | 'schema' | 'annotations')[] }[];
  readonly acceptCommand: string;
}

export interface EntryView {
  readonly name: string;
  readonly kind: RegistryItem['kind'];
  readonly ready: boolean | null;
  readonly reason: string | null;
  readonly message: string | null;
  readonly endpoint: string | null;
  readonly privateNetwork: boolean;
  readonly lastError: string | null;
  readonly cardDigest: string | null;
  /** How the card was pinned: by the entry's own `cardSha256`, or on first use. */
  readonly pinnedBy: 'entry' | 'first use' | null;
  readonly skills: readonly SkillView[];
  readonly tools: readonly ToolView[];
  readonly pinChange: PinChange | null;
  readonly reprobeCommand: string;
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

function pinnedTools(value: unknown): { readonly name: string; readonly description: string; readonly schema: string; readonly annotations: string; readonly hint: boolean | null }[] {
  if (!Array.isArray(value)) return [];
  return value.filter(isRecord).flatMap((t) => {
    const name = text(t['name']);
    if (name === null) return [];
    const hint = t['readOnlyHint'];
    return [{ name, description: text(t['descriptionSha256']) ?? '', schema: text(t['schemaSha256']) ?? '', annotations: text(t['annotationsSha256']) ?? '', hint: typeof hint === 'boolean' ? hint : null }];
  });
}

function strings(value: unknown): string[] {
  return isStringArray(value) ? value : [];
}

/** The kubectl command that names a RegistryEntry in `namespace`. */
function annotate(name: string, namespace: string, annotation: string): string {
  return `kubectl annotate registryentry ${name} -n ${namespace} ${annotation} --overwrite`;
}

export function entryView(item: RegistryItem, namespace: string): EntryView {
  const spec = item.spec;
  const status = item.status;
  const mcp = isRecord(spec['mcp']) ? spec['mcp'] : null;
  const a2a = isRecord(spec['a2a']) ? spec['a2a'] : null;
  const model = isRecord(spec['model']) ? spec['model'] : null;
  const endpoint = text(mcp?.['url']) ?? text(a2a?.['cardUrl']) ?? text(model?.['baseUrl']) ?? (model === null ? null : `${text(model['provider']) ?? 'model'} ${text(model['model']) ?? ''}`.trim());
  const privateNetwork = [mcp, a2a, model].some((e) => e?.['privateNetwork'] === true);
  const pinned = pinnedTools(status['tools']);
  const allowedTools = strings(mcp?.['tools']);
  const readOnly = strings(mcp?.['readOnly']);
  const tools: ToolView[] = pinned.map((t) => ({ name: t.name, allowed: allowedTools.length === 0 || allowedTools.includes(t.name), readOnly: readOnly.includes(t.name), hint: t.hint }));
  for (const name of allowedTools) if (!tools.some((t) => t.name === name)) tools.push({ name, allowed: true, readOnly: readOnly.includes(name), hint: null });
  const acting = text(a2a?.['effect']) === 'Acting';
  const allowedSkills = strings(a2a?.['skills']);
  const cardSkills = strings(status['skills']);
  const skills: SkillView[] = [...new Set([...cardSkills, ...allowedSkills])].map((name) => ({ name, allowed: allowedSkills.includes(name), acting: acting && allowedSkills.includes(name) }));
  const proposed = isRecord(status['proposedPins']) ? status['proposedPins'] : null;
  let pinChange: PinChange | null = null;
  if (proposed !== null) {
    const digest = text(proposed['digest']) ?? '';
    const found = pinnedTools(proposed['tools']);
    const foundSkills = strings(proposed['skills']);
    const cardFrom = text(status['cardSHA256']);
    const cardTo = text(proposed['cardSHA256']);
    pinChange = {
      cardDigest: cardTo !== null && cardTo !== cardFrom ? { from: cardFrom, to: cardTo } : null,
      skillsAdded: foundSkills.filter((s) => !cardSkills.includes(s)),
      skillsRemoved: a2a === null ? [] : cardSkills.filter((s) => !foundSkills.includes(s)),
      toolsAdded: found.filter((t) => !pinned.some((p) => p.name === t.name)).map((t) => t.name),
      toolsRemoved: mcp === null ? [] : pinned.filter((p) => !found.some((t) => t.name === p.name)).map((p) => p.name),
      toolsChanged: found.flatMap((t) => {
        const was = pinned.find((p) => p.name === t.name);
        if (was === undefined) return [];
        const parts = (['description', 'schema', 'annotations'] as const).filter((k) => was[k] !== t[k]);
        return parts.length === 0 ? [] : [{ name: t.name, parts }];
      }),
      acceptCommand: annotate(item.name, namespace, `studio.orrery.dev/accept-pins=${digest}`),
    };
  }
  return {
    name: item.name,
    kind: item.kind,
    ready: item.ready,
    reason: item.reason,
    message: item.message,
    endpoint,
    privateNetwork,
    lastError: text(status['lastError']),
    cardDigest: text(status['cardSHA256']),
    pinnedBy: a2a === null ? null : text(a2a['cardSHA256']) === null ? 'first use' : 'entry',
    skills,
    tools,
    pinChange,
    reprobeCommand: annotate(item.name, namespace, 'studio.orrery.dev/reprobe="$(date +%s)"'),
  };
}
