// Light, dark, or as the system says (the default). The choice is remembered; `dark:` classes
// follow `data-theme` on <html> (index.css), which this keeps in step with the choice and, for
// "system", with `prefers-color-scheme`.

import { useEffect, useState } from 'react';

export type ThemeChoice = 'system' | 'light' | 'dark';

const KEY = 'orrery.console.theme';

function stored(): ThemeChoice {
  try {
    const value = window.localStorage.getItem(KEY);
    return value === 'light' || value === 'dark' ? value : 'system';
  } catch {
    return 'system';
  }
}

function apply(choice: ThemeChoice): void {
  const dark = choice === 'dark' || (choice === 'system' && window.matchMedia('(prefers-color-scheme: dark)').matches);
  document.documentElement.dataset['theme'] = dark ? 'dark' : 'light';
}

/** Sets the theme before the first render, so the page never flashes the other one. */
export function applyStoredTheme(): void {
  apply(stored());
}

export function useTheme(): [ThemeChoice, (choice: ThemeChoice) => void] {
  const [choice, setChoice] = useState<ThemeChoice>(stored);
  useEffect(() => {
    apply(choice);
    const media = window.matchMedia('(prefers-color-scheme: dark)');
    const follow = () => {
      apply(choice);
    };
    media.addEventListener('change', follow);
    return () => {
      media.removeEventListener('change', follow);
    };
  }, [choice]);
  return [
    choice,
    (next) => {
      try {
        if (next === 'system') window.localStorage.removeItem(KEY);
        else window.localStorage.setItem(KEY, next);
      } catch {
        // not remembered
      }
      setChoice(next);
    },
  ];
}
