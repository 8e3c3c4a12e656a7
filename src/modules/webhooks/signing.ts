import { createHmac, randomBytes } from 'node:crypto';

/** Standard Webhooks: a secret is `whsec_` + base64; its decoded bytes are the HMAC-SHA256 key. */
export const SECRET_PREFIX = 'whsec_';
/** Key sizes Standard Webhooks recommends (24–64 bytes); the service generates 24 when the caller gives none. */
export const MIN_SECRET_BYTES = 24;
export const MAX_SECRET_BYTES = 64;
export const GENERATED_SECRET_BYTES = 24;

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Why a caller's secret is unusable, or null when it is a valid `whsec_` secret. */
export function secretProblem(secret: string): string | null {
  if (!secret.startsWith(SECRET_PREFIX)) return `the secret must start with ${SECRET_PREFIX}`;
  const encoded = secret.slice(SECRET_PREFIX.length);
  if (!BASE64.test(encoded)) return `the secret must be ${SECRET_PREFIX} followed by standard base64`;
  const bytes = Buffer.from(encoded, 'base64').length;
  if (bytes < MIN_SECRET_BYTES || bytes > MAX_SECRET_BYTES) return `the secret's key must be ${MIN_SECRET_BYTES}–${MAX_SECRET_BYTES} bytes once decoded (it is ${bytes})`;
  return null;
}

/** A new secret: `whsec_` + base64 of 24 random bytes. */
export function generateSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(GENERATED_SECRET_BYTES).toString('base64')}`;
}

/**
 * The `webhook-signature` header: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` for each secret,
 * space-separated (Standard Webhooks lets a receiver accept any of them, which is how a rotation
 * stays seamless). `body` is the exact bytes sent.
 */
export function signatureHeader(secrets: readonly string[], id: string, timestampSeconds: number, body: string): string {
  const content = `${id}.${timestampSeconds}.${body}`;
  return secrets
    .map((secret) => `v1,${createHmac('sha256', Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64')).update(content, 'utf8').digest('base64')}`)
    .join(' ');
}
