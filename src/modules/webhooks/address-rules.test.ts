import { describe, expect, it } from 'vitest';
import { parseWebhookUrl, WebhookUrlRefused } from './address-rules.js';

describe('parseWebhookUrl', () => {
  it.each([
    ['https://hooks.example/x', 'https://hooks.example/x'],
    ['HTTP://Hooks.Example:80/a b', 'http://hooks.example/a%20b'],
    ['http://2130706433/', 'http://127.0.0.1/'],
    ['http://0x7f.1/', 'http://127.0.0.1/'],
    ['http://[::FFFF:127.0.0.1]/', 'http://[::ffff:7f00:1]/'],
  ])('%s parses as %s', (raw, href) => {
    expect(parseWebhookUrl(raw).href).toBe(href);
  });

  it.each([
    ['ftp://a.example/', 'the scheme must be http or https, not ftp'],
    ['http://u:p@a.example/', 'the URL must not carry credentials (user:password@)'],
    ['http://u@a.example/', 'the URL must not carry credentials (user:password@)'],
    ['a.example/hook', "'a.example/hook' is not an absolute URL"],
    [`https://a.example/${'x'.repeat(2048)}`, 'the URL is longer than 2048 characters'],
  ])('%s is refused: %s', (raw, message) => {
    expect(() => parseWebhookUrl(raw)).toThrow(new WebhookUrlRefused(message));
  });
});
