import type { SecretBox } from './secret-box.js';

/**
 * One-click unsubscribe (RFC 8058) tokens: `<message id>.<n>-<tag>`, where `n` is the recipient's place in the
 * message's recipient list (from 0, as the VERP return paths number them, verp.ts) and the tag is a truncated
 * HMAC-SHA256 under the same subkey of MAILROOM_SECRET_KEY, over a text no return path's tag covers
 * (`unsubscribe:<id>.<n>`), so a return path's tag never opens an unsubscribe and the other way round. The message
 * names its workspace; the place names the recipient: each recipient's copy carries a token only for itself.
 * The same token is the path of the HTTPS link and, as `unsubscribe+<token>@<bounce domain>`, the mailto address.
 */

/** 16 hex digits = 64 bits: the link is answered over HTTP without a login, so more than a return path's 48. */
export const UNSUBSCRIBE_TAG_HEX_CHARS = 16;
const LOCAL_PREFIX = 'unsubscribe';
/** Recipient places as in verp.ts: up to 4 digits without leading zeros. */
const TOKEN = new RegExp(`^(msg_[0-9a-z]{26})\\.(0|[1-9][0-9]{0,3})-([0-9a-f]{${UNSUBSCRIBE_TAG_HEX_CHARS}})$`);
/** The longest token (30 + 1 + 4 + 1 + 16 characters): anything longer is no token, judged without a regex run. */
export const MAX_TOKEN_LENGTH = 52;

export type UnsubscribeTarget = { messageId: string; recipient: number };

export type UnsubscribeAddressVerdict = { kind: 'other' } | { kind: 'forged' } | ({ kind: 'valid' } & UnsubscribeTarget);

export interface UnsubscribeTokens {
  /** The token of the recipient at place `recipient` of an outbound message. */
  token(messageId: string, recipient: number): string;
  /** The `List-Unsubscribe` and `List-Unsubscribe-Post` fields of that recipient's copy (RFC 2369, RFC 8058). */
  headerLines(messageId: string, recipient: number): string;
  /** What a token from a link names; null when it is malformed or its tag does not verify. */
  parse(token: string): UnsubscribeTarget | null;
  /** What a RCPT address is: ours (`unsubscribe+…@<bounce domain>`, valid or forged), or any other address. */
  parseAddress(address: string): UnsubscribeAddressVerdict;
}

/** `publicUrl`: the service's public base URL (MAILROOM_PUBLIC_URL); `domain`: the return paths' domain. */
export function createUnsubscribeTokens(box: Pick<SecretBox, 'tag' | 'verifyTag'>, publicUrl: string, bounceDomain: string): UnsubscribeTokens {
  const domain = bounceDomain.toLowerCase();
  let base = publicUrl;
  while (base.endsWith('/')) base = base.slice(0, -1);
  const tagged = (messageId: string, recipient: number | string) => `${LOCAL_PREFIX}:${messageId}.${recipient}`;
  const token = (messageId: string, recipient: number) => `${messageId}.${recipient}-${box.tag(tagged(messageId, recipient), UNSUBSCRIBE_TAG_HEX_CHARS)}`;
  const parse = (text: string): UnsubscribeTarget | null => {
    if (text.length > MAX_TOKEN_LENGTH) return null;
    const match = TOKEN.exec(text.toLowerCase());
    if (!match) return null;
    const [, messageId, place, tag] = match as unknown as [string, string, string, string];
    if (!box.verifyTag(tagged(messageId, place), tag, UNSUBSCRIBE_TAG_HEX_CHARS)) return null;
    return { messageId, recipient: Number(place) };
  };
  return {
    token,
    headerLines(messageId, recipient) {
      const t = token(messageId, recipient);
      // Both fields are short (under 150 characters) and ASCII: no folding needed (RFC 5322 section 2.1.1).
      return `List-Unsubscribe: <${base}/u/${t}>, <mailto:${LOCAL_PREFIX}+${t}@${domain}>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n`;
    },
    parse,
    parseAddress(address) {
      const lower = address.toLowerCase();
      const at = lower.lastIndexOf('@');
      if (at < 0 || lower.slice(at + 1) !== domain) return { kind: 'other' };
      const local = lower.slice(0, at);
      if (!local.startsWith(`${LOCAL_PREFIX}+`)) return { kind: 'other' };
      const target = parse(local.slice(LOCAL_PREFIX.length + 1));
      return target ? { kind: 'valid', ...target } : { kind: 'forged' };
    },
  };
}
