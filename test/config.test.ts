import { mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, environmentWithDotenv, loadConfig, withSandboxDefaults } from '../src/config/config.js';

describe('configuration', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      databaseUrl: 'sqlite:./data/mailroom.db',
      httpHost: '127.0.0.1',
      httpPort: 8080,
      smtpHost: '127.0.0.1',
      smtpPort: 2525,
      hostedDomains: ['mailroom.localhost'],
      smtpRelay: null,
      mxPort: 25,
      dnsServers: [],
      webhookAllowCidrs: [],
      deliveryAllowCidrs: [],
      smtpMaxClients: 200,
      smtpMaxClientsPerIp: 20,
      smtpMaxSessionMs: 600_000,
      smtpMaxCommands: 1000,
      smtpIdleMs: 60_000,
      webhookBackoffBaseMs: 5000,
      webhookTimeoutMs: 10_000,
      deliveryRetryBaseMs: 60_000,
      deliveryMaxAgeMs: 345_600_000,
      leaseMs: 30_000,
      pgPrepare: true,
    });
    expect(Object.isFrozen(config)).toBe(true);
    // One per core but the main thread's, at least one, at most four.
    expect(config.smtpParserThreads).toBe(Math.max(1, Math.min(4, availableParallelism() - 1)));
  });

  it('MAILROOM_UNDO_SEND_SECONDS: 10 by default, 0 (no hold) to 60', () => {
    expect(loadConfig({}).undoSendSeconds).toBe(10);
    expect(loadConfig({ MAILROOM_UNDO_SEND_SECONDS: '0' }).undoSendSeconds).toBe(0);
    expect(loadConfig({ MAILROOM_UNDO_SEND_SECONDS: '60' }).undoSendSeconds).toBe(60);
    for (const bad of ['61', '-1', '2.5', 'ten']) expect(() => loadConfig({ MAILROOM_UNDO_SEND_SECONDS: bad }), bad).toThrow(/MAILROOM_UNDO_SEND_SECONDS/);
  });

  it('MAILROOM_PUBLIC_URL: https:// and the SMTP host name by default, trailing slashes dropped, no query', () => {
    expect(loadConfig({ MAILROOM_SMTP_HOSTNAME: 'MX.Example.com' }).publicUrl).toBe('https://mx.example.com');
    expect(loadConfig({ MAILROOM_PUBLIC_URL: 'https://mail.example.com/mailroom//' }).publicUrl).toBe('https://mail.example.com/mailroom');
    for (const bad of ['ftp://mail.example.com', 'https://mail.example.com/?x=1', 'not a url']) {
      expect(() => loadConfig({ MAILROOM_PUBLIC_URL: bad }), bad).toThrow(/MAILROOM_PUBLIC_URL/);
    }
  });

  it('parses every variable', () => {
    const config = loadConfig({
      MAILROOM_DATABASE_URL: 'postgres://u@localhost:5432/mr',
      MAILROOM_HTTP_PORT: '0',
      MAILROOM_HOSTED_DOMAINS: 'A.example, b.example ,',
      MAILROOM_SMTP_RELAY: 'smtp://user:pass@relay.example:587',
      MAILROOM_DNS_SERVERS: '127.0.0.1:5353,[::1]:53',
      MAILROOM_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
      MAILROOM_DELIVERY_ALLOW_CIDRS: '127.0.0.0/8, ::1/128',
      MAILROOM_SMTP_MAX_CLIENTS: '50',
      MAILROOM_SMTP_MAX_CLIENTS_PER_IP: '5',
      MAILROOM_SMTP_MAX_SESSION_MS: '120000',
      MAILROOM_SMTP_MAX_COMMANDS: '50',
      MAILROOM_SMTP_IDLE_MS: '30000',
      MAILROOM_LEASE_MS: '1500',
      MAILROOM_SMTP_PARSER_THREADS: '0',
      MAILROOM_DKIM_THREADS: '3',
      MAILROOM_PG_PREPARE: 'off',
    });
    expect(config).toMatchObject({
      pgPrepare: false,
      smtpParserThreads: 0,
      dkimThreads: 3,
      databaseUrl: 'postgres://u@localhost:5432/mr',
      httpPort: 0,
      hostedDomains: ['a.example', 'b.example'],
      smtpRelay: 'smtp://user:pass@relay.example:587',
      dnsServers: ['127.0.0.1:5353', '[::1]:53'],
      webhookAllowCidrs: ['127.0.0.0/8'],
      deliveryAllowCidrs: ['127.0.0.0/8', '::1/128'],
      smtpMaxClients: 50,
      smtpMaxClientsPerIp: 5,
      smtpMaxSessionMs: 120_000,
      smtpMaxCommands: 50,
      smtpIdleMs: 30_000,
      leaseMs: 1500,
    });
  });

  it('takes MAILROOM_SECRET_KEY as 32 bytes in hex or base64, and never repeats a bad one', () => {
    expect(loadConfig({}).secretKey).toBeNull();
    const hex = 'ab'.repeat(32);
    const base64 = Buffer.alloc(32, 9).toString('base64');
    expect(loadConfig({ MAILROOM_SECRET_KEY: hex }).secretKey).toBe(hex);
    expect(loadConfig({ MAILROOM_SECRET_KEY: base64 }).secretKey).toBe(base64);
    for (const bad of ['ab'.repeat(31), Buffer.alloc(31, 9).toString('base64'), 'not-a-key-at-all!', Buffer.alloc(33, 9).toString('base64')]) {
      let error: unknown;
      try {
        loadConfig({ MAILROOM_SECRET_KEY: bad });
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ConfigError);
      const text = (error as ConfigError).message;
      expect(text).toMatch(/MAILROOM_SECRET_KEY=\(value hidden\): must be 32 bytes/);
      expect(text).not.toContain(bad);
    }
  });

  it('reads the log format: auto by default, json or pretty in any letter case, nothing else', () => {
    expect(loadConfig({}).logFormat).toBe('auto');
    expect(loadConfig({ MAILROOM_LOG_FORMAT: 'JSON' }).logFormat).toBe('json');
    expect(loadConfig({ MAILROOM_LOG_FORMAT: ' pretty ' }).logFormat).toBe('pretty');
    expect(() => loadConfig({ MAILROOM_LOG_FORMAT: 'colour' })).toThrow(/MAILROOM_LOG_FORMAT="colour": unknown format; expected auto\|json\|pretty/);
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ MAILROOM_HTTP_PORT: '', MAILROOM_SMTP_RELAY: '' })).toMatchObject({ httpPort: 8080, smtpRelay: null });
  });

  it('names every bad variable in one clear error', () => {
    let error: unknown;
    try {
      loadConfig({ MAILROOM_HTTP_PORT: 'eighty', MAILROOM_DATABASE_URL: 'mysql://x', MAILROOM_LEASE_MS: '-5', MAILROOM_LOG_LEVEL: 'loud', MAILROOM_SMTP_PARSER_THREADS: '65', MAILROOM_DKIM_THREADS: '-1' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems).toHaveLength(6);
    expect(problems.join('\n')).toMatch(/MAILROOM_SMTP_PARSER_THREADS="65"/);
    expect(problems.join('\n')).toMatch(/MAILROOM_DKIM_THREADS="-1"/);
    expect(problems.join('\n')).toMatch(/MAILROOM_HTTP_PORT="eighty"/);
    expect(problems.join('\n')).toMatch(/MAILROOM_DATABASE_URL="mysql:\/\/x": must start with sqlite: or postgres:\/\//);
    expect(() => loadConfig({ MAILROOM_HTTP_PORT: '70000' })).toThrow(/out of range/);
    expect(() => loadConfig({ MAILROOM_HOSTED_DOMAINS: 'not a domain' })).toThrow(/not a domain name/);
    expect(() => loadConfig({ MAILROOM_SMTP_RELAY: 'http://x' })).toThrow(/smtp:\/\//);
    expect(loadConfig({ MAILROOM_SMTP_RELAY: 'smtps://u:p@relay.example?tls=insecure' }).smtpRelay).toBe('smtps://u:p@relay.example?tls=insecure');
    expect(() => loadConfig({ MAILROOM_SMTP_RELAY: 'smtp://u:p@relay.example?tls=off' })).toThrow(/unknown option 'tls=off'/);
    expect(() => loadConfig({ MAILROOM_DELIVERY_ALLOW_CIDRS: '127.0.0.1' })).toThrow(/MAILROOM_DELIVERY_ALLOW_CIDRS="127.0.0.1": '127.0.0.1' is not a CIDR/);
    expect(() => loadConfig({ MAILROOM_SMTP_MAX_CLIENTS: '0' })).toThrow(/MAILROOM_SMTP_MAX_CLIENTS="0"/);
    expect(() => loadConfig({ MAILROOM_SMTP_MAX_CLIENTS_PER_IP: 'many' })).toThrow(/MAILROOM_SMTP_MAX_CLIENTS_PER_IP="many"/);
    expect(() => loadConfig({ MAILROOM_SMTP_MAX_COMMANDS: '9' })).toThrow(/MAILROOM_SMTP_MAX_COMMANDS="9"/);
    expect(() => loadConfig({ MAILROOM_SMTP_MAX_SESSION_MS: '0' })).toThrow(/MAILROOM_SMTP_MAX_SESSION_MS="0"/);
    expect(() => loadConfig({ MAILROOM_SMTP_IDLE_MS: '1m' })).toThrow(/MAILROOM_SMTP_IDLE_MS="1m"/);
    expect(() => loadConfig({ MAILROOM_PG_PREPARE: 'sometimes' })).toThrow(/MAILROOM_PG_PREPARE="sometimes": not on or off/);
    for (const on of ['1', 'true', 'ON', 'yes']) expect(loadConfig({ MAILROOM_PG_PREPARE: on }).pgPrepare).toBe(true);
    for (const off of ['0', 'false', 'Off', 'no']) expect(loadConfig({ MAILROOM_PG_PREPARE: off }).pgPrepare).toBe(false);
    // Removed with the store thread (decision 225): like any variable the service does not know, ignored.
    expect(loadConfig({ MAILROOM_SMTP_STORE_THREAD: 'maybe' })).toEqual(loadConfig({}));
    expect(loadConfig({}).pageCacheBytes).toBe(32 * 1024 * 1024);
    expect(loadConfig({ MAILROOM_PAGE_CACHE_MB: '0' }).pageCacheBytes).toBe(0);
    expect(loadConfig({ MAILROOM_PAGE_CACHE_MB: '5' }).pageCacheBytes).toBe(5 * 1024 * 1024);
    expect(() => loadConfig({ MAILROOM_PAGE_CACHE_MB: '-1' })).toThrow(/MAILROOM_PAGE_CACHE_MB="-1"/);
  });

  it('reads the HTTP time-outs, the headers one at most the request one', () => {
    expect(loadConfig({})).toMatchObject({ httpRequestTimeoutMs: 30_000, httpHeadersTimeoutMs: 10_000, httpKeepAliveTimeoutMs: 72_000 });
    expect(
      loadConfig({ MAILROOM_HTTP_REQUEST_TIMEOUT_MS: '2000', MAILROOM_HTTP_HEADERS_TIMEOUT_MS: '2000', MAILROOM_HTTP_KEEPALIVE_TIMEOUT_MS: '500' }),
    ).toMatchObject({ httpRequestTimeoutMs: 2000, httpHeadersTimeoutMs: 2000, httpKeepAliveTimeoutMs: 500 });
    expect(() => loadConfig({ MAILROOM_HTTP_REQUEST_TIMEOUT_MS: '5000', MAILROOM_HTTP_HEADERS_TIMEOUT_MS: '6000' })).toThrow(/must not exceed/);
    expect(() => loadConfig({ MAILROOM_HTTP_HEADERS_TIMEOUT_MS: '50' })).toThrow(/MAILROOM_HTTP_HEADERS_TIMEOUT_MS="50"/);
  });

  it('reads the retention periods (0 = never), the sweep interval and batch', () => {
    expect(loadConfig({}).retention).toEqual({ trashDays: 30, spamDays: 30, eventsDays: 30, webhookAttemptsDays: 30, deadJobsDays: 30, idempotencyDays: 30, intervalMs: 600_000, batch: 100 });
    const set = loadConfig({ MAILROOM_RETENTION_TRASH_DAYS: '7', MAILROOM_RETENTION_SPAM_DAYS: '0', MAILROOM_RETENTION_EVENTS_DAYS: '90', MAILROOM_RETENTION_BATCH: '50', MAILROOM_RETENTION_INTERVAL_MS: '60000' });
    expect(set.retention).toMatchObject({ trashDays: 7, spamDays: 0, eventsDays: 90, batch: 50, intervalMs: 60_000 });
    expect(() => loadConfig({ MAILROOM_RETENTION_TRASH_DAYS: '-1' })).toThrow(/MAILROOM_RETENTION_TRASH_DAYS="-1"/);
    expect(() => loadConfig({ MAILROOM_RETENTION_BATCH: '0' })).toThrow(/MAILROOM_RETENTION_BATCH="0"/);
    expect(() => loadConfig({ MAILROOM_RETENTION_IDEMPOTENCY_DAYS: 'a day' })).toThrow(/MAILROOM_RETENTION_IDEMPOTENCY_DAYS/);
  });

  it('reads .env under the environment, never over it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailroom-env-'));
    const path = join(dir, '.env');
    writeFileSync(path, 'MAILROOM_HTTP_PORT=9999\nMAILROOM_SMTP_PORT=2626\nMAILROOM_MX_PORT=2727\n');
    const env = environmentWithDotenv({ MAILROOM_HTTP_PORT: '1234', MAILROOM_SMTP_PORT: '' }, path);
    expect(loadConfig(env)).toMatchObject({ httpPort: 1234, smtpPort: 2626, mxPort: 2727 });
  });

  it('mail-client listeners: off by default, TLS required unless plaintext logins are allowed on loopback; the sandbox turns submission on', () => {
    expect(loadConfig({})).toMatchObject({ imapPort: null, imapsPort: null, submissionPort: null, submissionsPort: null, allowPlaintextAuth: 'never' });
    expect(() => loadConfig({ MAILROOM_SUBMISSION_PORT: '587' })).toThrow(/MAILROOM_SUBMISSION_PORT needs a certificate/);
    expect(() => loadConfig({ MAILROOM_SUBMISSIONS_PORT: '465', MAILROOM_ALLOW_PLAINTEXT_AUTH: 'loopback' })).toThrow(/MAILROOM_SUBMISSIONS_PORT needs/);
    expect(() => loadConfig({ MAILROOM_ALLOW_PLAINTEXT_AUTH: 'always' })).toThrow(/MAILROOM_ALLOW_PLAINTEXT_AUTH="always": unknown value; expected never or loopback/);
    expect(loadConfig(withSandboxDefaults({}))).toMatchObject({ submissionPort: 1587, imapPort: 1143, allowPlaintextAuth: "loopback" });
    expect(loadConfig(withSandboxDefaults({ MAILROOM_SUBMISSION_PORT: '2587', MAILROOM_ALLOW_PLAINTEXT_AUTH: '' }))).toMatchObject({ submissionPort: 2587, allowPlaintextAuth: 'loopback' });
  });
  it('rspamd: off unless its URL is set; the controller defaults to port 11334; tempfail by default; bad values refused', () => {
    expect(loadConfig({}).rspamd).toBeNull();
    expect(loadConfig({ MAILROOM_RSPAMD_URL: 'http://127.0.0.1:11333' }).rspamd).toEqual({ url: 'http://127.0.0.1:11333', controllerUrl: 'http://127.0.0.1:11334', password: null, onError: 'tempfail' });
    expect(
      loadConfig({ MAILROOM_RSPAMD_URL: 'http://spam.internal:8000/', MAILROOM_RSPAMD_CONTROLLER_URL: 'http://spam.internal:9000', MAILROOM_RSPAMD_PASSWORD: 'pw', MAILROOM_RSPAMD_ON_ERROR: 'ACCEPT' }).rspamd,
    ).toEqual({ url: 'http://spam.internal:8000/', controllerUrl: 'http://spam.internal:9000', password: 'pw', onError: 'accept' });
    expect(() => loadConfig({ MAILROOM_RSPAMD_URL: 'ftp://x' })).toThrow(/MAILROOM_RSPAMD_URL/);
    expect(() => loadConfig({ MAILROOM_RSPAMD_URL: 'http://127.0.0.1:11333', MAILROOM_RSPAMD_ON_ERROR: 'drop' })).toThrow(/MAILROOM_RSPAMD_ON_ERROR="drop": unknown value; expected tempfail or accept/);
    expect(() => loadConfig({ MAILROOM_RSPAMD_PASSWORD: 'secret', MAILROOM_RSPAMD_CONTROLLER_URL: 'nope' })).toThrow(/MAILROOM_RSPAMD_CONTROLLER_URL/);
  });
});
