// Address lists (RFC 5322 section 3.4) as IMAP ENVELOPE needs them: name, route, mailbox, host, groups as a
// start marker (mailbox = group name) and an end marker (all NIL). Broken input is read as Dovecot reads it, with
// MISSING_MAILBOX / MISSING_DOMAIN / SYNTAX_ERROR / INVALID_ROUTE filled in where a piece is absent.
import { Rfc822Reader } from './rfc822-tokens.js';

export interface EnvelopeAddress {
  name: string | null;
  route: string | null;
  mailbox: string | null;
  domain: string | null;
}

/** At most this many addresses are read from one header (bounded work on hostile lists). */
export const MAX_ADDRESSES_PER_HEADER = 10_000;

class AddressParser {
  readonly list: EnvelopeAddress[] = [];
  private addr: EnvelopeAddress & { invalid: boolean } = blank();
  constructor(private readonly r: Rfc822Reader) {}

  private add(): void {
    const { name, route, mailbox, domain } = this.addr;
    this.list.push({ name, route, mailbox, domain });
    this.addr = blank();
  }

  private localPart(): number {
    const out: string[] = [];
    let ret: number;
    if (this.r.peek() === 0x22) ret = this.r.quotedString(out);
    else ret = this.nonStrictDotAtom(out);
    if (ret < 0) return -1;
    this.addr.mailbox = out.join('');
    return ret;
  }

  private nonStrictDotAtom(out: string[]): number {
    const r = this.r;
    let ret = -1;
    do {
      while (r.peek() === 0x2e) {
        out.push('.');
        r.pos++;
        if (r.end) return 0;
        ret = 1;
      }
      if (r.peek() === 0x40) break;
      ret = r.atom(out);
    } while (ret > 0 && r.peek() === 0x2e);
    return ret;
  }

  private domain(): number {
    const out: string[] = [];
    const ret = this.r.domain(out);
    if (ret < 0) return -1;
    this.addr.domain = out.join('');
    return ret;
  }

  private domainList(): number {
    const r = this.r;
    let route = '';
    for (;;) {
      if (r.end) return 0;
      if (r.peek() !== 0x40) break;
      if (route.length > 0) route += ',';
      route += '@';
      const out: string[] = [];
      const ret = r.domain(out);
      route += out.join('');
      if (ret <= 0) return ret;
      while (r.skipLwsp() > 0 && r.peek() === 0x2c) r.pos++;
    }
    this.addr.route = route;
    return 1;
  }

  private angleAddr(): number {
    const r = this.r;
    r.pos++;
    if (r.skipLwsp() <= 0) return -1;
    if (r.peek() === 0x40) {
      if (this.domainList() > 0 && r.peek() === 0x3a) r.pos++;
      else {
        this.addr.route = 'INVALID_ROUTE';
        if (r.end) return -1;
      }
      if (r.skipLwsp() <= 0) return -1;
    }
    if (r.peek() !== 0x3e) {
      if (this.localPart() <= 0) return -1;
      if (r.peek() === 0x40 && this.domain() <= 0) return -1;
    }
    if (r.peek() !== 0x3e) return -1;
    r.pos++;
    return r.skipLwsp();
  }

  private nameAddr(): number {
    const r = this.r;
    const out: string[] = [];
    if (r.phrase(out) <= 0 || r.peek() !== 0x3c) return -1;
    const name = out.join('');
    this.addr.name = name === '' ? null : name;
    if (this.angleAddr() < 0) {
      this.addr.domain = 'SYNTAX_ERROR';
      this.addr.invalid = true;
    }
    return r.end ? 0 : 1;
  }

  private addrSpec(): number {
    const r = this.r;
    r.lastComment = '';
    const quoted = r.peek() === 0x22;
    let ret = this.localPart();
    if (ret <= 0) this.addr.invalid = true;
    let ret2 = -2;
    if (ret !== 0 && !r.end && r.peek() === 0x40) {
      ret2 = this.domain();
      if (ret2 <= 0) ret = ret2;
    }
    if (r.lastComment.length > 0) this.addr.name = r.lastComment;
    else if (ret2 === -2) {
      // A lone word is a mailbox, but if more words follow it was a display name.
      const out: string[] = [(this.addr.mailbox ?? '') + ' '];
      const before = out.join('').length;
      r.phrase(out);
      const text = out.join('');
      if (text.length !== before) {
        this.addr.mailbox = null;
        this.addr.name = text;
      } else if (!quoted) this.addr.domain = '';
      this.addr.invalid = true;
      ret = -1;
    }
    return ret;
  }

  private fixed(): void {
    if (this.addr.mailbox === null) this.addr.mailbox = 'MISSING_MAILBOX';
    if (this.addr.domain === null || this.addr.domain === '') this.addr.domain = 'MISSING_DOMAIN';
    this.add();
  }

  mailbox(): number {
    const start = this.r.pos;
    let ret = this.nameAddr();
    if (ret < 0) {
      this.r.pos = start;
      ret = this.addrSpec();
      const a = this.addr;
      if (a.invalid && a.name === null && a.mailbox !== null && a.domain === null) {
        a.name = a.mailbox;
        a.mailbox = null;
      }
    }
    this.fixed();
    return ret;
  }

  private group(): number {
    const r = this.r;
    const out: string[] = [];
    if (r.phrase(out) <= 0 || r.peek() !== 0x3a) return -1;
    r.pos++;
    let ret = r.skipLwsp();
    this.addr.mailbox = out.join('');
    this.add();
    if (ret > 0 && r.peek() !== 0x3b) {
      for (;;) {
        this.mailbox();
        if (r.end || r.peek() !== 0x2c) break;
        r.pos++;
        if (r.skipLwsp() <= 0) {
          ret = -1;
          break;
        }
      }
    }
    if (ret >= 0) {
      if (r.end || r.peek() !== 0x3b) ret = -1;
      else {
        r.pos++;
        ret = r.skipLwsp();
      }
    }
    this.add();
    return ret === 0 ? 0 : 1;
  }

  private address(): number {
    const start = this.r.pos;
    const ret = this.group();
    if (ret >= 0) return ret;
    this.r.pos = start;
    return this.mailbox();
  }

  addressList(): void {
    const r = this.r;
    for (let budget = MAX_ADDRESSES_PER_HEADER; budget > 0; budget--) {
      if (this.address() === 0) break;
      if (r.end || r.peek() !== 0x2c) break;
      r.pos++;
      const ret = r.skipLwsp();
      if (ret <= 0) {
        if (ret < 0) this.fixed();
        break;
      }
    }
  }
}

function blank(): EnvelopeAddress & { invalid: boolean } {
  return { name: null, route: null, mailbox: null, domain: null, invalid: false };
}

/** The addresses of one header value (latin1), in order; groups appear as start and end markers. */
export function parseAddressList(value: string): EnvelopeAddress[] {
  const reader = new Rfc822Reader(value, true);
  const parser = new AddressParser(reader);
  if (reader.skipLwsp() > 0) parser.addressList();
  return parser.list;
}
