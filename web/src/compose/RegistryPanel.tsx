// The registry tab of the inspector (rules 12.49–12.52): read-only, one disclosure per entry of
// the namespace (registry-view.ts). Nothing here changes an entry: pins are accepted, and entries
// probed again, with the kubectl commands shown, by someone whose Role may annotate the entry.

import type { RegistryItem } from '../api/registry.ts';
import { Entry } from '../registry/RegistryEntry.tsx';
import { muted } from '../ui/classes.ts';
import { entryView } from './registry-view.ts';

export function RegistryPanel({ items, namespace, problem }: { readonly items: readonly RegistryItem[]; readonly namespace: string; readonly problem: string | null }) {
  if (namespace === '') return <p className={`p-2 ${muted}`}>Choose a namespace (on the Runs page) to see its registry.</p>;
  return (
    <div className="flex flex-col gap-2">
      <h2 className="text-base font-semibold">Registry of {namespace}</h2>
      <p className={`text-sm ${muted}`}>Read-only: entries are edited as resources (kubectl, GitOps).</p>
      {problem === null ? null : (
        <p role="alert" className="text-red-800 dark:text-red-200">
          {problem}
        </p>
      )}
      {items.length === 0 && problem === null ? <p className={muted}>No RegistryEntries you may read here.</p> : null}
      {items.map((item) => (
        <Entry key={item.name} view={entryView(item, namespace)} heading={3} />
      ))}
    </div>
  );
}
