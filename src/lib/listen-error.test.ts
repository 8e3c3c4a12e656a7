import { describe, expect, it } from 'vitest';
import { explainListenError, ListenError } from './listen-error.js';

const http = { service: 'HTTP API', host: '127.0.0.1', port: 8080, hostVariable: 'MAILROOM_HTTP_HOST', portVariable: 'MAILROOM_HTTP_PORT' };

function failure(code: string): Error {
  return Object.assign(new Error(`listen ${code}`), { code });
}

describe('explainListenError', () => {
  it('names the address, the port and the variable to change', () => {
    const cases: Array<[string, typeof http, string]> = [
      ['EADDRINUSE', http, 'HTTP API cannot listen on 127.0.0.1:8080: the port is already in use; stop what holds it, or set MAILROOM_HTTP_PORT to a free port (0 picks one)'],
      ['EACCES', { ...http, port: 80 }, 'HTTP API cannot listen on 127.0.0.1:80: permission denied (ports below 1024 need privileges); set MAILROOM_HTTP_PORT to 1024 or above'],
      ['EADDRNOTAVAIL', { ...http, host: '::2' }, 'HTTP API cannot listen on [::2]:8080: the address is not one of this machine\'s; set MAILROOM_HTTP_HOST to one (127.0.0.1, or 0.0.0.0 for all)'],
      ['ENOTFOUND', { ...http, host: 'nowhere.invalid' }, 'HTTP API cannot listen on nowhere.invalid:8080: the host name does not resolve; set MAILROOM_HTTP_HOST to an IP address (127.0.0.1, or 0.0.0.0 for all)'],
    ];
    for (const [code, listener, message] of cases) {
      const cause = failure(code);
      const explained = explainListenError(cause, listener);
      expect(explained).toBeInstanceOf(ListenError);
      expect((explained as ListenError).message, code).toBe(message);
      expect((explained as ListenError).name).toBe('ListenError');
      expect((explained as ListenError).cause).toBe(cause);
    }
  });

  it('leaves other failures as they are', () => {
    const other = failure('EMFILE');
    expect(explainListenError(other, http)).toBe(other);
    expect(explainListenError('text', http)).toBe('text');
  });
});
