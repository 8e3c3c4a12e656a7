/**
 * The audit log never holds a secret: no password, credential, hash, webhook secret or private key. Callers pass
 * only harmless details; this is the net under them. In test and development builds a secret is a bug and throws
 * (so the test that made it fails); in production it is replaced by `[redacted]` and the change goes on.
 */

/** Names of fields that only ever hold secrets. */
const SECRET_KEYS = new Set([
  'password',
  'current_password',
  'new_password',
  'password_hash',
  'secret',
  'secrets',
  'previous_secrets',
  'token',
  'token_hash',
  'api_key',
  'session_token',
  'verification_hash',
  'verification_token',
  'private_key',
  'dkim_private_key',
]);

/** Values shaped like a credential (mrk_/mrs_/mst_/whsec_), a password hash, a SHA-256 hex digest, a sealed value or a PEM key. */
const SECRET_VALUES = [/^(mrk|mrs|mst)_[\w-]{20,}/, /^whsec_/, /^scrypt\$/, /^[0-9a-f]{64}$/i, /^v1:[\w+/=-]{16,}/, /-----BEGIN [A-Z ]*PRIVATE KEY-----/];

export const REDACTED = '[redacted]';

export class AuditSecretError extends Error {
  constructor(where: string) {
    super(`an audit entry would hold a secret at ${where}; record its id or name instead`);
    this.name = 'AuditSecretError';
  }
}

export const looksSecret = (value: string): boolean => SECRET_VALUES.some((pattern) => pattern.test(value));

/** `details` without secrets: throws when `strict`, else replaces each with `[redacted]`. */
export function withoutSecrets(value: unknown, strict: boolean, where = 'details'): unknown {
  if (typeof value === 'string') {
    if (!looksSecret(value)) return value;
    if (strict) throw new AuditSecretError(where);
    return REDACTED;
  }
  if (Array.isArray(value)) return value.map((v, i) => withoutSecrets(v, strict, `${where}[${i}]`));
  if (value === null || typeof value !== 'object') return value;
  const clean: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    if (SECRET_KEYS.has(key.toLowerCase()) && v !== null && v !== undefined) {
      if (strict) throw new AuditSecretError(`${where}.${key}`);
      clean[key] = REDACTED;
    } else {
      clean[key] = withoutSecrets(v, strict, `${where}.${key}`);
    }
  }
  return clean;
}
