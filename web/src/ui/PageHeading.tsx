import { useEffect, useRef, type ReactNode } from 'react';
import { focusRing } from './classes.ts';

/** A page's one h1; it takes the focus when the page appears (a route change is announced). */
export function PageHeading({ children, id }: { readonly children: ReactNode; readonly id?: string }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    heading.current?.focus({ preventScroll: true });
  }, []);
  return (
    <h1 ref={heading} id={id} tabIndex={-1} className={`text-2xl font-semibold tracking-tight ${focusRing}`}>
      {children}
    </h1>
  );
}
