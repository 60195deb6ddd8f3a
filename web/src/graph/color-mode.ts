// The theme the page shows (`data-theme` on the root element, set by app/theme.ts), for React
// Flow's `colorMode`: the run graph and the canvas follow it as it changes.

import { useSyncExternalStore } from 'react';

function subscribeTheme(callback: () => void): () => void {
  const observer = new MutationObserver(callback);
  observer.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
  return () => {
    observer.disconnect();
  };
}

function documentTheme(): 'light' | 'dark' {
  return document.documentElement.dataset['theme'] === 'dark' ? 'dark' : 'light';
}

/** The page's theme, kept current. */
export function useColorMode(): 'light' | 'dark' {
  return useSyncExternalStore(subscribeTheme, documentTheme);
}
