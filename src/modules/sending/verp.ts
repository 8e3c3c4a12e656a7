import type { SecretBox } from '../../lib/secret-box.js';

/**
 * VERP (variable envelope return path): every outbound message has its own return address,
 * `bounces+<message id>-<tag>@<bounce domain>`, where the tag is a truncated HMAC-SHA256 of the message id
 * under a subkey of MAILROOM_SECRET_KEY (contract §5; as BATV and SRS sign theirs). Only this service can
 * make a return address that verifies, so a bounce or complaint cannot be forged for a message whose id
 * is known (ids appear in API answers and headers).
 */

/** 12 hex digits = 48 bits: a blind guess is right once in 2^48, and every wrong one is a 550 at RCPT. */
export const RETURN_PATH_TAG_HEX_CHARS = 12;
const LOCAL_PREFIX = 'bounces';

export type ReturnPathVerdict =
  /** Not a return address of this service: an ordinary recipient. */
  | { kind: 'other' }
  /** Looks like one (`bounces+…` at the bounce domain) but is malformed or its tag does not verify. */
  | { kind: 'forged' }
  | { kind: 'valid'; messageId: string };

export interface ReturnPaths {
  readonly domain: string;
  /** The return path of an outbound message. */
  address(messageId: string): string;
  /** What a RCPT address is, compared case-insensitively (some MTAs change the case of local parts). */
  parse(address: string): ReturnPathVerdict;
}

const RETURN_PATH = new RegExp(`^bounces\\+(msg_[0-9a-z]{26})-([0-9a-f]{${RETURN_PATH_TAG_HEX_CHARS}})$`);

export function createReturnPaths(box: Pick<SecretBox, 'tag' | 'verifyTag'>, bounceDomain: string): ReturnPaths {
  const domain = bounceDomain.toLowerCase();
  return {
    domain,
    address: (messageId) => `${LOCAL_PREFIX}+${messageId}-${box.tag(messageId, RETURN_PATH_TAG_HEX_CHARS)}@${domain}`,
    parse(address) {
      const lower = address.toLowerCase();
      const at = lower.lastIndexOf('@');
      if (at < 0 || lower.slice(at + 1) !== domain) return { kind: 'other' };
      const local = lower.slice(0, at);
      // A bare `bounces@` is a mailbox the operator may create (reserved, contract §4); `bounces+…` is ours.
      if (!local.startsWith(`${LOCAL_PREFIX}+`)) return { kind: 'other' };
      const match = RETURN_PATH.exec(local);
      if (!match || !box.verifyTag(match[1]!, match[2]!, RETURN_PATH_TAG_HEX_CHARS)) return { kind: 'forged' };
      return { kind: 'valid', messageId: match[1]! };
    },
  };
}
