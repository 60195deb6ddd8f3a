// Under construction in this change (issue 23): replaced by the page itself before it lands.
import { PageHeading } from '../ui/PageHeading.tsx';
import type { Waiting } from './waiting.ts';

export function ApprovalsPage({ waiting }: { readonly waiting: Waiting }) {
  return (
    <section className="flex flex-col gap-4">
      <PageHeading>Approvals waiting for you</PageHeading>
      <p className="sr-only">{waiting.count}</p>
    </section>
  );
}
