// The palette (rules 12.8–12.13): one entry a node kind the schema lists, in its order, plus
// "Remote agent" (an LLMAgent with one `a2a:` tool, 12.12, 2.5), the tool a skill of the
// registry the node may call (tool-picker.ts: read-only first, acting only where the deployment
// allows it); another can be picked in the inspector. A kind the server does not run is shown
// disabled with the server's reason (12.9); until the schema answers every kind is offered and
// the server's refusal decides (12.10).

import type { NodeKind } from '../canvas/document.ts';
import { NODE_KINDS } from '../canvas/document.ts';
import type { Capabilities } from './capabilities.ts';
import { remoteAgentSkill, type PickerEntry } from './tool-picker.ts';

/** What an entry adds: a node of a kind, or a remote agent calling `tool` (`a2a:<entry>.<skill>`). */
export type PaletteItem = { readonly add: 'kind'; readonly kind: string } | { readonly add: 'remote-agent'; readonly tool: string };

/** The skill a new remote agent calls, or why there is none. */
export type RemoteAgentOffer = { readonly tool: string; readonly acting: boolean } | { readonly refused: string };

/**
 * What "Remote agent" adds (12.12): the first skill of the registry a node may call, or why there
 * is none. `choices` null: the registry has not been read (`problem` says why, when it failed).
 */
export function remoteAgentOffer(choices: readonly PickerEntry[] | null, problem: string | null = null): RemoteAgentOffer {
  if (choices === null) return { refused: problem === null ? 'the registry is still being read' : `the registry could not be read (${problem})` };
  const skill = remoteAgentSkill(choices);
  if (skill !== null) return { tool: skill.reference, acting: skill.acting };
  const remotes = choices.filter((e) => e.source === 'a2a');
  if (remotes.length === 0) return { refused: "this namespace's registry has no remote agent you may read: ask the platform team to register one (a RegistryEntry with spec.a2a)" };
  const reasons = [...new Set(remotes.flatMap((e) => e.tools.map((t) => t.refused)).filter((r) => r !== null))];
  return { refused: `no remote agent in the registry can be called here${reasons.length === 0 ? ': none lists a skill in spec.a2a.skills' : `: ${reasons.join('; ')}`}` };
}

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
export function paletteEntries(capabilities: Capabilities | null, remote: RemoteAgentOffer): PaletteEntry[] {
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
  const tool = 'tool' in remote ? remote.tool : null;
  entries.splice(at < 0 ? entries.length : at + 1, 0, {
    item: { add: 'remote-agent', tool: tool ?? '' },
    label: 'Remote agent',
    hint: tool === null ? 'An LLM agent calling one remote A2A agent (an a2a: tool).' : `An LLM agent calling ${tool}${'acting' in remote && remote.acting ? ', which acts' : ''}; pick another in the inspector.`,
    icon: 'A2',
    disabled: agent !== undefined && !agent.supported ? (agent.note ?? 'this server does not run LLMAgent') : 'refused' in remote ? remote.refused : null,
  });
  return entries;
}

/** The drag data type a palette entry carries onto the canvas. */
export const PALETTE_MIME = 'application/x-orrery-palette';

export function itemToData(item: PaletteItem): string {
  return item.add === 'kind' ? `kind:${item.kind}` : `remote-agent:${item.tool}`;
}

export function itemFromData(data: string): PaletteItem | null {
  if (/^remote-agent:a2a:\S+$/.test(data)) return { add: 'remote-agent', tool: data.slice('remote-agent:'.length) };
  if (data.startsWith('kind:') && data.length > 5) return { add: 'kind', kind: data.slice(5) };
  return null;
}
