import { describe, expect, it } from 'vitest';
import { approvalDigest, approvalDigestInput, checkApprovalDigest, digestSupport, type Digester } from './digest.ts';

// Node's global Web Crypto: the same `SubtleCrypto` a browser gives a page in a secure context.
const subtle: Digester = crypto.subtle;

// From web/scripts/approval_digest_vectors.py. "rust": the digest the Rust implementation
// (`orrery_crds::relay::approval_digest`, through `orrery run`'s approval.requested event)
// produced; "hashlib": the same byte layout recomputed in Python, checked against the former.
const VECTORS: readonly (readonly [from: string, runUid: string, approvalId: string, text: string, digest: string])[] = [
  ['rust', '77997b07-2712-4ac0-ad7b-e885d7b83d03', 'approval-1', 'Café \u202e\u001b[31mred\u001b[0m 日本 🚀\nline2', '12fed14a1725ea311390d8e5e4ddd2d0797c7996401b99d60ede470e40698e3a'],
  ['rust', 'ea4546b7-5027-4612-9c7c-d7a3c78e474f', 'approval-1', '', 'a7141bbfb9bb8aa04014bb5d3f7adcda31d05a03c9ba273fe6f19d5cc9245243'],
  ['rust', '153366fd-9ba0-45fd-8268-cc8bed766b02', 'approval-1', 'ship it', 'a49940dd0ef5b33fd9838371789aa73e766e01cf6d726f5e88004befb3fdc0b7'],
  ['rust', '4374fcfa-c55d-439b-abf5-691fc8194a33', 'approval-1', 'tab\there\r\nzero\u200bwidth \u202eevil\u202c end\n', '05ad70fdb29bf37e1b018d2fd5ff5ba9424541bb1d903b14e1c0cb39c8023cf2'],
  ['hashlib', 'uid-1', 'approval-1', 'ship it', '68dcddee72fd8011674f7886b6e270971abd9f672790ee1ae2634b16fb56fae5'],
  ['hashlib', 'uid-1a', 'pproval-1', 'ship it', '2bac05c50f8837d7f9ba9d2583579a1e4518c87fe19706375aaebf9d0962a909'],
  ['hashlib', 'uid-1', 'approval-1', '\u001b[31m', 'ee94ef125910b5d60b0e710736791f77b99513dff0c9197f21f43a8f7dde04cd'],
  ['hashlib', 'uid-1', 'approval-1', '\u202e', '12ab1a33f7c0031c94c5806bc77ff700dd27de3540089730eef51d5fa27fa2ca'],
  ['hashlib', 'uid-1', 'approval-1', 'nul\u0000byte', '4dadb5e96e5f4708daa67eb4651e7e5c72cf176f43a049b3e56fc611572e3685'],
  ['hashlib', 'résumé-run', 'approval-é', '🚀', '42cd90fd083f42385cf3a4e78f237cb56689b7695611e0799800aa1bd7905187'],
  ['hashlib', 'uid-1', 'approval-1', 'ab'.repeat(150), 'bad88c4cc8c6c8497b4534b839ae4833e912e093cf582bd7108c7862c54a84bb'],
  ['hashlib', 'uid-1', 'approval-1', 'é'.repeat(40000), '873571cb500b486b465276dc228738e6d07898bef54bd63f80a1a0e72d5431db'],
];

describe('the approval digest computed in the page', () => {
  it.each(VECTORS)('matches the %s vector for run %s, %s', async (_from, runUid, approvalId, text, digest) => {
    expect(await approvalDigest(subtle, runUid, approvalId, text)).toBe(digest);
  });

  it('hashes the domain line, then each field as a big-endian u64 byte length and its UTF-8 bytes', () => {
    const bytes = approvalDigestInput('r', 'é', '🚀');
    const expected = [
      ...new TextEncoder().encode('orrery-approval-v1\n'),
      0, 0, 0, 0, 0, 0, 0, 1, 0x72,
      0, 0, 0, 0, 0, 0, 0, 2, 0xc3, 0xa9,
      0, 0, 0, 0, 0, 0, 0, 4, 0xf0, 0x9f, 0x9a, 0x80,
    ];
    expect(Array.from(bytes)).toEqual(expected);
    // a length past 255 takes two bytes, most significant first
    const long = approvalDigestInput('', '', 'x'.repeat(300));
    expect(Array.from(long.subarray(19 + 16, 19 + 24))).toEqual([0, 0, 0, 0, 0, 0, 1, 0x2c]);
  });

  it('binds each field: moving a byte across a boundary changes the digest', async () => {
    const a = await approvalDigest(subtle, 'uid-1', 'approval-1', 'ship it');
    const b = await approvalDigest(subtle, 'uid-1a', 'pproval-1', 'ship it');
    expect(a).not.toBe(b);
  });
});

describe('whether the page can check digests', () => {
  it('can in a secure context with Web Crypto', () => {
    const support = digestSupport({ isSecureContext: true, crypto: { subtle } });
    expect(support.ok).toBe(true);
  });

  it('cannot outside a secure context, and says the server digest stands unchecked', () => {
    // Browsers give no crypto.subtle to a page over plain HTTP (other than localhost).
    const support = digestSupport({ isSecureContext: false, crypto: { subtle: undefined } });
    expect(support.ok).toBe(false);
    if (!support.ok) expect(support.reason).toMatch(/not in a secure context.*unchecked/);
    expect(digestSupport({}).ok).toBe(false);
  });

  it('cannot without Web Crypto even in a secure context', () => {
    const support = digestSupport({ isSecureContext: true, crypto: undefined });
    expect(support.ok).toBe(false);
    if (!support.ok) expect(support.reason).toMatch(/no Web Crypto/);
  });

  it('checks the server digest against its own, ignoring letter case, and names a mismatch', async () => {
    const support = digestSupport({ isSecureContext: true, crypto: { subtle } });
    const [, runUid, approvalId, text, digest] = VECTORS[0] ?? ['', '', '', '', ''];
    expect(await checkApprovalDigest(support, runUid, approvalId, text, digest.toUpperCase())).toEqual({ state: 'match', digest });
    const escapedShown = 'Café \\u{202e}\\u{1b}[31mred\\u{1b}[0m 日本 🚀\nline2';
    const mismatch = await checkApprovalDigest(support, runUid, approvalId, escapedShown, digest);
    expect(mismatch.state).toBe('mismatch');
    const unchecked = await checkApprovalDigest(digestSupport({ isSecureContext: false }), runUid, approvalId, text, digest);
    expect(unchecked.state).toBe('unchecked');
  });
});
