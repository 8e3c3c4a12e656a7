/**
 * Role addresses (contract §4, RFC 2142 and the service's own return paths): in a hosted domain they belong
 * to the operator, who creates them with `mailroom admin create-mailbox`; a workspace cannot.
 */
export const RESERVED_LOCAL_PARTS = [
  'postmaster',
  'abuse',
  'hostmaster',
  'webmaster',
  'admin',
  'administrator',
  'root',
  'security',
  'mailer-daemon',
  'noreply',
  'no-reply',
  'bounces',
] as const;

/** Dots and hyphens only space a name out: `no.reply`, `no-reply` and `noreply` read as one address. */
const squeeze = (local: string) => local.replace(/[.-]/g, '');
const RESERVED = new Set(RESERVED_LOCAL_PARTS.map(squeeze));

/**
 * Whether a local part is reserved: compared case-insensitively, with a `+tag` cut off (`bounces+…`, and
 * `postmaster+x` would reach a postmaster wherever subaddresses are delivered), dots and hyphens ignored.
 */
export function isReservedLocalPart(local: string): boolean {
  const plus = local.indexOf('+');
  return RESERVED.has(squeeze((plus < 0 ? local : local.slice(0, plus)).toLowerCase()));
}
