import dns2 from 'dns2';

const { Packet } = dns2;

export interface Zone {
  A?: string[];
  AAAA?: string[];
  MX?: Array<{ exchange: string; priority: number }>;
  TXT?: string[];
  /** Answer every question for the name with SERVFAIL (a broken authoritative server). */
  SERVFAIL?: boolean;
}

/** A real DNS server on loopback (dns2) answering from a zone map the test can change at any time. */
export interface TestDnsServer {
  /** `ip:port`, for MAILROOM_DNS_SERVERS. */
  address: string;
  zones: Map<string, Zone>;
  set(name: string, zone: Zone): void;
  queries: Array<{ name: string; type: number }>;
  /** Called for each question before it is answered (a test may change the zones for later questions). */
  onQuery: ((name: string, type: number) => void) | null;
  close(): Promise<void>;
}

/** TXT strings are at most 255 octets each (RFC 1035 section 3.3.14); long records are split. */
function chunks(text: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += 255) out.push(text.slice(i, i + 255));
  return out.length > 0 ? out : [''];
}

export async function startDnsServer(): Promise<TestDnsServer> {
  const zones = new Map<string, Zone>();
  const queries: TestDnsServer['queries'] = [];
  const hooks: { onQuery: TestDnsServer['onQuery'] } = { onQuery: null };
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = Packet.createResponseFromRequest(request);
      const question = request.questions[0];
      if (question) {
        const name = question.name.toLowerCase().replace(/\.$/, '');
        queries.push({ name, type: question.type });
        hooks.onQuery?.(name, question.type);
        const zone = zones.get(name);
        if (!zone) {
          response.header.rcode = 3; // NXDOMAIN
        } else if (zone.SERVFAIL) {
          response.header.rcode = 2;
        } else {
          const base = { name: question.name, class: Packet.CLASS.IN, ttl: 60 };
          if (question.type === Packet.TYPE.A) for (const address of zone.A ?? []) response.answers.push({ ...base, type: Packet.TYPE.A, address } as never);
          if (question.type === Packet.TYPE.AAAA) for (const address of zone.AAAA ?? []) response.answers.push({ ...base, type: Packet.TYPE.AAAA, address } as never);
          if (question.type === Packet.TYPE.MX) for (const mx of zone.MX ?? []) response.answers.push({ ...base, type: Packet.TYPE.MX, ...mx } as never);
          if (question.type === Packet.TYPE.TXT) for (const txt of zone.TXT ?? []) response.answers.push({ ...base, type: Packet.TYPE.TXT, data: chunks(txt) } as never);
        }
      }
      void send(response);
    },
  });
  const addresses = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  const udp = (addresses as { udp?: { port: number } }).udp;
  if (!udp) throw new Error('dns2 did not report its UDP port');
  return {
    address: `127.0.0.1:${udp.port}`,
    zones,
    set: (name, zone) => zones.set(name.toLowerCase(), zone),
    queries,
    get onQuery() {
      return hooks.onQuery;
    },
    set onQuery(hook) {
      hooks.onQuery = hook;
    },
    close: () => server.close(),
  };
}
