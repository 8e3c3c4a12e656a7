/** Limits and shapes of tenancy inputs. */
export const MAX_EMAIL_LENGTH = 254; // RFC 5321 §4.5.3.1.3 path limit less the angle brackets
export const MIN_PASSWORD_LENGTH = 8;
export const MAX_PASSWORD_LENGTH = 1024;
export const MAX_WORKSPACE_NAME_LENGTH = 200;

// A pragmatic address check: one @, a dot-atom-ish local part, a domain of LDH labels.
const EMAIL = /^[a-z0-9!#$%&'*+/=?^_`{|}~.-]{1,64}@(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** Lower-case and trim an address; null when it is not a plausible email address. */
export function normalizeEmail(input: string): string | null {
  const email = input.trim().toLowerCase();
  if (email.length > MAX_EMAIL_LENGTH || !EMAIL.test(email)) return null;
  if (email.startsWith('.') || email.includes('..') || email.split('@')[0]!.endsWith('.')) return null;
  return email;
}
