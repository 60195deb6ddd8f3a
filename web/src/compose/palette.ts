// The palette (rules 12.8–12.13): one entry a node kind the schema lists, in its order, plus
// "Remote agent" (an LLMAgent with one `a2a:` tool, 12.12). A kind the server does not run is
// shown disabled with the server's reason (12.9); until the schema answers every kind is offered
// and the server's refusal decides (12.10).

import type { NodeKind } from '../canvas/document.ts';
import { NODE_KINDS } from '../canvas/document.ts';
import type { Capabilities } from './capabilities.ts';

/** What an entry adds: a node of a kind, or a remote agent. */
export type PaletteItem = { readonly add: 'kind'; readonly kind: string } | { readonly add: 'remote-agent' };

export interface PaletteEntry {
  readonly item: PaletteItem;
  /** Its name on screen, in the icon rail's tooltip and for screen readers. */
  readonly label: string;
  /** One line on what it is. */
  readonly hint: string;
  /** The icon rail's letters. */
  readonly icon: string;
  /** Why it cannot be added (the server's words), or null. */
  readonly disabled: string | null;
}

const HINTS: Readonly<Record<NodeKind, { readonly hint: string; readonly icon: string }>> = {
  LLMAgent: { hint: 'A model with an instruction and tools.', icon: 'AI' },
  Router: { hint: 'Sends the run down one labelled edge.', icon: 'Ro' },
  Parallel: { hint: 'Runs its branches side by side.', icon: 'Pa' },
  Join: { hint: 'Waits for parallel branches and merges them.', icon: 'Jo' },
  Supervisor: { hint: 'Delegates to child agents.', icon: 'Su' },
  HumanApproval: { hint: 'Waits for a person to approve or reject.', icon: 'HA' },
  RemoteA2A: { hint: 'A remote agent as a node of its own.', icon: 'RA' },
  Handoff: { hint: 'Hands the conversation to another agent.', icon: 'Ho' },
};

const LABELS: Readonly<Record<NodeKind, string>> = {
  LLMAgent: 'LLM agent',
  Router: 'Router',
  Parallel: 'Parallel',
  Join: 'Join',
  Supervisor: 'Supervisor',
  HumanApproval: 'Human approval',
  RemoteA2A: 'Remote A2A node',
  Handoff: 'Handoff',
};

function isKnownKind(kind: string): kind is NodeKind {
  return (NODE_KINDS as readonly string[]).includes(kind);
}

/** The palette for `capabilities` (null: not known yet, nothing gated). */
export function paletteEntries(capabilities: Capabilities | null): PaletteEntry[] {
  const kinds = capabilities?.nodeKinds ?? NODE_KINDS.map((name) => ({ name, supported: true, note: null }));
  const entries: PaletteEntry[] = kinds.map((k) => {
    const known = isKnownKind(k.name) ? k.name : null;
    return {
      item: { add: 'kind', kind: k.name },
      label: known === null ? k.name : LABELS[known],
      hint: known === null ? `A ${k.name} node.` : HINTS[known].hint,
      icon: known === null ? k.name.slice(0, 2) : HINTS[known].icon,
      disabled: k.supported ? null : (k.note ?? 'this server does not run it'),
    };
  });
  const agent = kinds.find((k) => k.name === 'LLMAgent');
  const at = entries.findIndex((e) => e.item.add === 'kind' && e.item.kind === 'LLMAgent');
  entries.splice(at < 0 ? entries.length : at + 1, 0, {
    item: { add: 'remote-agent' },
    label: 'Remote agent',
    hint: 'An LLM agent calling one remote A2A agent (an a2a: tool).',
    icon: 'A2',
    disabled: agent === undefined || agent.supported ? null : (agent.note ?? 'this server does not run LLMAgent'),
  });
  return entries;
}

/** The drag data type a palette entry carries onto the canvas. */
export const PALETTE_MIME = 'application/x-orrery-palette';

export function itemToData(item: PaletteItem): string {
  return item.add === 'kind' ? `kind:${item.kind}` : 'remote-agent';
}

export function itemFromData(data: string): PaletteItem | null {
  if (data === 'remote-agent') return { add: 'remote-agent' };
  if (data.startsWith('kind:') && data.length > 5) return { add: 'kind', kind: data.slice(5) };
  return null;
}
