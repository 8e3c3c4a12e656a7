import { Resolver } from 'node:dns/promises';
import type { Socket } from 'node:net';
import dns2 from 'dns2';
import type { Logger } from '../../lib/logger.js';
import type { DnsAnswer } from '../../modules/sandbox/dns-records.js';
import type { DnsLookup } from '../../modules/sandbox/sandbox-dns.service.js';

const { Packet } = dns2;
type Packet = dns2.Packet;
type Resource = dns2.Packet.Resource;

/** Seconds a resolver may keep an answer: short, so a record set in the sandbox is seen within a minute. */
const TTL_SECONDS = 5;
/** An upstream server gets one try this long; the asking resolver (lib/dns.ts) waits 3 s for us. */
const UPSTREAM_TIMEOUT_MS = 2000;
/** Binding UDP and TCP to one free port can race another process; tries before giving up. */
const BIND_ATTEMPTS = 5;
/** TXT character-strings are at most 255 octets (RFC 1035 section 3.3.14). */
const TXT_CHUNK = 255;

const RCODE = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4 } as const;
/** The types answered: from the sandbox's records, or (PTR too, for a receiving server's checks) from upstream. */
const TYPES = new Map<number, 'A' | 'AAAA' | 'CNAME' | 'MX' | 'TXT' | 'PTR'>([
  [Packet.TYPE.A, 'A'],
  [Packet.TYPE.AAAA, 'AAAA'],
  [Packet.TYPE.CNAME, 'CNAME'],
  [Packet.TYPE.MX, 'MX'],
  [Packet.TYPE.TXT, 'TXT'],
  [Packet.TYPE.PTR, 'PTR'],
]);

export interface SandboxDnsServer {
  /** `127.0.0.1:PORT`, for the service's own resolver (MAILROOM_DNS_SERVERS form). */
  address: string;
  port: number;
  close(): Promise<void>;
}

export interface SandboxDnsOptions {
  host: string;
  /** 0 = a free port (UDP and TCP share it). */
  port: number;
  lookup: (name: string, type: string) => Promise<DnsLookup>;
  /** Servers for names the sandbox knows nothing of (MAILROOM_DNS_SERVERS; empty = the system's). */
  upstream: readonly string[];
  logger: Logger;
}

function chunks(text: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += TXT_CHUNK) out.push(text.slice(i, i + TXT_CHUNK));
  return out;
}

/** A record as dns2 encodes it. */
function resource(answer: DnsAnswer): Resource {
  const base = { name: answer.name, class: Packet.CLASS.IN, ttl: TTL_SECONDS };
  switch (answer.type) {
    case 'A':
    case 'AAAA':
      return { ...base, type: Packet.TYPE[answer.type], address: answer.address } as Resource;
    case 'CNAME':
      return { ...base, type: Packet.TYPE.CNAME, domain: answer.target } as Resource;
    case 'MX':
      return { ...base, type: Packet.TYPE.MX, priority: answer.priority, exchange: answer.exchange } as Resource;
    case 'TXT':
      return { ...base, type: Packet.TYPE.TXT, data: chunks(answer.text) } as Resource;
  }
}

/** Ask the upstream servers, in the sandbox's answer form; an error code the resolver gives becomes the response code. */
async function forward(resolver: Resolver, name: string, type: string): Promise<{ rcode: number; records: Resource[] }> {
  const base = { name, class: Packet.CLASS.IN, ttl: TTL_SECONDS };
  try {
    let records: Resource[];
    if (type === 'A') records = (await resolver.resolve4(name)).map((address) => resource({ name, type: 'A', address }));
    else if (type === 'AAAA') records = (await resolver.resolve6(name)).map((address) => resource({ name, type: 'AAAA', address }));
    else if (type === 'MX') records = (await resolver.resolveMx(name)).map((mx) => resource({ name, type: 'MX', ...mx }));
    else if (type === 'TXT') records = (await resolver.resolveTxt(name)).map((parts) => ({ ...base, type: Packet.TYPE.TXT, data: parts }) as Resource);
    else if (type === 'CNAME') records = (await resolver.resolveCname(name)).map((target) => resource({ name, type: 'CNAME', target }));
    else records = (await resolver.resolvePtr(name)).map((domain) => ({ ...base, type: Packet.TYPE.PTR, domain }) as Resource);
    return { rcode: RCODE.NOERROR, records };
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code === 'ENOTFOUND') return { rcode: RCODE.NXDOMAIN, records: [] };
    if (code === 'ENODATA') return { rcode: RCODE.NOERROR, records: [] };
    return { rcode: RCODE.SERVFAIL, records: [] };
  }
}

/** The response to one query: published records, no such name, or what upstream says. */
async function respond(request: Packet, options: SandboxDnsOptions, resolver: Resolver): Promise<Packet> {
  const response = Packet.createResponseFromRequest(request);
  response.header.ra = 1;
  const question = request.questions[0];
  const type = question ? TYPES.get(question.type) : undefined;
  if (!question) {
    response.header.rcode = RCODE.FORMERR;
    return response;
  }
  if (!type) {
    response.header.rcode = RCODE.NOTIMP;
    return response;
  }
  const name = question.name.replace(/\.$/, '');
  const found: DnsLookup = type === 'PTR' ? { kind: 'elsewhere' } : await options.lookup(name, type);
  if (found.kind === 'elsewhere') {
    const upstream = await forward(resolver, name, type);
    response.header.rcode = upstream.rcode;
    response.answers.push(...upstream.records);
    return response;
  }
  // The sandbox is the authority for what was published in it.
  response.header.aa = 1;
  if (found.kind === 'nxdomain') response.header.rcode = RCODE.NXDOMAIN;
  else response.answers.push(...found.answers.map(resource));
  return response;
}

function bindUdp(server: dns2.UDPServer, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.bind(port, host, () => {
      server.off('error', reject);
      resolve(server.address().port);
    });
  });
}

function listenTcp(server: dns2.TCPServer, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/**
 * The sandbox's DNS server (dns2) on one port over UDP and TCP (TCP for answers too long for a datagram): what
 * workspaces published, then the upstream servers for every other name.
 */
export async function startSandboxDnsServer(options: SandboxDnsOptions): Promise<SandboxDnsServer> {
  const resolver = new Resolver({ timeout: UPSTREAM_TIMEOUT_MS, tries: 1 });
  if (options.upstream.length > 0) resolver.setServers([...options.upstream]);
  const handle: dns2.DnsHandler = (request, send) => {
    respond(request, options, resolver)
      .catch((err: unknown) => {
        options.logger.error({ err }, 'sandbox DNS could not answer');
        const failed = Packet.createResponseFromRequest(request);
        failed.header.rcode = RCODE.SERVFAIL;
        return failed;
      })
      .then((response) => send(response))
      .catch((err: unknown) => options.logger.debug({ err }, 'sandbox DNS answer not sent'));
  };
  for (let attempt = 1; ; attempt += 1) {
    const udp = dns2.createUDPServer(handle);
    const tcp = dns2.createTCPServer(handle);
    for (const server of [udp, tcp]) server.on('requestError', (err: Error) => options.logger.debug({ err }, 'sandbox DNS: unreadable query'));
    const inUse = (err: unknown) => (err as { code?: unknown }).code === 'EADDRINUSE';
    const taken = (err: unknown) => new Error(`the sandbox DNS server cannot listen on ${options.host}:${options.port}: the port is in use; set MAILROOM_SANDBOX_DNS_PORT to another (0 picks a free one)`, { cause: err });
    let port: number;
    try {
      port = await bindUdp(udp, options.port, options.host);
      await listenTcp(tcp, port, options.host);
    } catch (err) {
      try {
        udp.close();
      } catch {
        // never bound: nothing to close
      }
      // A free UDP port whose TCP twin is taken: pick another pair.
      if (options.port === 0 && attempt < BIND_ATTEMPTS && inUse(err)) continue;
      throw inUse(err) ? taken(err) : err;
    }
    // Resolvers may keep a TCP connection open; closing ends them rather than waiting for their idle time-out.
    const sockets = new Set<Socket>();
    tcp.on('connection', (socket: Socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
    return {
      address: `${options.host}:${port}`,
      port,
      close: () =>
        new Promise<void>((resolve) => {
          udp.close();
          tcp.close(() => resolve());
          for (const socket of sockets) socket.destroy();
        }),
    };
  }
}
