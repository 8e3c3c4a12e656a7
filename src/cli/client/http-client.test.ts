import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createApiClient, dispositionFilename, normaliseServer } from './http-client.js';

describe('Content-Disposition', () => {
  it('reads Content-Disposition, preferring filename*', () => {
    expect(dispositionFilename(`attachment; filename="na_ve r_sum_.txt"; filename*=UTF-8''na%C3%AFve%20r%C3%A9sum%C3%A9.txt`)).toBe('naïve résumé.txt');
    expect(dispositionFilename('attachment; filename="quoted \\"name\\".txt"')).toBe('quoted "name".txt');
    expect(dispositionFilename('attachment; filename=plain.txt')).toBe('plain.txt');
    expect(dispositionFilename("attachment; filename=\"fallback.txt\"; filename*=UTF-8''%E0%A4%A")).toBe('fallback.txt');
    expect(dispositionFilename(null)).toBeNull();
  });
});


describe('normaliseServer', () => {
  it('keeps scheme, host, port and a path prefix, without a trailing slash', () => {
    expect(normaliseServer('http://127.0.0.1:8080/')).toBe('http://127.0.0.1:8080');
    expect(normaliseServer(' HTTPS://Mail.Example.com/mailroom// ')).toBe('https://mail.example.com/mailroom');
  });

  it('refuses what is not a plain http or https URL', () => {
    expect(() => normaliseServer('mail.example.com')).toThrow("--server 'mail.example.com' is not a URL");
    expect(() => normaliseServer('ftp://mail.example.com')).toThrow('must be an http:// or https:// URL');
    expect(() => normaliseServer('https://user:pw@mail.example.com')).toThrow('must not carry a user name or password');
    expect(() => normaliseServer('https://mail.example.com/?x=1')).toThrow('must not have a query or a fragment');
  });
});

describe('a server that does not answer', () => {
  const listening = (server: Server) => new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));

  it('is given up on after the time-out, in words', async () => {
    const silent = createServer(() => undefined);
    const url = await listening(silent);
    try {
      await expect(createApiClient(url, 'mrs_x', 200).get('/app/api/session')).rejects.toThrow(`cannot reach ${url} (no answer within 0.2 s)`);
    } finally {
      silent.close();
    }
  });

  it('that closes the connection, or is not there, is named too', async () => {
    const rude = createServer((socket) => socket.destroy());
    const url = await listening(rude);
    await expect(createApiClient(url, null).get('/health')).rejects.toThrow(`cannot reach ${url} (connection closed by the server)`);
    await new Promise((resolve) => rude.close(resolve));
    await expect(createApiClient(url, null).get('/health')).rejects.toThrow(`cannot reach ${url} (connection refused)`);
  });
});
