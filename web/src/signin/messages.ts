// What the sign-in form says about a refused token (docs/sidecar-api.md: 401 is "no bearer
// token, or one the cluster does not accept"; the sidecar's message says why).
import type { Problem } from '../api/http.ts';

/** The token as pasted, without surrounding space or a leading `Bearer `. */
export function cleanToken(pasted: string): string {
  return pasted.trim().replace(/^Bearer\s+/i, '').trim();
}

/** The sentence shown when signing in failed. */
export function signInFailure(problem: Problem): string {
  switch (problem.status) {
    case 401:
      return `This token was refused (401): ${problem.message}`;
    case 403:
      return `This identity was refused (403): ${problem.message}`;
    case 0:
      return `No answer: ${problem.message}. Is the sidecar running, and is this page served by it?`;
    default:
      return problem.retryAfterSeconds === null
        ? `Signing in failed (${problem.status}): ${problem.message}`
        : `Signing in failed (${problem.status}): ${problem.message} Try again in ${problem.retryAfterSeconds} s.`;
  }
}
