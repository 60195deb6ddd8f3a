// Under construction in this change (issue 23): replaced by the page itself before it lands.
import { PageHeading } from '../ui/PageHeading.tsx';

export function HistoryPage() {
  return (
    <section className="flex flex-col gap-4">
      <PageHeading>History</PageHeading>
    </section>
  );
}
