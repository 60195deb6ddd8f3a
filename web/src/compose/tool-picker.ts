// The tools a node may use, picked from the registry (rules 12.17, 4.52). Each MCP tool and A2A
// skill of the namespace's RegistryEntries, with the reference the spec writes
// (`mcp:<entry>.<tool>`, `a2a:<entry>.<skill>`) and whether the server's validator would take it
// (crds/src/validate/tools.rs, with the registry as operator/src/registry_view.rs gives it):
//
// - an MCP tool must be in the entry's `spec.mcp.tools` and `spec.mcp.readOnly`, and, once the
//   entry's tools are pinned, carry `readOnlyHint: true` in its pin (the server's word too);
// - an A2A skill must be in the entry's `spec.a2a.skills`; an entry with `effect: Acting` only
//   where the deployment allows acting remotes (`capabilities.actingRemotes`), and then each call
//   is confirmed by the run's owner (4.40), so it is marked as acting;
// - the name the model sees (`mcp_<entry>_<tool>`, every character but letters, digits and `_`
//   written as `_`) is at most 64 characters and differs from every other tool's on the node.
//
// A tool the server would refuse is listed anyway, with the reason and the fix in plain words.
// Readiness does not decide here (the validator does not read it), but a run using an entry that
// is not ready is refused, and one not probed yet waits: each entry carries its state.

import { isRecord, isStringArray } from '../api/http.ts';
import type { RegistryItem } from '../api/registry.ts';
import type { Capabilities } from './capabilities.ts';

/** The longest name a model sees for a tool (crds/src/codes.rs `MAX_TOOL_NAME_LENGTH`). */
export const MAX_MODEL_TOOL_NAME = 64;

const ENTRY_RE = /^[a-z][a-z0-9_-]{0,62}$/;
const NAME_RE = /^[A-Za-z0-9_.-]{1,128}$/;
/** crds/src/composition.rs `TOOL_REF_PATTERN`. */
const REFERENCE_RE = /^(mcp|a2a):([a-z][a-z0-9_-]{0,62})\.([A-Za-z0-9_.-]{1,128})$/;

export type ToolSource = 'mcp' | 'a2a';

export interface PickableTool {
  /** As the spec writes it: `mcp:demo-tools.search`. */
  readonly reference: string;
  readonly source: ToolSource;
  readonly entry: string;
  /** The tool's or skill's name on the remote. */
  readonly name: string;
  /** The name the node's model sees. */
  readonly modelName: string;
  /** An A2A skill of an entry with `effect: Acting` (4.52): each call waits for the owner's confirmation. */
  readonly acting: boolean;
  /** Why the server would refuse it, in plain words with the fix; null: it can be added. */
  readonly refused: string | null;
}

export type EntryState = { readonly state: 'ready' } | { readonly state: 'not-ready'; readonly reason: string | null; readonly message: string | null } | { readonly state: 'unprobed' };

export interface PickerEntry {
  readonly name: string;
  readonly source: ToolSource;
  readonly state: EntryState;
  /** What its state means for a run, in plain words; null when ready. */
  readonly stateNote: string | null;
  /** Why none of its tools can be used (an entry the server leaves out), else null. */
  readonly refused: string | null;
  readonly tools: readonly PickableTool[];
}

function strings(value: unknown): string[] {
  return isStringArray(value) ? value : [];
}

/** The name a model sees for a tool (crds/src/tool_names.rs `model_tool_name`). */
export function modelToolName(source: ToolSource, entry: string, name: string): string {
  return `${source}_${entry}_${name}`.replace(/[^A-Za-z0-9_]/g, '_');
}

/** Sorts names as the server's sets do (by code point), for lists in its words. */
function sorted(names: Iterable<string>): string[] {
  return [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** A list as the server writes one (crds/src/validate/report.rs `plain_list`). */
export function plainList(names: readonly string[]): string {
  return names.length === 0 ? '(none)' : names.join(', ');
}

function entryState(item: RegistryItem): { state: EntryState; note: string | null } {
  if (item.ready === true) return { state: { state: 'ready' }, note: null };
  if (item.ready === false) {
    const why = [item.reason, item.message].filter((x) => x !== null).join(': ');
    return {
      state: { state: 'not-ready', reason: item.reason, message: item.message },
      note: `not ready${why === '' ? '' : ` (${why})`}: a run that uses it is refused until it is ready again (see the Registry tab)`,
    };
  }
  return { state: { state: 'unprobed' }, note: 'not probed yet: a run that uses it waits until it is' };
}

/** Why a reference cannot be written for this entry and name (the validator's reference pattern), or null. */
function unwritable(source: ToolSource, entry: string, name: string): string | null {
  if (!ENTRY_RE.test(entry)) {
    return `the entry's name ${entry} cannot be written in a tool reference (lowercase letters, digits, '-' and '_', starting with a letter, at most 63 characters): agents can use its tools only under another name`;
  }
  if (!NAME_RE.test(name)) {
    return `${JSON.stringify(name)} cannot be written in a tool reference (letters, digits, '_', '.' and '-', at most 128 characters)`;
  }
  const model = modelToolName(source, entry, name);
  if (model.length > MAX_MODEL_TOOL_NAME) {
    return `it reaches the model as ${model}, ${model.length} characters; model tool names are at most ${MAX_MODEL_TOOL_NAME}: use a shorter entry or tool name`;
  }
  return null;
}

function mcpTools(item: RegistryItem, mcp: Readonly<Record<string, unknown>>): PickableTool[] {
  const allowed = strings(mcp['tools']);
  const readOnly = strings(mcp['readOnly']);
  const pins = Array.isArray(item.status['tools']) ? item.status['tools'].filter(isRecord) : [];
  const pinned = new Map<string, boolean | null>();
  for (const pin of pins) {
    const name = pin['name'];
    if (typeof name !== 'string' || name === '') continue;
    const hint = pin['readOnlyHint'];
    pinned.set(name, typeof hint === 'boolean' ? hint : null);
  }
  const names = [...new Set([...allowed, ...pinned.keys()])];
  return names.map((name) => {
    const entry = item.name;
    let refused = unwritable('mcp', entry, name);
    if (refused === null && !allowed.includes(name)) {
      refused = `not allowed by registry entry ${entry}: add it to its spec.mcp.tools, and to spec.mcp.readOnly if it only reads, to let agents call it`;
    } else if (refused === null && !readOnly.includes(name)) {
      refused = `not marked read-only in registry entry ${entry}: add it to its spec.mcp.readOnly (only if it only reads) to let agents call it`;
    } else if (refused === null && pinned.size > 0 && !pinned.has(name)) {
      refused = `the server ${entry} did not list this tool when it was probed, so it cannot be called: check the tool's name in spec.mcp.tools`;
    } else if (refused === null && pinned.size > 0 && pinned.get(name) !== true) {
      refused = `the server ${entry} does not mark this tool read-only (readOnlyHint), so agents cannot call it, whatever the entry says`;
    }
    return { reference: `mcp:${entry}.${name}`, source: 'mcp' as const, entry, name, modelName: modelToolName('mcp', entry, name), acting: false, refused };
  });
}

function a2aSkills(item: RegistryItem, a2a: Readonly<Record<string, unknown>>, capabilities: Capabilities | null): PickableTool[] {
  const allowed = strings(a2a['skills']);
  const card = strings(item.status['skills']);
  const effect = a2a['effect'] ?? 'ReadOnly';
  const acting = effect === 'Acting';
  const names = [...new Set([...allowed, ...card])];
  return names.map((name) => {
    const entry = item.name;
    let refused = unwritable('a2a', entry, name);
    if (refused === null && !allowed.includes(name)) {
      refused = `not allowed by registry entry ${entry}: add it to its spec.a2a.skills to let agents call it`;
    } else if (refused === null && effect !== 'ReadOnly' && !acting) {
      refused = `registry entry ${entry} has the effect ${JSON.stringify(effect)}, which is neither ReadOnly nor Acting: fix its spec.a2a.effect`;
    } else if (refused === null && acting && capabilities !== null && !capabilities.actingRemotes) {
      refused = `remote agent ${entry} acts (effect: Acting), and this deployment does not allow acting remotes: use a read-only agent, or ask the platform team to allow acting remotes`;
    }
    return { reference: `a2a:${entry}.${name}`, source: 'a2a' as const, entry, name, modelName: modelToolName('a2a', entry, name), acting: acting && allowed.includes(name), refused };
  });
}

/**
 * The registry's tools and skills as a node may pick them (12.17): MCP and A2A entries in the
 * registry's order, each with its state and its tools in the entry's order (allowed first, then
 * what the server or card offers besides). `capabilities` null: the schema has not answered, so
 * acting remotes are not refused here (12.10: the server's refusal decides).
 */
export function toolChoices(items: readonly RegistryItem[], capabilities: Capabilities | null): PickerEntry[] {
  const out: PickerEntry[] = [];
  for (const item of items) {
    const mcp = isRecord(item.spec['mcp']) ? item.spec['mcp'] : null;
    const a2a = isRecord(item.spec['a2a']) ? item.spec['a2a'] : null;
    const model = isRecord(item.spec['model']) ? item.spec['model'] : null;
    if (mcp === null && a2a === null) continue;
    const { state, note } = entryState(item);
    const source: ToolSource = mcp === null ? 'a2a' : 'mcp';
    // The server leaves out an entry that sets more than one kind (RegistryView::from_entries).
    const several = [mcp, a2a, model].filter((x) => x !== null).length > 1;
    const tools = mcp !== null ? mcpTools(item, mcp) : a2a === null ? [] : a2aSkills(item, a2a, capabilities);
    const refused = several ? `registry entry ${item.name} sets more than one of spec.mcp, spec.a2a and spec.model, so the server does not use it: keep one` : null;
    out.push({ name: item.name, source, state, stateNote: note, refused, tools: refused === null ? tools : tools.map((t) => ({ ...t, refused })) });
  }
  return out;
}

/**
 * The first skill a new "Remote agent" (12.12, 2.5) may call: an addable `a2a:` skill of a ready
 * entry before one of an entry a run would refuse or wait for now, read-only before acting within
 * each; else null.
 */
export function remoteAgentSkill(choices: readonly PickerEntry[]): PickableTool | null {
  const rank = (entry: PickerEntry, tool: PickableTool): number => (entry.state.state === 'ready' ? 0 : 2) + (tool.acting ? 1 : 0);
  const skills = choices.flatMap((e) => (e.source === 'a2a' ? e.tools.filter((t) => t.refused === null).map((t) => ({ rank: rank(e, t), tool: t })) : []));
  // A stable sort: within a rank, the registry's order.
  return skills.sort((a, b) => a.rank - b.rank)[0]?.tool ?? null;
}

/** One of a node's tools as the inspector lists it. */
export interface NodeTool {
  readonly reference: string;
  /** What the registry offers under this reference, or null. */
  readonly offered: PickableTool | null;
  /** Why the server would refuse it here, or null. */
  readonly flag: string | null;
}

/**
 * A node's tools against the registry (12.17): each one the registry no longer offers, or would
 * refuse, stays listed and flagged in the server's words; a second one reaching the model under
 * the same name is flagged as the server does.
 */
export function nodeTools(tools: readonly string[], choices: readonly PickerEntry[]): NodeTool[] {
  const offered = new Map<string, PickableTool>();
  for (const entry of choices) for (const tool of entry.tools) offered.set(tool.reference, tool);
  const entries = new Map(choices.map((e) => [e.name, e] as const));
  const seen = new Map<string, string>();
  return tools.map((reference) => {
    const found = offered.get(reference) ?? null;
    const parts = REFERENCE_RE.exec(reference);
    let flag: string | null;
    if (parts === null) {
      flag = `${reference} is not a tool reference: remove it, and pick a tool from the registry below`;
    } else if (found !== null) {
      flag = found.refused;
    } else {
      const [, source = '', entry = '', name = ''] = parts;
      const holder = entries.get(entry);
      const word = source === 'mcp' ? 'tool' : 'skill';
      if (holder === undefined) {
        const others = sorted(choices.filter((c) => c.source === source).map((c) => c.name));
        flag = `the registry has no entry ${entry} (${source === 'mcp' ? 'MCP servers' : 'remote agents'} in the registry: ${plainList(others)}): remove it, or register the entry`;
      } else if (holder.source !== source) {
        flag = `${entry} is ${holder.source === 'mcp' ? 'an MCP server' : 'a remote agent'}, not ${source === 'mcp' ? 'an MCP server' : 'a remote agent'}: write ${holder.source}:${entry}.<${holder.source === 'mcp' ? 'tool' : 'skill'}>`;
      } else {
        flag = `registry entry ${entry} no longer offers the ${word} ${name}: remove it, or pick another of its ${word}s`;
      }
    }
    if (parts !== null && flag === null) {
      const model = modelToolName(parts[1] === 'mcp' ? 'mcp' : 'a2a', parts[2] ?? '', parts[3] ?? '');
      const first = seen.get(model);
      if (first === reference) flag = `${reference} is listed twice: remove one`;
      else if (first !== undefined) flag = `${reference} and ${first} both reach the model as ${model} ('-' and '.' become '_'): keep one`;
      else seen.set(model, reference);
    }
    return { reference, offered: found, flag };
  });
}

/** Why `tool` cannot be added to a node holding `tools` (its own refusal, already there, or a model name taken), or null. */
export function addRefusal(tool: PickableTool, tools: readonly string[]): string | null {
  if (tool.refused !== null) return tool.refused;
  if (tools.includes(tool.reference)) return 'already on this node';
  const clash = tools.find((t) => {
    const parts = REFERENCE_RE.exec(t);
    return parts !== null && modelToolName(parts[1] === 'mcp' ? 'mcp' : 'a2a', parts[2] ?? '', parts[3] ?? '') === tool.modelName;
  });
  return clash === undefined ? null : `it reaches the model as ${tool.modelName}, as ${clash} on this node does: remove that one first`;
}
