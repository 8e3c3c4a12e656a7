import { invalid } from '../../lib/errors.js';
import { normalizeEmail } from '../tenancy/validation.js';

/** A send has 1–50 recipients. */
export const MAX_RECIPIENTS = 50;

/** `to` as one address, a comma-separated list (spaces allowed) or an array → normalised, de-duplicated addresses. */
export function parseRecipients(value: string | readonly string[] | undefined, field: string, { required }: { required: boolean }): string[] {
  if (value === undefined) {
    if (required) throw invalid('invalid_request', `${field} is required`);
    return [];
  }
  const parts = typeof value === 'string' ? value.split(',') : value;
  const addresses = new Set<string>();
  for (const raw of parts) {
    const part = raw.trim();
    if (part.length === 0) continue;
    const address = normalizeEmail(angleAddress(part));
    if (!address) throw invalid('invalid_recipient', `${field}: '${clipForError(part)}' is not a valid email address`);
    addresses.add(address);
    // Past the limit the answer is known: the rest of an arbitrarily long list is not read.
    if (addresses.size > MAX_RECIPIENTS) throw invalid('too_many_recipients', `${field} has more than ${MAX_RECIPIENTS} addresses; at most ${MAX_RECIPIENTS}`);
  }
  if (required && addresses.size === 0) throw invalid('invalid_request', `${field} needs at least one address`);
  return [...addresses];
}

/** Characters of a refused recipient quoted back in an error. */
const ERROR_QUOTE_LENGTH = 100;
const clipForError = (part: string): string => (part.length > ERROR_QUOTE_LENGTH ? `${part.slice(0, ERROR_QUOTE_LENGTH)}…` : part);

/** `Name <a@b>` → `a@b` (the text in the last angle brackets, when the part ends with them); otherwise the part itself. */
function angleAddress(part: string): string {
  if (!part.endsWith('>')) return part;
  const open = part.lastIndexOf('<');
  const inner = open === -1 ? '' : part.slice(open + 1, -1);
  return inner.length > 0 && !inner.includes('>') && !inner.includes('\n') ? inner : part;
}

export const domainOf = (address: string): string => address.slice(address.lastIndexOf('@') + 1);

type RecipientField = string | readonly string[] | undefined;

/** A send's `to`, `cc` and `bcc` parsed (`parseRecipients`), with every recipient once in `all`; throws as it does. */
export function sendRecipients(input: { to: string | readonly string[]; cc?: RecipientField; bcc?: RecipientField }): { to: string[]; cc: string[]; all: string[] } {
  const to = parseRecipients(input.to, 'to', { required: true });
  const cc = parseRecipients(input.cc, 'cc', { required: false });
  const bcc = parseRecipients(input.bcc, 'bcc', { required: false });
  return { to, cc, all: [...new Set([...to, ...cc, ...bcc])] };
}
