// A modal dialog (rule 12.30): the native <dialog> opened with showModal(), so the page behind
// it is inert and the focus stays inside; Escape closes it, and the browser gives the focus back
// to what opened it. The heading names it.

import { useEffect, useId, useLayoutEffect, useRef, type ReactNode } from 'react';
import { button } from './classes.ts';

interface Props {
  readonly open: boolean;
  readonly title: string;
  readonly onClose: () => void;
  readonly children: ReactNode;
}

export function Dialog({ open, title, onClose, children }: Props) {
  const dialog = useRef<HTMLDialogElement>(null);
  const heading = useId();
  // The browser fires `close` a moment after the dialog closed (Escape, or close() below): by
  // then the page may have opened another dialog in its place, which a late onClose would shut.
  // So a close counts only while this dialog is still meant to be open.
  // (Kept in a layout effect: it runs as the change commits, before the browser's next task.)
  const meant = useRef(open);
  useLayoutEffect(() => {
    meant.current = open;
  }, [open]);
  useEffect(() => {
    const element = dialog.current;
    if (element === null) return;
    if (open && !element.open) element.showModal();
    if (!open && element.open) element.close();
  }, [open]);
  const closed = () => {
    if (meant.current) onClose();
  };
  return (
    <dialog
      ref={dialog}
      aria-labelledby={heading}
      className="m-auto max-h-[85vh] w-[min(56rem,92vw)] rounded-lg border border-slate-300 bg-white p-0 text-slate-900 shadow-xl backdrop:bg-slate-900/50 dark:border-slate-700 dark:bg-slate-900 dark:text-slate-100"
      onClose={closed}
    >
      <div className="flex flex-col gap-3 p-4">
        <div className="flex items-center justify-between gap-4">
          <h2 id={heading} className="text-xl font-semibold">
            {title}
          </h2>
          <button type="button" className={button} onClick={onClose}>
            Close
          </button>
        </div>
        {open ? children : null}
      </div>
    </dialog>
  );
}
