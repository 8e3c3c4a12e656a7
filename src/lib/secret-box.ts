import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Secrets at rest (DKIM private keys, webhook secrets): AES-256-GCM under a subkey of MAILROOM_SECRET_KEY.
 * The stored form describes itself, `v1:<iv>:<tag>:<ciphertext>` (base64 each), so a plaintext value from
 * before encryption is recognisable. Each value is bound to its place (`context`, e.g. table and row id) as
 * associated data, so a ciphertext copied into another row does not open there.
 */

/** The key is 32 random bytes (256 bits). */
export const SECRET_KEY_BYTES = 32;
/** GCM's recommended nonce length (NIST SP 800-38D section 8.2). */
const IV_BYTES = 12;
const TAG_BYTES = 16;
const VERSION = 'v1';
/** What every sealed value starts with (for queries finding values still in plaintext). */
export const SEALED_PREFIX = `${VERSION}:`;

export class SecretBoxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretBoxError';
  }
}

/** The 32-byte key from its text: 64 hex digits, or base64 / base64url of 32 bytes. Throws on anything else. */
export function parseSecretKey(text: string): Buffer {
  const trimmed = text.trim();
  if (/^[0-9a-f]{64}$/i.test(trimmed)) return Buffer.from(trimmed, 'hex');
  if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed)) {
    const bytes = Buffer.from(trimmed, 'base64');
    if (bytes.length === SECRET_KEY_BYTES) return bytes;
  }
  throw new SecretBoxError(`must be ${SECRET_KEY_BYTES} bytes given as 64 hex digits or base64`);
}

/** A new random key, base64 (what a generated key file holds). */
export function newSecretKey(): string {
  return randomBytes(SECRET_KEY_BYTES).toString('base64');
}

/** A subkey for one purpose (HKDF-SHA256, RFC 5869), so no two uses share key material. */
export function deriveKey(master: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), `mailroom ${purpose}`, SECRET_KEY_BYTES));
}

/** Whether a stored value is sealed (anything else is a plaintext value from before encryption). */
export function isSealed(stored: string): boolean {
  return stored.startsWith(SEALED_PREFIX);
}

export interface SecretBox {
  seal(plaintext: string, context: string): string;
  /** The plaintext; throws SecretBoxError when the value is not sealed, or not with this key and context. */
  open(stored: string, context: string): string;
  /** A truncated HMAC-SHA256 of `data` under this key's tag subkey, as lower-case hex of `hexChars` digits. */
  tag(data: string, hexChars: number): string;
  /** Whether `given` is `tag(data, hexChars)` (in either case), compared in constant time. */
  verifyTag(data: string, given: string, hexChars: number): boolean;
}

export function createSecretBox(master: Buffer): SecretBox {
  if (master.length !== SECRET_KEY_BYTES) throw new SecretBoxError(`the key must be ${SECRET_KEY_BYTES} bytes`);
  const encryptionKey = deriveKey(master, 'secrets at rest v1');
  const tagKey = deriveKey(master, 'return path tag v1');
  const tag = (data: string, hexChars: number) => createHmac('sha256', tagKey).update(data, 'utf8').digest('hex').slice(0, hexChars);

  return {
    seal(plaintext, context) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', encryptionKey, iv);
      cipher.setAAD(Buffer.from(context, 'utf8'));
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return [VERSION, iv.toString('base64'), cipher.getAuthTag().toString('base64'), ciphertext.toString('base64')].join(':');
    },

    open(stored, context) {
      const parts = stored.split(':');
      if (parts.length !== 4 || parts[0] !== VERSION) throw new SecretBoxError('the stored value is not sealed');
      const [, ivText, tagText, dataText] = parts as [string, string, string, string];
      const iv = Buffer.from(ivText, 'base64');
      const authTag = Buffer.from(tagText, 'base64');
      if (iv.length !== IV_BYTES || authTag.length !== TAG_BYTES) throw new SecretBoxError('the stored value is malformed');
      const decipher = createDecipheriv('aes-256-gcm', encryptionKey, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(authTag);
      try {
        return Buffer.concat([decipher.update(Buffer.from(dataText, 'base64')), decipher.final()]).toString('utf8');
      } catch {
        throw new SecretBoxError('the stored value does not open with this key (a different MAILROOM_SECRET_KEY, or a value moved from another row)');
      }
    },

    tag,

    verifyTag(data, given, hexChars) {
      const expected = Buffer.from(tag(data, hexChars), 'utf8');
      const actual = Buffer.from(given.toLowerCase(), 'utf8');
      return hexChars > 0 && expected.length === actual.length && timingSafeEqual(expected, actual);
    },
  };
}
