import { describe, expect, it } from 'vitest';
import { createSecretBox, isSealed, parseSecretKey, SecretBoxError } from './secret-box.js';

const box = createSecretBox(Buffer.alloc(32, 1));
const other = createSecretBox(Buffer.alloc(32, 2));

describe('secret box', () => {
  it('seals to a self-describing v1 value that opens only with its key and context', () => {
    const sealed = box.seal('-----BEGIN PRIVATE KEY-----', 'webhooks.secret:whk_1');
    expect(sealed).toMatch(/^v1:[A-Za-z0-9+/]{16}:[A-Za-z0-9+/]{22}==:[A-Za-z0-9+/=]+$/);
    expect(isSealed(sealed)).toBe(true);
    expect(isSealed('whsec_abc')).toBe(false);
    expect(box.seal('same', 'c')).not.toBe(box.seal('same', 'c'));
    expect(box.open(sealed, 'webhooks.secret:whk_1')).toBe('-----BEGIN PRIVATE KEY-----');
    expect(() => box.open(sealed, 'webhooks.secret:whk_2')).toThrow(SecretBoxError);
    expect(() => other.open(sealed, 'webhooks.secret:whk_1')).toThrow(SecretBoxError);
    expect(() => box.open('whsec_plain', 'c')).toThrow(/not sealed/);
    const [v, iv, tag, data] = sealed.split(':');
    const flipped = Buffer.from(data!, 'base64');
    flipped[0] = flipped[0]! ^ 1;
    expect(() => box.open([v, iv, tag, flipped.toString('base64')].join(':'), 'webhooks.secret:whk_1')).toThrow(SecretBoxError);
  });

  it('tags with a key of its own: truncated HMAC, checked in constant time, case-insensitively', () => {
    const tag = box.tag('msg_1', 12);
    expect(tag).toMatch(/^[0-9a-f]{12}$/);
    expect(box.verifyTag('msg_1', tag, 12)).toBe(true);
    expect(box.verifyTag('msg_1', tag.toUpperCase(), 12)).toBe(true);
    expect(box.verifyTag('msg_2', tag, 12)).toBe(false);
    expect(other.verifyTag('msg_1', tag, 12)).toBe(false);
    // A shortened tag is no tag, however well its digits match.
    expect(box.verifyTag('msg_1', tag.slice(0, 1), 12)).toBe(false);
    expect(box.verifyTag('msg_1', '', 12)).toBe(false);
  });

  it('reads a key as 64 hex digits or base64 of 32 bytes', () => {
    expect(parseSecretKey('01'.repeat(32))).toEqual(Buffer.alloc(32, 1));
    expect(parseSecretKey(Buffer.alloc(32, 1).toString('base64'))).toEqual(Buffer.alloc(32, 1));
    expect(parseSecretKey(`${Buffer.alloc(32, 1).toString('base64url')}\n`)).toEqual(Buffer.alloc(32, 1));
    expect(() => parseSecretKey('01'.repeat(16))).toThrow(/32 bytes/);
    expect(() => parseSecretKey('')).toThrow(/32 bytes/);
  });
});
