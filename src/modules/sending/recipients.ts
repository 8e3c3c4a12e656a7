import { invalid } from '../../lib/errors.js';
import { normalizeEmail } from '../tenancy/validation.js';

/** Contract §4: a send has 1–50 recipients. */
export const MAX_RECIPIENTS = 50;

/** `to` as one address, a comma-separated list (spaces allowed) or an array → normalised, de-duplicated addresses. */
export function parseRecipients(value: string | readonly string[] | undefined, field: string, { required }: { required: boolean }): string[] {
  if (value === undefined) {
    if (required) throw invalid('invalid_request', `${field} is required`);
    return [];
  }
  const parts = (typeof value === 'string' ? value.split(',') : [...value]).map((p) => p.trim()).filter((p) => p.length > 0);
  const addresses: string[] = [];
  for (const part of parts) {
    const address = normalizeEmail(part.replace(/^.*<([^>]+)>\s*$/, '$1'));
    if (!address) throw invalid('invalid_recipient', `${field}: '${part}' is not a valid email address`);
    if (!addresses.includes(address)) addresses.push(address);
  }
  if (required && addresses.length === 0) throw invalid('invalid_request', `${field} needs at least one address`);
  if (addresses.length > MAX_RECIPIENTS) throw invalid('too_many_recipients', `${field} has ${addresses.length} addresses; at most ${MAX_RECIPIENTS}`);
  return addresses;
}

export const domainOf = (address: string): string => address.slice(address.lastIndexOf('@') + 1);
