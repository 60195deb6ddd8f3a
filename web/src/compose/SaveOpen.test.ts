import { describe, expect, it } from 'vitest';
import { compositionNameProblem } from './SaveOpen.tsx';

describe('a new Composition’s name', () => {
  it.each(['notes', 'release-notes.v2', 'a'])('takes %j', (name) => {
    expect(compositionNameProblem(name)).toBeNull();
  });

  it.each([
    ['', 'Type a name.'],
    ['Notes', '"Notes" is not a name Kubernetes takes: lowercase letters, digits, "-" and ".", starting and ending with a letter or digit.'],
    ['-notes', '"-notes" is not a name Kubernetes takes: lowercase letters, digits, "-" and ".", starting and ending with a letter or digit.'],
    ['a'.repeat(254), 'A name has at most 253 characters.'],
  ])('refuses %j, saying why', (name, why) => {
    expect(compositionNameProblem(name)).toBe(why);
  });
});
