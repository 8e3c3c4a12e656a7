import { describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { senderWorld } from './helpers/outbound.js';

describe(`outbound delivery obeys the address rules (${TEST_DIALECT})`, () => {
  describe('without MAILROOM_DELIVERY_ALLOW_CIDRS', () => {
    // '' is unset: the shared test setting (loopback exempt) is taken away.
    const sender = senderWorld({ env: { MAILROOM_DELIVERY_ALLOW_CIDRS: '' }, mx: [] });
    const { world } = sender;

    it('fails a recipient whose MX points at 127.0.0.1, naming the address, and connects nowhere', async () => {
      world.dns('internal.test', { MX: [{ exchange: 'mx.internal.test', priority: 10 }] });
      world.dns('mx.internal.test', { A: ['127.0.0.1'] });
      const before = world.peer.connections;
      const item = await sender.sendAndWait('victim@internal.test');
      expect(item.status).toBe('failed');
      expect(item.last_error).toContain('mx.internal.test resolves to 127.0.0.1, a loopback address');
      expect(item.recipients).toEqual([expect.objectContaining({ address: 'victim@internal.test', status: 'failed', response: expect.stringContaining('127.0.0.1') as string })]);
      expect(world.peer.connections).toBe(before);
    });

    it.each([
      ['a private A record (implicit MX)', { A: ['10.1.2.3'] }, '10.1.2.3, a private address'],
      ['an IPv4-mapped loopback AAAA record', { AAAA: ['::ffff:7f00:1'] }, 'a loopback address'],
      ['a loopback AAAA record', { AAAA: ['::1'] }, '::1, a loopback address'],
      ['a link-local A record (cloud metadata)', { A: ['169.254.169.254'] }, '169.254.169.254, a link-local address'],
    ])('fails a recipient whose domain has only %s', async (_name, zone, reason) => {
      const domain = `d${Math.random().toString(36).slice(2, 8)}.test`;
      world.dns(domain, zone);
      const before = world.peer.connections;
      const item = await sender.sendAndWait(`someone@${domain}`);
      expect(item.status).toBe('failed');
      expect(item.last_error).toContain(`${domain} resolves to`);
      expect(item.last_error).toContain(reason);
      expect(world.peer.connections).toBe(before);
    });
  });

  describe('with MAILROOM_DELIVERY_ALLOW_CIDRS=127.0.0.0/8', () => {
    const sender = senderWorld({ env: { MAILROOM_DELIVERY_ALLOW_CIDRS: '127.0.0.0/8' }, mx: [] });
    const { world } = sender;

    it('delivers to an allowed address, skips refused ones beside it, and still refuses the rest', async () => {
      world.dns('lab.test', { MX: [{ exchange: 'mx.lab.test', priority: 10 }] });
      world.dns('mx.lab.test', { A: ['10.0.0.7', '127.0.0.1'] });
      const item = await sender.sendAndWait('user@lab.test');
      expect(item.status).toBe('accepted');
      expect(world.peer.accepted.some((m) => m.recipients.includes('user@lab.test'))).toBe(true);

      world.dns('private.test', { A: ['192.168.1.1'] });
      const refused = await sender.sendAndWait('user@private.test');
      expect(refused.status).toBe('failed');
      expect(refused.last_error).toContain('192.168.1.1, a private address');
    });
  });

  describe('the configured relay', () => {
    const sender = senderWorld({ env: (peer) => ({ MAILROOM_DELIVERY_ALLOW_CIDRS: '', MAILROOM_SMTP_RELAY: `smtp://127.0.0.1:${peer!.port}` }), mx: [] });
    const { world } = sender;

    it('is exempt: the operator chose it', async () => {
      const item = await sender.sendAndWait('anyone@elsewhere.test');
      expect(item.status).toBe('accepted');
      expect(world.peer.accepted.some((m) => m.recipients.includes('anyone@elsewhere.test'))).toBe(true);
    });
  });
});
