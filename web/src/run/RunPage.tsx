// Under construction in this change (issue 23): replaced by the page itself before it lands.
import type { Waiting } from '../approvals/waiting.ts';
import { PageHeading } from '../ui/PageHeading.tsx';

export function RunPage({ namespace, name, waiting }: { readonly namespace: string; readonly name: string; readonly waiting: Waiting }) {
  return (
    <section className="flex flex-col gap-4">
      <PageHeading>
        Run {namespace}/{name}
      </PageHeading>
      <p className="sr-only">{waiting.count}</p>
    </section>
  );
}
