import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism, hostname } from 'node:os';
import { parse as parseDotenv } from 'dotenv';
import ipaddr from 'ipaddr.js';
import type { LogFormatSetting } from '../lib/logger.js';
import { parseSecretKey } from '../lib/secret-box.js';

/**
 * Configuration: `MAILROOM_*` environment variables (README.md lists them), parsed once at start-up and
 * frozen. A `.env` file in the working directory is read when present but never overrides a variable
 * that is already set; a variable set to the empty string counts as unset.
 */
/** Caps of the fair queue (jobs/queue.ts claims) and of webhook replays (modules/webhooks). */
export interface FairQueueSettings {
  /** Outbound delivery jobs of one workspace running at once. */
  deliveryWorkspaceConcurrency: number;
  /** Webhook deliveries running at once to one endpoint, and for one workspace. */
  webhookEndpointConcurrency: number;
  webhookWorkspaceConcurrency: number;
  /** Pending deliveries of an endpoint, and of a workspace, past which replay and recover answer 429. */
  webhookEndpointPendingMax: number;
  webhookWorkspacePendingMax: number;
  /** Replay, recover and test calls per workspace per minute (per process). */
  webhookReplaysPerMinute: number;
}

export interface Config {
  databaseUrl: string;
  /** PostgreSQL: run parameterised statements as named prepared statements (db/pg-named-statements.ts). */
  pgPrepare: boolean;
  httpHost: string;
  httpPort: number;
  smtpHost: string;
  smtpPort: number;
  /** Name in the SMTP greeting and in Authentication-Results. */
  smtpHostname: string;
  /** The service's public base URL (no trailing slash): where links in mail point (one-click unsubscribe). */
  publicUrl: string;
  /** Largest inbound message in bytes (SIZE, 552 above it). */
  smtpMaxSize: number;
  /** PEM files for STARTTLS on the inbound listener; both or neither. */
  smtpTlsKeyFile: string | null;
  smtpTlsCertFile: string | null;
  /** PEM files every TLS listener without a pair of its own uses (lib/tls-certificates.ts); both or neither. */
  tlsKeyFile: string | null;
  tlsCertFile: string | null;
  /** How often certificate files, and the database's ACME certificate, are looked at again (a file watch also reports changes). */
  tlsCheckMs: number;
  /** ACME (modules/certificates): the certificate of the listeners obtained and renewed from this CA; null = off. */
  acme: AcmeConfig | null;
  /** rspamd scores inbound mail (lib/rspamd.ts); null = no content scoring. */
  rspamd: RspamdConfig | null;
  /** Worker threads that parse and authenticate inbound mail; 0 does it on the main thread. */
  smtpParserThreads: number;
  /** Worker threads that DKIM-sign outbound mail; 0 signs on the main thread. */
  dkimThreads: number;
  /** Signings one workspace may have on the DKIM threads at once; null: as many as there are threads (half the slots). */
  dkimSigningsPerWorkspace: number | null;
  hostedDomains: readonly string[];
  smtpRelay: string | null;
  mxPort: number;
  dnsServers: readonly string[];
  /** PEM private key the service signs hosted-domain mail with; generated and stored at first start when unset. */
  dkimKeyFile: string | null;
  dkimSelector: string;
  webhookAllowCidrs: readonly string[];
  /** CIDRs exempted from the outbound address rules (lib/address-rules.ts); development and tests only. */
  deliveryAllowCidrs: readonly string[];
  /** Concurrent inbound SMTP sessions of this process, in all and per client address group (IPv4 /24, IPv6 /64). */
  smtpMaxClients: number;
  smtpMaxClientsPerIp: number;
  /** Inbound SMTP session bounds: lifetime, commands, and longest time without MAIL, RCPT or DATA (421 past each). */
  smtpMaxSessionMs: number;
  smtpMaxCommands: number;
  smtpIdleMs: number;
  /**
   * Mail clients' listeners (null = off): IMAP (STARTTLS) and IMAPS (implicit TLS), SMTP submission (STARTTLS) and
   * submissions (implicit TLS), on MAILROOM_SMTP_HOST. TLS uses MAILROOM_SMTP_TLS_KEY/CERT.
   */
  imapPort: number | null;
  imapsPort: number | null;
  submissionPort: number | null;
  submissionsPort: number | null;
  /** `never`: IMAP LOGIN and submission AUTH need TLS; `loopback`: also allowed without TLS from 127.0.0.0/8 and ::1. */
  allowPlaintextAuth: 'never' | 'loopback';
  /** Concurrent IMAP sessions of this process, in all and per client address, as inbound SMTP's caps. */
  imapMaxClients: number;
  imapMaxClientsPerIp: number;
  /** Logged-in IMAP sessions of one workspace in this process (both listeners); past it LOGIN is refused. */
  imapMaxClientsPerWorkspace: number;
  /** IMAP commands running at once in this process, and of one workspace (its share; decision 572). */
  imapCommands: number;
  imapCommandsPerWorkspace: number;
  /** How often an IDLE looks at its folder when no change signal came (a lost notification). */
  imapIdlePollMs: number;
  webhookBackoffBaseMs: number;
  webhookTimeoutMs: number;
  deliveryRetryBaseMs: number;
  deliveryMaxAgeMs: number;
  /** How long a message sent from the web app is held, and can be taken back, before it leaves; 0: not held. */
  undoSendSeconds: number;
  leaseMs: number;
  /** How often an idle worker looks for due jobs when no wake-up comes (in-process or NOTIFY). */
  workerPollMs: number;
  /** Event streams: interval of the `: ping` lines, at which every stream's session is checked again. */
  eventHeartbeatMs: number;
  /** Fair queue and webhooks: jobs running at once per workspace and per endpoint (every process together), pending caps, replay rate. */
  fairQueue: FairQueueSettings;

  /** Event streams open at once: per session, per workspace, in the process. */
  eventStreamsPerSession: number;
  eventStreamsPerWorkspace: number;
  eventStreamsMax: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** `auto`: pretty lines when standard output is a terminal, JSON lines otherwise (lib/logger.ts). */
  logFormat: LogFormatSetting;
  /** Requests per minute per credential (per process); 0 turns the limit off. */
  rateLimitPerMinute: number;
  /** Bytes of answered message pages an api process keeps per mailbox version (transports/http/page-cache.ts); 0 keeps none. */
  pageCacheBytes: number;
  /** Longest an HTTP client may take to send a whole request, headers and body (then 408 and the connection closes). */
  httpRequestTimeoutMs: number;
  /** Longest an HTTP client may take to send a request's headers (at most the request time-out). */
  httpHeadersTimeoutMs: number;
  /** How long an idle keep-alive HTTP connection stays open. */
  httpKeepAliveTimeoutMs: number;
  /**
   * MAILROOM_SECRET_KEY as given (validated: 32 bytes in hex or base64); null = the key file beside the
   * SQLite database (modules/secrets/secret-key.ts). Text rather than bytes so the config crosses to threads as it is.
   */
  secretKey: string | null;
  /** A search's time budget from its arrival, waiting included (then 503 `search_timeout`). */
  searchTimeoutMs: number;
  /** SQLite: threads that run searches on read-only connections of their own (searches at once are at most this many). */
  searchThreads: number;
  /** Searches running at once in the process, every workspace together. */
  searchConcurrency: number;
  /** Searches running at once for one workspace. */
  searchConcurrencyPerWorkspace: number;
  /**
   * Sandbox mode (`mailroom serve --sandbox`, never from the environment): a DNS server of its own, outbound mail
   * captured, loopback webhooks allowed, catch-all mailboxes (modules/sandbox). Off unless the flag is given.
   */
  sandbox: boolean;
  /** UDP and TCP port of the sandbox's DNS server on 127.0.0.1 (0 = a free port, shown at start). */
  sandboxDnsPort: number;
  /** Large request bodies and work under way on the HTTP API, and inbound analysis: what each workspace and the process may hold at once. */
  httpBodyBudgetBytes: number;
  httpBodyBudgetPerWorkspaceBytes: number;
  httpBodyWaitMs: number;
  httpMaxInflight: number;
  httpMaxInflightPerWorkspace: number;
  analysisSlots: number;
  analysisSlotsPerWorkspace: number;
  /** Threads that parse large JSON bodies and compose large messages; 0 does it on the main thread. */
  bodyThreads: number;

  // Login throttling: failed logins per email from one client address, and from all (then one per address).
  loginFailuresPerAddress: number;
  loginFailuresPerAccount: number;

  // Quotas and usage: the service-wide defaults of the quotas per workspace (null = unlimited); the operator sets a
  // workspace's own with `mailroom admin quota set`.
  quotaDefaults: QuotaDefaults;
  // Audit log: how many days an entry is kept (0 = for ever).
  auditRetentionDays: number;
  // Metrics, health and stopping.
  /** The metrics listener (GET /metrics, /health/live, /health/ready); port null = no listener and no metrics kept. */
  metricsHost: string;
  metricsPort: number | null;
  /** Longest a stopping process takes before it exits anyway. */
  shutdownTimeoutMs: number;
  // Retention: days things are kept (0 = never deleted), and how the worker's sweep runs.
  retention: RetentionConfig;
}

/** MAILROOM_ACME_*: where certificates are ordered, for which names, and when they are renewed. */
export interface AcmeConfig {
  directoryUrl: string;
  /** The account's contact address; null = none. */
  email: string | null;
  /** Names the certificate is for (MAILROOM_ACME_DOMAINS, else MAILROOM_SMTP_HOSTNAME). */
  domains: readonly string[];
  /** A certificate expiring within this many days is renewed. */
  renewBeforeDays: number;
  /** PEM certificates trusted for the directory's HTTPS besides the system's (a test CA); null = the system's only. */
  caFile: string | null;
}

export interface RspamdConfig {
  /** The normal worker (`/checkv2`). */
  url: string;
  /** The controller (`/learnspam`, `/learnham`): MAILROOM_RSPAMD_CONTROLLER_URL, else `url` with port 11334. */
  controllerUrl: string;
  /** The controller's password; null = none (rspamd trusts the client's address). */
  password: string | null;
  /** When rspamd is down or slow: `tempfail` answers 451 4.7.1, `accept` stores the message unscored. */
  onError: 'tempfail' | 'accept';
}

/** The default of each quota per workspace (modules/quotas), named as the quotas are; null = unlimited. */
export interface QuotaDefaults {
  mailboxes: number | null;
  stored_bytes: number | null;
  sent_per_hour: number | null;
  sent_per_day: number | null;
  api_requests_per_minute: number | null;
}

/** A quota's default: a whole number (0 allows nothing) or `unlimited`. */
function parseQuota(raw: string): number | null {
  if (/^unlimited$/i.test(raw)) return null;
  if (!/^\d{1,15}$/.test(raw)) throw new Error('not a whole number');
  return Number(raw);
}

/** MAILROOM_RETENTION_*: the operator's periods in days (0 = kept for ever) and the sweep's pace. */
export interface RetentionConfig {
  /** Defaults of the workspaces that set none: messages in `trash` and `spam`, from their last change. */
  trashDays: number;
  spamDays: number;
  /** The service's own records, for every workspace. */
  eventsDays: number;
  webhookAttemptsDays: number;
  deadJobsDays: number;
  idempotencyDays: number;
  /** How often a worker process sweeps. */
  intervalMs: number;
  /** Messages per transaction, records per DELETE. */
  batch: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

interface Spec<T> {
  name: string;
  fallback: T;
  parse: (raw: string) => T;
  /** What a valid value looks like, for the error message. */
  expect: string;
  /** A secret: its value never appears in an error message. */
  secret?: boolean;
}

const intIn = (min: number, max: number) => (raw: string): number => {
  if (!/^\d+$/.test(raw)) throw new Error('not a whole number');
  const n = Number(raw);
  if (n < min || n > max) throw new Error(`out of range ${min}..${max}`);
  return n;
};

const list = (raw: string): string[] =>
  raw.split(',').map((s) => s.trim()).filter((s) => s.length > 0);

const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

function parseDomains(raw: string): string[] {
  const domains = list(raw.toLowerCase());
  for (const d of domains) if (!DOMAIN.test(d)) throw new Error(`'${d}' is not a domain name`);
  return domains;
}

function parseDatabaseUrl(raw: string): string {
  if (raw.startsWith('sqlite:') && raw.length > 'sqlite:'.length) return raw;
  if (/^postgres(ql)?:\/\//.test(raw)) {
    new URL(raw); // throws on a malformed URL
    return raw;
  }
  throw new Error('must start with sqlite: or postgres://');
}

function parsePlaintextAuth(raw: string): 'never' | 'loopback' {
  const value = raw.toLowerCase();
  if (value !== 'never' && value !== 'loopback') throw new Error('unknown value');
  return value;
}

function parseSmtpRelay(raw: string): string {
  const url = new URL(raw);
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') throw new Error('must be smtp://… or smtps://…');
  if (!url.hostname) throw new Error('has no host');
  for (const [key, value] of url.searchParams) {
    if (key !== 'tls' || value !== 'insecure') throw new Error(`unknown option '${key}=${value}' (only ?tls=insecure is known)`);
  }
  return raw;
}

function parseHostPorts(raw: string): string[] {
  const entries = list(raw);
  for (const e of entries) {
    if (!/^(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-f:]+\]|[0-9a-f:]+)(:\d{1,5})?$/i.test(e)) throw new Error(`'${e}' is not ip[:port]`);
  }
  return entries;
}

function parseCidrs(raw: string): string[] {
  const entries = list(raw);
  for (const e of entries) {
    if (!/^[0-9a-f:.]+\/\d{1,3}$/i.test(e) || !ipaddr.isValidCIDR(e)) throw new Error(`'${e}' is not a CIDR such as 127.0.0.0/8`);
  }
  return entries;
}

function parseSwitch(raw: string): boolean {
  if (/^(1|true|on|yes)$/i.test(raw)) return true;
  if (/^(0|false|off|no)$/i.test(raw)) return false;
  throw new Error('not on or off');
}

function readableFile(raw: string): string {
  if (!existsSync(raw)) throw new Error('no such file');
  return raw;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
// A type-only import of the logger: reading the configuration loads no logging code.
const LOG_FORMATS = ['auto', 'json', 'pretty'] as const satisfies readonly LogFormatSetting[];

const DAY_MS = 86_400_000;
/** Most worker threads of a kind (parser, DKIM) by default. */
const MAX_DEFAULT_THREADS = 4;
/** Most search reader threads by default: each runs one search, which may keep its core busy for its whole budget. */
const MAX_DEFAULT_SEARCH_THREADS = 2;

/** One thread per core but one (the main thread speaks SMTP or HTTP and writes the database), at least one, at most four. */
function defaultWorkerThreads(): number {
  return Math.max(1, Math.min(MAX_DEFAULT_THREADS, availableParallelism() - 1));
}

/** Read `.env` (if present) under the process environment, which always wins. */
export function environmentWithDotenv(env: Env = process.env, dotenvPath = '.env'): Env {
  const merged: Env = { ...env };
  if (existsSync(dotenvPath)) {
    const fromFile = parseDotenv(readFileSync(dotenvPath));
    for (const [key, value] of Object.entries(fromFile)) {
      if (merged[key] === undefined || merged[key] === '') merged[key] = value;
    }
  }
  return merged;
}

function parseHttpsUrl(raw: string): string {
  const url = new URL(raw);
  if (url.protocol !== 'https:') throw new Error('must be an https:// URL');
  return raw;
}

/** An http(s) base URL without query or fragment, its trailing slashes removed (paths are added to it). */
function parsePublicUrl(raw: string): string {
  const url = new URL(raw);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error('must be an https:// URL');
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') throw new Error('must have no query, fragment or credentials');
  let href = url.href;
  while (href.endsWith('/')) href = href.slice(0, -1);
  return href;
}

function parseHttpUrl(raw: string): string {
  const url = new URL(raw);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('must be an http:// or https:// URL');
  return raw;
}

/** rspamd is on when its URL is set; the controller defaults to the same host on rspamd's controller port. */
function readRspamd(read: Read): RspamdConfig | null {
  const url = read<string | null>({ name: 'RSPAMD_URL', fallback: null, parse: parseHttpUrl, expect: 'an http:// URL such as http://127.0.0.1:11333' });
  const controllerUrl = read<string | null>({ name: 'RSPAMD_CONTROLLER_URL', fallback: null, parse: parseHttpUrl, expect: 'an http:// URL such as http://127.0.0.1:11334' });
  const password = read<string | null>({ name: 'RSPAMD_PASSWORD', fallback: null, parse: (v) => v, expect: 'a password', secret: true });
  const onError = read<'tempfail' | 'accept'>({
    name: 'RSPAMD_ON_ERROR',
    fallback: 'tempfail',
    parse: (v) => {
      const value = v.toLowerCase();
      if (value !== 'tempfail' && value !== 'accept') throw new Error('unknown value');
      return value;
    },
    expect: 'tempfail or accept',
  });
  if (url === null) return null;
  return { url, controllerUrl: controllerUrl ?? rspamdControllerOf(url), password, onError };
}

/** rspamd's controller listens beside its normal worker on port 11334 (its default). */
function rspamdControllerOf(url: string): string {
  const parsed = new URL(url);
  parsed.port = '11334';
  return parsed.origin;
}

function parseEmail(raw: string): string {
  if (!/^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/.test(raw)) throw new Error('not an email address');
  return raw;
}

type Read = <T>(spec: Spec<T>) => T;

/** ACME is on when its directory is set; its names default to the SMTP host name (the name senders connect to). */
function readAcme(read: Read, smtpHostname: string): AcmeConfig | null {
  const directoryUrl = read<string | null>({ name: 'ACME_DIRECTORY_URL', fallback: null, parse: parseHttpsUrl, expect: 'the https:// URL of an ACME directory' });
  const email = read<string | null>({ name: 'ACME_EMAIL', fallback: null, parse: parseEmail, expect: 'an email address' });
  const domains = read<string[]>({ name: 'ACME_DOMAINS', fallback: [smtpHostname], parse: parseDomains, expect: 'a comma list of host names' });
  const renewBeforeDays = read({ name: 'ACME_RENEW_DAYS', fallback: 30, parse: intIn(1, 36_500), expect: 'a whole number of days 1..36500' });
  const caFile = read<string | null>({ name: 'ACME_CA_FILE', fallback: null, parse: readableFile, expect: 'the path of PEM CA certificates' });
  return directoryUrl === null ? null : { directoryUrl, email, domains, renewBeforeDays, caFile };
}

/**
 * What `mailroom serve --sandbox` turns on unless the variables are set: SMTP submission on port 1587, IMAP on
 * port 1143, and logins without TLS from loopback (the sandbox has no certificate; MAILROOM_SMTP_HOST keeps it on 127.0.0.1 by default).
 */
export const SANDBOX_DEFAULTS: Readonly<Record<string, string>> = Object.freeze({ MAILROOM_SUBMISSION_PORT: '1587', MAILROOM_IMAP_PORT: '1143', MAILROOM_ALLOW_PLAINTEXT_AUTH: 'loopback' });

/** The environment with the sandbox's defaults where a variable is unset or empty. */
export function withSandboxDefaults(env: Env): Env {
  const merged: Env = { ...env };
  for (const [key, value] of Object.entries(SANDBOX_DEFAULTS)) {
    if (merged[key] === undefined || merged[key]?.trim() === '') merged[key] = value;
  }
  return merged;
}

/** Parse and validate the configuration; throws ConfigError listing every bad variable. */
export function loadConfig(env: Env = environmentWithDotenv()): Readonly<Config> {
  const problems: string[] = [];
  function read<T>(spec: Spec<T>): T {
    const raw = env[`MAILROOM_${spec.name}`];
    if (raw === undefined || raw.trim() === '') return spec.fallback;
    try {
      return spec.parse(raw.trim());
    } catch (err) {
      problems.push(`MAILROOM_${spec.name}=${spec.secret ? '(value hidden)' : JSON.stringify(raw)}: ${(err as Error).message}; expected ${spec.expect}`);
      return spec.fallback;
    }
  }
  const port = (name: string, fallback: number) =>
    read({ name, fallback, parse: intIn(0, 65535), expect: 'a port 0..65535 (0 picks a free port)' });
  const optionalPort = (name: string) => read<number | null>({ name, fallback: null, parse: intIn(0, 65535), expect: 'a port 0..65535 (0 picks a free port; unset = off)' });
  const days = (name: string, fallback: number) => read({ name, fallback, parse: intIn(0, 36_500), expect: 'a whole number of days 0..36500 (0 = never delete)' });
  const count = (name: string, fallback: number) => read({ name, fallback, parse: intIn(1, 1_000_000), expect: 'a whole number 1..1000000' });
  const quota = (name: string) => read<number | null>({ name, fallback: null, parse: parseQuota, expect: 'a whole number (0 allows nothing) or unlimited' });
  const ms = (name: string, fallback: number, min = 1) =>
    read({ name, fallback, parse: intIn(min, 365 * DAY_MS), expect: `milliseconds (${min} or more)` });

  const config: Config = {
    databaseUrl: read({ name: 'DATABASE_URL', fallback: 'sqlite:./data/mailroom.db', parse: parseDatabaseUrl, expect: 'sqlite:PATH or postgres://user@host/db' }),
    pgPrepare: read({ name: 'PG_PREPARE', fallback: true, parse: parseSwitch, expect: 'on or off (1/0, true/false)' }),
    httpHost: read({ name: 'HTTP_HOST', fallback: '127.0.0.1', parse: (s) => s, expect: 'a host or IP' }),
    httpPort: port('HTTP_PORT', 8080),
    smtpHost: read({ name: 'SMTP_HOST', fallback: '127.0.0.1', parse: (s) => s, expect: 'a host or IP' }),
    smtpPort: port('SMTP_PORT', 2525),
    smtpHostname: read({ name: 'SMTP_HOSTNAME', fallback: hostname(), parse: (v) => v.toLowerCase(), expect: 'a host name' }),
    publicUrl: '',
    smtpMaxSize: read({ name: 'SMTP_MAX_SIZE', fallback: 25 * 1024 * 1024, parse: intIn(1024, 1024 * 1024 * 1024), expect: 'bytes, 1024 or more' }),
    smtpTlsKeyFile: read<string | null>({ name: 'SMTP_TLS_KEY', fallback: null, parse: readableFile, expect: 'the path of a PEM private key' }),
    smtpTlsCertFile: read<string | null>({ name: 'SMTP_TLS_CERT', fallback: null, parse: readableFile, expect: 'the path of a PEM certificate chain' }),
    tlsKeyFile: read<string | null>({ name: 'TLS_KEY', fallback: null, parse: readableFile, expect: 'the path of a PEM private key' }),
    tlsCertFile: read<string | null>({ name: 'TLS_CERT', fallback: null, parse: readableFile, expect: 'the path of a PEM certificate chain' }),
    tlsCheckMs: ms('TLS_CHECK_MS', 30_000, 100),
    acme: null,
    rspamd: null,
    smtpParserThreads: read({ name: 'SMTP_PARSER_THREADS', fallback: defaultWorkerThreads(), parse: intIn(0, 64), expect: 'a whole number 0..64 (0 = on the main thread)' }),
    dkimThreads: read({ name: 'DKIM_THREADS', fallback: defaultWorkerThreads(), parse: intIn(0, 64), expect: 'a whole number 0..64 (0 = on the main thread)' }),
    hostedDomains: read({ name: 'HOSTED_DOMAINS', fallback: ['mailroom.localhost'], parse: parseDomains, expect: 'a comma list of domains' }),
    smtpRelay: read<string | null>({ name: 'SMTP_RELAY', fallback: null, parse: parseSmtpRelay, expect: 'smtp[s]://[user:pass@]host:port[?tls=insecure]' }),
    mxPort: port('MX_PORT', 25),
    dnsServers: read<string[]>({ name: 'DNS_SERVERS', fallback: [], parse: parseHostPorts, expect: 'a comma list of ip[:port]' }),
    dkimKeyFile: read<string | null>({ name: 'DKIM_KEY', fallback: null, parse: readableFile, expect: 'the path of a PEM RSA private key' }),
    dkimSelector: read({ name: 'DKIM_SELECTOR', fallback: 'mailroom', parse: (v) => {
      if (!/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i.test(v)) throw new Error('not a DNS label');
      return v.toLowerCase();
    }, expect: 'a DNS label' }),
    pageCacheBytes: read({ name: 'PAGE_CACHE_MB', fallback: 32, parse: intIn(0, 65536), expect: 'megabytes 0..65536 (0 = off)' }) * 1024 * 1024,
    webhookAllowCidrs: read<string[]>({ name: 'WEBHOOK_ALLOW_CIDRS', fallback: [], parse: parseCidrs, expect: 'a comma list of CIDRs' }),
    deliveryAllowCidrs: read<string[]>({ name: 'DELIVERY_ALLOW_CIDRS', fallback: [], parse: parseCidrs, expect: 'a comma list of CIDRs' }),
    smtpMaxClients: read({ name: 'SMTP_MAX_CLIENTS', fallback: 200, parse: intIn(1, 1_000_000), expect: 'a whole number of sessions, 1 or more' }),
    smtpMaxClientsPerIp: read({ name: 'SMTP_MAX_CLIENTS_PER_IP', fallback: 20, parse: intIn(1, 1_000_000), expect: 'a whole number of sessions, 1 or more' }),
    // Inbound SMTP session slots: every session ends (lifetime, command count, idle time).
    smtpMaxSessionMs: ms('SMTP_MAX_SESSION_MS', 10 * 60_000, 100),
    smtpMaxCommands: read({ name: 'SMTP_MAX_COMMANDS', fallback: 1000, parse: intIn(10, 1_000_000_000), expect: 'a whole number of commands, 10 or more' }),
    smtpIdleMs: ms('SMTP_IDLE_MS', 60_000, 100),
    imapPort: optionalPort('IMAP_PORT'),
    imapsPort: optionalPort('IMAPS_PORT'),
    submissionPort: optionalPort('SUBMISSION_PORT'),
    submissionsPort: optionalPort('SUBMISSIONS_PORT'),
    allowPlaintextAuth: read<'never' | 'loopback'>({ name: 'ALLOW_PLAINTEXT_AUTH', fallback: 'never', parse: parsePlaintextAuth, expect: 'never or loopback' }),
    imapMaxClients: read({ name: 'IMAP_MAX_CLIENTS', fallback: 1000, parse: intIn(1, 1_000_000), expect: 'a whole number of sessions, 1 or more' }),
    imapMaxClientsPerIp: read({ name: 'IMAP_MAX_CLIENTS_PER_IP', fallback: 50, parse: intIn(1, 1_000_000), expect: 'a whole number of sessions, 1 or more' }),
    imapMaxClientsPerWorkspace: read({ name: 'IMAP_MAX_CLIENTS_PER_WORKSPACE', fallback: 100, parse: intIn(1, 1_000_000), expect: 'a whole number of sessions, 1 or more' }),
    imapCommands: read({ name: 'IMAP_COMMANDS', fallback: 32, parse: intIn(1, 100_000), expect: 'a whole number of commands, 1 or more' }),
    imapCommandsPerWorkspace: read({ name: 'IMAP_COMMANDS_PER_WORKSPACE', fallback: 4, parse: intIn(1, 100_000), expect: 'a whole number of commands, 1 or more' }),
    imapIdlePollMs: ms('IMAP_IDLE_POLL_MS', 30_000, 100),
    webhookBackoffBaseMs: ms('WEBHOOK_BACKOFF_BASE_MS', 5000),
    webhookTimeoutMs: ms('WEBHOOK_TIMEOUT_MS', 10_000),
    deliveryRetryBaseMs: ms('DELIVERY_RETRY_BASE_MS', 60_000),
    deliveryMaxAgeMs: ms('DELIVERY_MAX_AGE_MS', 4 * DAY_MS),
    undoSendSeconds: read({ name: 'UNDO_SEND_SECONDS', fallback: 10, parse: intIn(0, 60), expect: 'a whole number of seconds 0..60 (0 = sends from the web app are not held)' }),
    leaseMs: ms('LEASE_MS', 30_000, 100),
    workerPollMs: ms('WORKER_POLL_MS', 200, 10),
    // Fair queue and webhooks: caps counted in the database, so they hold across worker processes.
    fairQueue: {
      deliveryWorkspaceConcurrency: count('QUEUE_WORKSPACE_CONCURRENCY', 6),
      // At most the webhook sender's connections per receiver (32).
      webhookEndpointConcurrency: read({ name: 'WEBHOOK_ENDPOINT_CONCURRENCY', fallback: 8, parse: intIn(1, 32), expect: 'a whole number 1..32' }),
      webhookWorkspaceConcurrency: count('WEBHOOK_WORKSPACE_CONCURRENCY', 32),
      webhookEndpointPendingMax: count('WEBHOOK_ENDPOINT_PENDING_MAX', 10_000),
      webhookWorkspacePendingMax: count('WEBHOOK_WORKSPACE_PENDING_MAX', 50_000),
      webhookReplaysPerMinute: count('WEBHOOK_REPLAYS_PER_MINUTE', 120),
    },

    // Event streams: the heartbeat that re-checks each stream's session, and the caps on open streams.
    eventHeartbeatMs: ms('EVENT_HEARTBEAT_MS', 5000, 10),
    eventStreamsPerSession: read({ name: 'EVENT_STREAMS_PER_SESSION', fallback: 5, parse: intIn(1, 1_000_000), expect: 'a whole number of streams, 1 or more' }),
    eventStreamsPerWorkspace: read({ name: 'EVENT_STREAMS_PER_WORKSPACE', fallback: 20, parse: intIn(1, 1_000_000), expect: 'a whole number of streams, 1 or more' }),
    eventStreamsMax: read({ name: 'EVENT_STREAMS_MAX', fallback: 1000, parse: intIn(1, 1_000_000), expect: 'a whole number of streams, 1 or more' }),
    logLevel: read({
      name: 'LOG_LEVEL',
      fallback: 'info',
      parse: (s) => {
        const level = LOG_LEVELS.find((l) => l === s.toLowerCase());
        if (!level) throw new Error('unknown level');
        return level;
      },
      expect: LOG_LEVELS.join('|'),
    }),
    logFormat: read({
      name: 'LOG_FORMAT',
      fallback: 'auto',
      parse: (s) => {
        const format = LOG_FORMATS.find((f) => f === s.toLowerCase());
        if (!format) throw new Error('unknown format');
        return format;
      },
      expect: LOG_FORMATS.join('|'),
    }),
    secretKey: read<string | null>({ name: 'SECRET_KEY', fallback: null, parse: (v) => (parseSecretKey(v), v), expect: '32 random bytes as 64 hex digits or base64 (openssl rand -base64 32)', secret: true }),
    rateLimitPerMinute: read({ name: 'RATE_LIMIT_PER_MINUTE', fallback: 1200, parse: intIn(0, 10_000_000), expect: 'a whole number (0 = off)' }),
    httpRequestTimeoutMs: ms('HTTP_REQUEST_TIMEOUT_MS', 30_000, 100),
    httpHeadersTimeoutMs: ms('HTTP_HEADERS_TIMEOUT_MS', 10_000, 100),
    // Longer than the 60 s idle time-out common in load balancers, so the balancer closes first (as Fastify's default).
    httpKeepAliveTimeoutMs: ms('HTTP_KEEPALIVE_TIMEOUT_MS', 72_000, 100),
    // Search: its time budget, SQLite's reader threads, and searches at once in the process and per workspace.
    searchTimeoutMs: ms('SEARCH_TIMEOUT_MS', 5000),
    searchThreads: read({ name: 'SEARCH_THREADS', fallback: Math.min(MAX_DEFAULT_SEARCH_THREADS, defaultWorkerThreads()), parse: intIn(1, 64), expect: 'a whole number 1..64' }),
    searchConcurrency: read({ name: 'SEARCH_CONCURRENCY', fallback: 4, parse: intIn(1, 1000), expect: 'a whole number of searches 1..1000' }),
    searchConcurrencyPerWorkspace: read({ name: 'SEARCH_CONCURRENCY_PER_WORKSPACE', fallback: 1, parse: intIn(1, 1000), expect: 'a whole number of searches 1..1000' }),
    sandbox: false,
    sandboxDnsPort: port('SANDBOX_DNS_PORT', 0),
    // Signing threads shared fairly between workspaces.
    dkimSigningsPerWorkspace: read<number | null>({ name: 'DKIM_SIGNINGS_PER_WORKSPACE', fallback: null, parse: intIn(1, 1024), expect: 'a whole number 1..1024' }),

    // Big work, shared fairly: request bodies in memory, requests under way, inbound analysis (a share per workspace, a cap in all).
    httpBodyBudgetBytes: read({ name: 'HTTP_BODY_BUDGET_MB', fallback: 160, parse: intIn(1, 1024 * 1024), expect: 'megabytes, 1 or more' }) * 1024 * 1024,
    httpBodyBudgetPerWorkspaceBytes: read({ name: 'HTTP_BODY_BUDGET_PER_WORKSPACE_MB', fallback: 80, parse: intIn(1, 1024 * 1024), expect: 'megabytes, 1 or more' }) * 1024 * 1024,
    httpBodyWaitMs: ms('HTTP_BODY_WAIT_MS', 10_000),
    httpMaxInflight: read({ name: 'HTTP_MAX_INFLIGHT', fallback: 256, parse: intIn(1, 1_000_000), expect: 'a whole number of requests, 1 or more' }),
    httpMaxInflightPerWorkspace: read({ name: 'HTTP_MAX_INFLIGHT_PER_WORKSPACE', fallback: 64, parse: intIn(1, 1_000_000), expect: 'a whole number of requests, 1 or more' }),
    analysisSlots: read({ name: 'ANALYSIS_SLOTS', fallback: 16, parse: intIn(1, 10_000), expect: 'a whole number of messages, 1 or more' }),
    analysisSlotsPerWorkspace: read({ name: 'ANALYSIS_SLOTS_PER_WORKSPACE', fallback: 8, parse: intIn(1, 10_000), expect: 'a whole number of messages, 1 or more' }),
    bodyThreads: read({ name: 'BODY_THREADS', fallback: Math.min(2, defaultWorkerThreads()), parse: intIn(0, 64), expect: 'a whole number 0..64 (0 = on the main thread)' }),

    // Login throttling: failed logins per email within 15 minutes, from one client address and from all of them.
    loginFailuresPerAddress: read({ name: 'LOGIN_FAILURES_PER_ADDRESS', fallback: 10, parse: intIn(1, 1_000_000), expect: 'a whole number of failures, 1 or more' }),
    loginFailuresPerAccount: read({ name: 'LOGIN_FAILURES_PER_ACCOUNT', fallback: 100, parse: intIn(1, 1_000_000), expect: 'a whole number of failures, 1 or more' }),

    // Quotas and usage: unset = unlimited, so an existing service limits nobody until its operator decides.
    quotaDefaults: {
      mailboxes: quota('QUOTA_MAILBOXES'),
      stored_bytes: quota('QUOTA_STORED_BYTES'),
      sent_per_hour: quota('QUOTA_SENT_PER_HOUR'),
      sent_per_day: quota('QUOTA_SENT_PER_DAY'),
      api_requests_per_minute: quota('QUOTA_API_REQUESTS_PER_MINUTE'),
    },
    // Audit log: entries older than this are swept by the worker role.
    auditRetentionDays: read({ name: 'AUDIT_RETENTION_DAYS', fallback: 365, parse: intIn(0, 100_000), expect: 'a whole number of days (0 = keep for ever)' }),
    // Metrics, health and stopping: the metrics listener is off unless its port is set.
    metricsHost: read({ name: 'METRICS_HOST', fallback: '127.0.0.1', parse: (s) => s, expect: 'a host or IP' }),
    metricsPort: read<number | null>({ name: 'METRICS_PORT', fallback: null, parse: intIn(0, 65535), expect: 'a port 0..65535 (0 picks a free port)' }),
    shutdownTimeoutMs: ms('SHUTDOWN_TIMEOUT_MS', 20_000, 100),
    // Retention: periods in days (0 = never), the sweep's interval and batch.
    retention: {
      trashDays: days('RETENTION_TRASH_DAYS', 30),
      spamDays: days('RETENTION_SPAM_DAYS', 30),
      eventsDays: days('RETENTION_EVENTS_DAYS', 30),
      webhookAttemptsDays: days('RETENTION_WEBHOOK_ATTEMPTS_DAYS', 30),
      deadJobsDays: days('RETENTION_DEAD_JOBS_DAYS', 30),
      idempotencyDays: days('RETENTION_IDEMPOTENCY_DAYS', 30),
      intervalMs: ms('RETENTION_INTERVAL_MS', 10 * 60_000, 1000),
      batch: read({ name: 'RETENTION_BATCH', fallback: 100, parse: intIn(1, 10_000), expect: 'a whole number of rows 1..10000' }),
    },
  };
  if (config.httpHeadersTimeoutMs > config.httpRequestTimeoutMs) {
    problems.push('MAILROOM_HTTP_HEADERS_TIMEOUT_MS must not exceed MAILROOM_HTTP_REQUEST_TIMEOUT_MS');
  }
  if ((config.smtpTlsKeyFile === null) !== (config.smtpTlsCertFile === null)) {
    problems.push('MAILROOM_SMTP_TLS_KEY and MAILROOM_SMTP_TLS_CERT must be set together');
  }
  if ((config.tlsKeyFile === null) !== (config.tlsCertFile === null)) {
    problems.push('MAILROOM_TLS_KEY and MAILROOM_TLS_CERT must be set together');
  }
  config.acme = readAcme(read, config.smtpHostname);
  // Links in mail name the service by the host name it announces unless the operator says otherwise.
  config.publicUrl = read({ name: 'PUBLIC_URL', fallback: `https://${config.smtpHostname}`, parse: parsePublicUrl, expect: 'the https:// base URL the service is reached at' });
  config.rspamd = readRspamd(read);
  if (config.acme && config.tlsKeyFile !== null) {
    problems.push('MAILROOM_ACME_DIRECTORY_URL and MAILROOM_TLS_KEY/MAILROOM_TLS_CERT name two sources of the same certificate; set one');
  }
  const tls = config.smtpTlsKeyFile !== null || config.tlsKeyFile !== null || config.acme !== null;
  // Implicit TLS needs a certificate; STARTTLS too, unless logins without TLS are allowed on loopback (the sandbox).
  for (const [name, value, needsTls] of [
    ['SUBMISSIONS_PORT', config.submissionsPort, true],
    ['IMAPS_PORT', config.imapsPort, true],
    ['SUBMISSION_PORT', config.submissionPort, config.allowPlaintextAuth === 'never'],
    ['IMAP_PORT', config.imapPort, config.allowPlaintextAuth === 'never'],
  ] as const) {
    if (value !== null && needsTls && !tls) problems.push(`MAILROOM_${name} needs a certificate (MAILROOM_TLS_KEY/CERT, MAILROOM_SMTP_TLS_KEY/CERT or ACME): mail clients log in only over TLS`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}
