// Under construction in this change (issue 23): replaced by the page itself before it lands.
import type { Waiting } from '../approvals/waiting.ts';
import { PageHeading } from '../ui/PageHeading.tsx';

export function RunsPage({ namespace, query, waiting }: { readonly namespace: string; readonly query: URLSearchParams; readonly waiting: Waiting }) {
  return (
    <section className="flex flex-col gap-4">
      <PageHeading>Runs in {namespace}</PageHeading>
      <p className="sr-only">
        {query.toString()} {waiting.count}
      </p>
    </section>
  );
}
