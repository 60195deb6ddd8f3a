// The console's shared looks, as Tailwind class lists: one home for buttons, fields, cards and
// focus rings, so every page reads and behaves the same (a visible focus ring everywhere).

export const focusRing = 'focus-visible:outline-3 focus-visible:outline-offset-2 focus-visible:outline-sky-600 dark:focus-visible:outline-sky-400';

export const button = `inline-flex items-center gap-2 rounded-md border border-slate-400 bg-white px-3 py-1.5 font-medium text-slate-900 hover:bg-slate-100 disabled:cursor-not-allowed disabled:opacity-60 dark:border-slate-500 dark:bg-slate-900 dark:text-slate-100 dark:hover:bg-slate-800 ${focusRing}`;

export const primaryButton = `inline-flex items-center gap-2 rounded-md border border-sky-800 bg-sky-700 px-3 py-1.5 font-medium text-white hover:bg-sky-800 disabled:cursor-not-allowed disabled:opacity-60 dark:border-sky-300 dark:bg-sky-300 dark:text-slate-950 dark:hover:bg-sky-200 ${focusRing}`;

export const dangerButton = `inline-flex items-center gap-2 rounded-md border border-red-800 bg-white px-3 py-1.5 font-medium text-red-800 hover:bg-red-50 disabled:cursor-not-allowed disabled:opacity-60 dark:border-red-300 dark:bg-slate-900 dark:text-red-200 dark:hover:bg-red-950 ${focusRing}`;

export const input = `rounded-md border border-slate-500 bg-white px-3 py-1.5 text-slate-900 dark:border-slate-400 dark:bg-slate-900 dark:text-slate-100 ${focusRing}`;

export const card = 'rounded-lg border border-slate-300 bg-white p-4 shadow-sm dark:border-slate-700 dark:bg-slate-900';

export const muted = 'text-slate-600 dark:text-slate-400';

export const link = `text-sky-800 underline underline-offset-2 hover:text-sky-950 dark:text-sky-300 dark:hover:text-sky-100 ${focusRing}`;
