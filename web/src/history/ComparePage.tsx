// Under construction in this change (issue 23): replaced by the page itself before it lands.
import type { RunKey } from '../app/route.ts';
import { PageHeading } from '../ui/PageHeading.tsx';

export function ComparePage({ a, b }: { readonly a: RunKey | null; readonly b: RunKey | null }) {
  return (
    <section className="flex flex-col gap-4">
      <PageHeading>Compare two runs</PageHeading>
      <p className="sr-only">
        {a?.name} {b?.name}
      </p>
    </section>
  );
}
