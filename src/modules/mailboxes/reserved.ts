/**
 * Role addresses (RFC 2142, the usual no-reply names and the service's own return paths): in a hosted domain they belong
 * to the operator, who creates them with `mailroom admin create-mailbox`; a workspace cannot.
 */
export const RESERVED_LOCAL_PARTS = [
  // RFC 2142 sections 3–5: business, network operations and service mailboxes.
  'info',
  'marketing',
  'sales',
  'support',
  'abuse',
  'noc',
  'security',
  'postmaster',
  'hostmaster',
  'usenet',
  'news',
  'webmaster',
  'www',
  'uucp',
  'ftp',
  // Common administrative and automatic senders, and this service's return paths.
  'admin',
  'administrator',
  'root',
  'mailer-daemon',
  'noreply',
  'no-reply',
  'bounces',
  'unsubscribe',
] as const;

/** Dots, hyphens and underscores only space a name out: `no.reply`, `no_reply` and `noreply` read as one address. */
const squeeze = (local: string) => local.replace(/[._-]/g, '');
const RESERVED = new Set(RESERVED_LOCAL_PARTS.map(squeeze));
/** Subaddress separators: `+` (Postfix, Gmail) and `=` (some MTAs' recipient delimiter, and SRS/BATV tags). */
const TAG_SEPARATOR = /[+=]/;

/**
 * Whether a local part is reserved: compared case-insensitively, with a `+tag` or `=tag` cut off (`bounces+…`,
 * and `postmaster+x` would reach a postmaster wherever subaddresses are delivered), dots, hyphens and
 * underscores ignored.
 */
export function isReservedLocalPart(local: string): boolean {
  const base = local.split(TAG_SEPARATOR, 1)[0]!;
  return RESERVED.has(squeeze(base.toLowerCase()));
}
