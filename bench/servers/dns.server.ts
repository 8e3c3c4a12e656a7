/**
 * The bench's DNS server, run as its own process: the test suite's dns2 loopback server
 * (test/helpers/dns-server.ts). Without zones (the smtp suite) every SPF/DMARC lookup of the service
 * gets NXDOMAIN at once instead of waiting for a real resolver (or timing out without network).
 *
 *   BENCH_DNS_ZONES  optional JSON object, name → zone ({"A": [...], "MX": [{"exchange", "priority"}],
 *                    "TXT": [...]}), e.g. the outbound suite's MX for its sink's domain; every other
 *                    name is NXDOMAIN
 *
 * Prints `listening 127.0.0.1:PORT` when ready. On SIGTERM it prints `queries <json>` (how many of
 * each type it answered) before it exits, so the bench can report the lookups per message.
 */
import { startDnsServer, type Zone } from '../../test/helpers/dns-server.js';

const dns = await startDnsServer();
const zones = process.env.BENCH_DNS_ZONES?.trim();
if (zones) for (const [name, zone] of Object.entries(JSON.parse(zones) as Record<string, Zone>)) dns.set(name, zone);
console.log(`listening ${dns.address}`);

/** RR type numbers the service asks for, by name (others are printed as numbers). */
const TYPES: Record<number, string> = { 1: 'A', 12: 'PTR', 15: 'MX', 16: 'TXT', 28: 'AAAA' };

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  const byType: Record<string, number> = {};
  for (const q of dns.queries) {
    const type = TYPES[q.type] ?? String(q.type);
    byType[type] = (byType[type] ?? 0) + 1;
  }
  console.log(`queries ${JSON.stringify({ total: dns.queries.length, byType })}`);
  dns.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
