// A placeholder (issue 23): the approval cards are built in their own change; this keeps the run
// panel's call to them compiling until then, and renders only the ids of what waits.
import type { ApprovalView } from '../run/model.ts';

export interface ApprovalCardsProps {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly pending: readonly ApprovalView[];
  readonly onDecided: () => void;
}

export function ApprovalCards({ pending }: ApprovalCardsProps) {
  return (
    <section aria-labelledby="approvals-heading">
      <h2 id="approvals-heading">Approvals</h2>
      <ul>
        {pending.map((a) => (
          <li key={a.requested.approvalId}>{a.requested.approvalId}</li>
        ))}
      </ul>
    </section>
  );
}
