import type { SecretBox } from './secret-box.js';

/**
 * VERP (variable envelope return path): every recipient of an outbound message has its own return address,
 * `bounces+<message id>.<n>-<tag>@<bounce domain>`, where `n` is the recipient's place in the message's recipient list
 * (from 0) and the tag is a truncated HMAC-SHA256 of `<message id>.<n>` under a subkey of MAILROOM_SECRET_KEY (as BATV
 * and SRS sign theirs). Only this service can make a return address that verifies, so a bounce or complaint cannot be
 * forged for a message whose id is known (ids appear in API answers and headers), and one recipient, who sees their own
 * return path, cannot make a report that speaks for another recipient of the same message.
 *
 * A sending domain may have a return-path host of its own (`bounces.<domain>`, its MX at our listener): once its
 * records verify, its mail's return paths are the same addresses at that host, so that SPF aligns with the domain.
 * The tag does not cover the host: it names the message and recipient wherever the address is received.
 *
 * Messages sent before return paths named their recipient carry `bounces+<message id>-<tag>@…` (tag of the id alone):
 * those still verify, for the whole message, as long as the message was sent with that address (inbound.service.ts).
 */

/** 12 hex digits = 48 bits: a blind guess is right once in 2^48, and every wrong one is a 550 at RCPT. */
export const RETURN_PATH_TAG_HEX_CHARS = 12;
const LOCAL_PREFIX = 'bounces';

export type ReturnPathVerdict =
  /** Not a return address of this service: an ordinary recipient. */
  | { kind: 'other' }
  /** Looks like one (`bounces+…` at the bounce domain) but is malformed or its tag does not verify. */
  | { kind: 'forged' }
  /** `recipient`: the place of the recipient it was issued for; null for a whole-message return path of older mail. */
  | { kind: 'valid'; messageId: string; recipient: number | null };

export interface ReturnPaths {
  readonly domain: string;
  /**
   * The return path of the recipient at place `recipient` (from 0) of an outbound message's recipient list, at the
   * bounce domain or at `host` (a sending domain's verified return-path host).
   */
  address(messageId: string, recipient: number, host?: string): string;
  /**
   * What a RCPT address is, compared case-insensitively (some MTAs change the case of local parts). `host`: a further
   * domain it may be at, which the caller has found to be a verified return-path host (see `otherHost`).
   */
  parse(address: string, host?: string): ReturnPathVerdict;
  /** The domain of a `bounces+…` address at another domain than the bounce domain, or null: a host to look up. */
  otherHost(address: string): string | null;
}

/** Recipient places: up to 4 digits (a message has at most 50 recipients), without leading zeros. */
const RETURN_PATH = new RegExp(`^bounces\\+(msg_[0-9a-z]{26})(?:\\.(0|[1-9][0-9]{0,3}))?-([0-9a-f]{${RETURN_PATH_TAG_HEX_CHARS}})$`);

export function createReturnPaths(box: Pick<SecretBox, 'tag' | 'verifyTag'>, bounceDomain: string): ReturnPaths {
  const domain = bounceDomain.toLowerCase();
  return {
    domain,
    address(messageId, recipient, host = domain) {
      const tagged = `${messageId}.${recipient}`;
      return `${LOCAL_PREFIX}+${tagged}-${box.tag(tagged, RETURN_PATH_TAG_HEX_CHARS)}@${host}`;
    },
    otherHost(address) {
      const lower = address.toLowerCase();
      const at = lower.lastIndexOf('@');
      const host = lower.slice(at + 1);
      return at > 0 && host !== domain && host !== '' && lower.startsWith(`${LOCAL_PREFIX}+`) ? host : null;
    },
    parse(address, host) {
      const lower = address.toLowerCase();
      const at = lower.lastIndexOf('@');
      const where = lower.slice(at + 1);
      if (at < 0 || (where !== domain && where !== host?.toLowerCase())) return { kind: 'other' };
      const local = lower.slice(0, at);
      // A bare `bounces@` is a mailbox the operator may create (reserved, decision 209); `bounces+…` is ours.
      if (!local.startsWith(`${LOCAL_PREFIX}+`)) return { kind: 'other' };
      const match = RETURN_PATH.exec(local);
      if (!match) return { kind: 'forged' };
      const [, messageId, place, tag] = match as unknown as [string, string, string | undefined, string];
      // The tag covers the recipient's place when there is one: `<id>.<n>` can never be the tag of `<id>` alone.
      const tagged = place === undefined ? messageId : `${messageId}.${place}`;
      if (!box.verifyTag(tagged, tag, RETURN_PATH_TAG_HEX_CHARS)) return { kind: 'forged' };
      return { kind: 'valid', messageId, recipient: place === undefined ? null : Number(place) };
    },
  };
}
