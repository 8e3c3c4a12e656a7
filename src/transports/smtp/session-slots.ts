import ipaddr from 'ipaddr.js';
import type { SMTPServer } from 'smtp-server';
import { createFairGate, type Release } from '../../lib/fair-gate.js';
import type { Logger } from '../../lib/logger.js';

/** smtp-server's object for one connection (the session's socket side); the package names its type only inside. */
export type SmtpConnection = SMTPServer['connections'] extends Set<infer C> ? C : never;

/** Defaults of the session bounds (settings MAILROOM_SMTP_MAX_SESSION_MS, _MAX_COMMANDS, _IDLE_MS). */
export const DEFAULT_MAX_SESSION_MS = 10 * 60_000;
export const DEFAULT_MAX_COMMANDS = 1000;
export const DEFAULT_IDLE_MS = 60_000;
/** How long a message still arriving when its session's lifetime ends may go on arriving before 421 cuts it. */
export const LIFETIME_DATA_GRACE_MS = 5 * 60_000;

/** The commands that move mail forward; NOOP, RSET, HELP, VRFY, EHLO and the like do not keep a session from idling. */
const MAIL_COMMANDS = new Set(['MAIL', 'RCPT', 'DATA']);

/** The text of the 421 that ends a session, by the bound that ended it. */
const CLOSINGS = {
  evicted: '4.4.2 Idle session closed to make room for another, try again later',
  lifetime: '4.4.2 Session time limit reached, closing connection',
  idle: '4.4.2 Idle for too long, closing connection',
  commands: '4.7.0 Too many commands in one session, closing connection',
} as const;

/**
 * The group a client address counts in for the per-address limit: its IPv4 /24 or IPv6 /64 (the block one
 * operator usually holds), an IPv4-mapped IPv6 address as the IPv4 one. Anything else is a group of its own.
 */
export function addressGroup(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const ip = ipaddr.process(address);
  if (ip.kind() === 'ipv4') return `${ip.toByteArray().slice(0, 3).join('.')}.0/24`;
  const prefix = (ip as ipaddr.IPv6).parts.slice(0, 4);
  return `${new ipaddr.IPv6([...prefix, 0, 0, 0, 0]).toString()}/64`;
}

export interface SessionSlotOptions {
  maxClients: number;
  /** Sessions of one address group (addressGroup). */
  maxPerGroup: number;
  maxSessionMs: number;
  maxCommands: number;
  /** Longest time without a MAIL, RCPT or DATA (or since the greeting) outside a message's data. */
  idleMs: number;
  logger: Logger;
  /** LIFETIME_DATA_GRACE_MS unless a test needs it short. */
  dataGraceMs?: number;
}

/**
 * Session slots of the inbound listener: a process-wide cap and a cap per address group (a fair gate keyed
 * by group), a lifetime, a command count and an idle time per session, and room made for a new session by
 * closing the oldest idle one. Keyed by smtp-server's connection id (which is the session's id).
 */
export interface SessionSlots {
  /** Counts the session in, making room if needed; the text of the 421 refusal when it cannot. */
  admit(connection: SmtpConnection): string | null;
  /** The message's data began; then it arrived in full and is being stored. */
  dataStarted(id: string): void;
  dataReceived(id: string): void;
  /** Gives smtp-server the answer to the data (`answer`), then ends the session if its lifetime passed meanwhile. */
  answered(id: string, answer: () => void): void;
  /** The session closed: its slot is free. Unknown ids (refused, or already closed by a limit) are ignored. */
  release(id: string): void;
}

interface Slot {
  connection: SmtpConnection;
  group: string;
  release: Release;
  lastMail: number;
  commands: number;
  /** The data of the transaction: not begun, arriving, or received and being stored. */
  data: 'none' | 'arriving' | 'storing';
  /** The lifetime passed while a message was in its data; the session ends once that message is answered. */
  expired: boolean;
  timers: Partial<Record<'lifetime' | 'idle' | 'grace', NodeJS.Timeout>>;
}

const later = (ms: number, run: () => void) => setTimeout(run, ms).unref();

export function createSessionSlots(options: SessionSlotOptions): SessionSlots {
  const gate = createFairGate({ total: options.maxClients, perKey: options.maxPerGroup });
  const groupCap = Math.min(options.maxPerGroup, options.maxClients);
  // Map order is admission order, so the first idle slot found is the oldest.
  const slots = new Map<string, Slot>();

  function forget(slot: Slot): boolean {
    if (slots.get(slot.connection.id) !== slot) return false;
    slots.delete(slot.connection.id);
    slot.release();
    for (const timer of Object.values(slot.timers)) clearTimeout(timer);
    return true;
  }

  function end(slot: Slot, why: keyof typeof CLOSINGS): void {
    if (!forget(slot)) return;
    options.logger.info({ ip: slot.connection.remoteAddress, why }, 'smtp session closed by a limit');
    // smtp-server closes the connection after any 421 it sends.
    slot.connection.send(421, CLOSINGS[why], false);
  }

  /** Idle: no transaction in progress (before MAIL FROM, or after RSET or an answered message). */
  function oldestIdle(group: string | null): Slot | undefined {
    for (const slot of slots.values()) {
      if (group !== null && slot.group !== group) continue;
      if (slot.data === 'none' && !slot.connection.session.envelope.mailFrom) return slot;
    }
    return undefined;
  }

  /** A full group makes room among its own sessions only; a full process among everyone's. */
  function makeRoom(group: string): Release | null {
    const victim = oldestIdle(gate.activeFor(group) >= groupCap ? group : null);
    if (!victim) return null;
    end(victim, 'evicted');
    return gate.tryAcquire(group);
  }

  function watchIdle(slot: Slot, delay: number): void {
    slot.timers.idle = later(delay, () => {
      const quiet = Date.now() - slot.lastMail;
      if (slot.data !== 'none') watchIdle(slot, options.idleMs);
      else if (quiet >= options.idleMs) end(slot, 'idle');
      else watchIdle(slot, options.idleMs - quiet);
    });
  }

  function onLifetime(slot: Slot): void {
    if (slot.data === 'none') return end(slot, 'lifetime');
    slot.expired = true;
    slot.timers.grace = later(options.dataGraceMs ?? LIFETIME_DATA_GRACE_MS, () => {
      if (slot.data === 'arriving') end(slot, 'lifetime');
    });
  }

  /** Whether a command may run: counts it, and ends the session instead when a bound is reached. */
  function mayRun(slot: Slot, command: Buffer): boolean {
    if (!slots.has(slot.connection.id)) return true;
    slot.commands += 1;
    const bound = slot.commands > options.maxCommands ? 'commands' : slot.expired && slot.data === 'none' ? 'lifetime' : null;
    if (bound) {
      end(slot, bound);
      return false;
    }
    const name = /^\S*/.exec(command.subarray(0, 8).toString('latin1'))![0].toUpperCase();
    if (MAIL_COMMANDS.has(name)) slot.lastMail = Date.now();
    return true;
  }

  /**
   * smtp-server has no hook per command, so its dispatcher is wrapped (typed by its declarations; the tests of
   * the command count and of the idle time fail if an upgrade renames it). Message data never passes here.
   */
  function watchCommands(slot: Slot): void {
    const connection = slot.connection;
    const dispatch = connection._onCommand.bind(connection);
    connection._onCommand = (command, callback) => {
      if (mayRun(slot, command)) dispatch(command, callback);
    };
  }

  return {
    admit(connection) {
      const group = addressGroup(connection.remoteAddress);
      const release = gate.tryAcquire(group) ?? makeRoom(group);
      if (!release) {
        return gate.activeFor(group) >= groupCap ? `4.7.0 Too many connections from ${group}, try again later` : '4.7.0 Too many connections, try again later';
      }
      const slot: Slot = { connection, group, release, lastMail: Date.now(), commands: 0, data: 'none', expired: false, timers: {} };
      slots.set(connection.id, slot);
      slot.timers.lifetime = later(options.maxSessionMs, () => onLifetime(slot));
      watchIdle(slot, options.idleMs);
      watchCommands(slot);
      return null;
    },
    dataStarted(id) {
      const slot = slots.get(id);
      if (slot) slot.data = 'arriving';
    },
    dataReceived(id) {
      const slot = slots.get(id);
      if (slot) slot.data = 'storing';
    },
    answered(id, answer) {
      const slot = slots.get(id);
      if (slot) {
        slot.data = 'none';
        slot.lastMail = Date.now();
      }
      answer();
      if (slot?.expired) end(slot, 'lifetime');
    },
    release(id) {
      const slot = slots.get(id);
      if (slot) forget(slot);
    },
  };
}
