/** Limits and shapes of tenancy inputs. */
import { invalid } from '../../lib/errors.js';
import { ROLES, type Role } from './tenancy.table.js';

export const MAX_EMAIL_LENGTH = 254; // RFC 5321 section 4.5.3.1.3 path limit less the angle brackets
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
export const MAX_API_KEY_NAME_LENGTH = 100;

/** The rule every new password meets, wherever it is set. */
export function checkPassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH || password.length > MAX_PASSWORD_LENGTH) {
    throw invalid('invalid_password', `password must be ${MIN_PASSWORD_LENGTH}–${MAX_PASSWORD_LENGTH} characters`);
  }
}

/** The normalized address; 400 invalid_email when it is not one. */
export function checkEmail(email: string): string {
  const normalized = normalizeEmail(email);
  if (!normalized) throw invalid('invalid_email', `'${email}' is not a valid email address`);
  return normalized;
}

/** One of the three roles; 400 invalid_role otherwise. */
export function checkRole(input: string): Role {
  const role = ROLES.find((r) => r === input);
  if (!role) throw invalid('invalid_role', `role must be one of ${ROLES.join(', ')}`);
  return role;
}
