import type { Problem } from '../api/http.ts';
import { card } from '../ui/classes.ts';

/** The schema call was refused (404 or 403): the Studio is not available here (rule 12.4). */
export function StudioUnavailable({ problem }: { readonly problem: Problem }) {
  return (
    <section aria-labelledby="unavailable-title" className={`${card} flex max-w-2xl flex-col gap-3`}>
      <h1 id="unavailable-title" className="text-xl font-semibold">
        Studio not available
      </h1>
      <p>
        The sidecar refused to publish this deployment&apos;s schema to you ({problem.status}), so the console cannot offer anything here. {problem.message}
      </p>
      <p>Ask your cluster administrator for the studio-user Role in your namespace, or sign in with another identity.</p>
    </section>
  );
}
