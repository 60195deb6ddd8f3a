// The approval digest, computed in the page (rule 12.36 of docs/behaviour.md, once the card uses
// it): exactly `orrery_crds::relay::approval_digest` (crds/src/relay.rs), lowercase hex SHA-256
// over the bytes `orrery-approval-v1\n`, then for each of the run's UID, the approval's id and
// the exact text its UTF-8 length as a big-endian unsigned 64-bit integer followed by its UTF-8
// bytes. The text hashed is the approvals list's `exactText`, never the escaped `text` shown.

const DOMAIN = 'orrery-approval-v1\n';

/** The bytes the digest is taken over (exported so tests can check the layout itself). */
export function approvalDigestInput(runUid: string, approvalId: string, text: string): Uint8Array<ArrayBuffer> {
  const encoder = new TextEncoder();
  const parts = [runUid, approvalId, text].map((p) => encoder.encode(p));
  const domain = encoder.encode(DOMAIN);
  const total = domain.length + parts.reduce((n, p) => n + 8 + p.length, 0);
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  out.set(domain, 0);
  let at = domain.length;
  for (const part of parts) {
    view.setBigUint64(at, BigInt(part.length), false);
    at += 8;
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** The part of Web Crypto the digest needs. */
export interface Digester {
  digest(algorithm: 'SHA-256', data: Uint8Array<ArrayBuffer>): Promise<ArrayBuffer>;
}

function hex(buffer: ArrayBuffer): string {
  return Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** The digest, with `subtle` (Web Crypto's `crypto.subtle`, only there in a secure context). */
export async function approvalDigest(subtle: Digester, runUid: string, approvalId: string, text: string): Promise<string> {
  return hex(await subtle.digest('SHA-256', approvalDigestInput(runUid, approvalId, text)));
}

/** What a page needs to look at to know whether it can compute digests. */
export interface CryptoContext {
  readonly isSecureContext?: boolean;
  readonly crypto?: { readonly subtle?: Digester | undefined } | undefined;
}

/** Whether this page can compute digests itself, and why not when it cannot. */
export type DigestSupport = { readonly ok: true; readonly subtle: Digester } | { readonly ok: false; readonly reason: string };

/**
 * Web Crypto's `crypto.subtle` exists only in a secure context (HTTPS, or http://localhost and
 * 127.0.0.1). Elsewhere the page cannot check a digest, and the approval card says that the
 * server's digest stands unchecked.
 */
export function digestSupport(context: CryptoContext = globalThis): DigestSupport {
  if (context.isSecureContext !== true) {
    return {
      ok: false,
      reason:
        'This page is not in a secure context (it is served over plain HTTP from an address other than localhost), so the browser offers no Web Crypto: the digest cannot be checked here, and the server\'s digest stands unchecked.',
    };
  }
  const subtle = context.crypto?.subtle;
  if (subtle === undefined || typeof subtle.digest !== 'function') {
    return {
      ok: false,
      reason: 'This browser offers no Web Crypto digest, so the digest cannot be checked here, and the server\'s digest stands unchecked.',
    };
  }
  return { ok: true, subtle };
}

/** The outcome of checking the server's digest of an approval against the page's own. */
export type DigestCheck =
  | { readonly state: 'match'; readonly digest: string }
  | { readonly state: 'mismatch'; readonly computed: string; readonly server: string }
  | { readonly state: 'unchecked'; readonly reason: string };

/** Computes the digest of `exactText` here and compares it with the server's. */
export async function checkApprovalDigest(
  support: DigestSupport,
  runUid: string,
  approvalId: string,
  exactText: string,
  serverDigest: string,
): Promise<DigestCheck> {
  if (!support.ok) return { state: 'unchecked', reason: support.reason };
  const computed = await approvalDigest(support.subtle, runUid, approvalId, exactText);
  // The runner compares digests ignoring ASCII case; the page does too.
  return computed === serverDigest.toLowerCase()
    ? { state: 'match', digest: computed }
    : { state: 'mismatch', computed, server: serverDigest };
}
