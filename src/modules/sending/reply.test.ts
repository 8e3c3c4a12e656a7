import { describe, expect, it } from 'vitest';
import { headerMessageIds, MAX_REFERENCES, rawHeaderFields, replyHeaders } from './reply.js';

const field = (name: string, value: string) => ({ name, value });

describe('reply headers', () => {
  it.each([
    ['<a@x> <b@x>', ['a@x', 'b@x']],
    ['<CAbc@Mail.Example>', ['CAbc@Mail.Example']],
    ['  <a@x>,\t<b@x>  ', ['a@x', 'b@x']],
    ['bare@x other@x', ['bare@x', 'other@x']],
    ['', []],
  ])('reads ids from %j', (value, ids) => {
    expect(headerMessageIds(value)).toEqual(ids);
  });

  it.each<[string, Array<{ name: string; value: string }>, string | null, { inReplyTo: string | undefined; references: string[] }]>([
    ['References, then the parent', [field('Message-ID', '<P@x>'), field('References', '<r1@x> <r2@x>')], 'p@x', { inReplyTo: 'P@x', references: ['r1@x', 'r2@x', 'P@x'] }],
    ['In-Reply-To when there is no References', [field('message-id', '<p@x>'), field('In-Reply-To', '<r@x>')], 'p@x', { inReplyTo: 'p@x', references: ['r@x', 'p@x'] }],
    ['not an In-Reply-To of several ids', [field('Message-ID', '<p@x>'), field('In-Reply-To', '<a@x> <b@x>')], 'p@x', { inReplyTo: 'p@x', references: ['p@x'] }],
    ['the stored id when the header is missing', [field('References', '<r@x>')], 'stored@x', { inReplyTo: 'stored@x', references: ['r@x', 'stored@x'] }],
    ['nothing to answer', [], null, { inReplyTo: undefined, references: [] }],
    ['duplicates once, the parent last', [field('Message-ID', '<p@x>'), field('References', '<r@x> <R@x> <P@x>')], 'p@x', { inReplyTo: 'p@x', references: ['r@x', 'p@x'] }],
  ])('%s', (_name, fields, stored, expected) => {
    expect(replyHeaders(fields, stored)).toEqual(expected);
  });

  it('keeps the root and the most recent ids of a long thread', () => {
    const chain = Array.from({ length: 80 }, (_, i) => `<r${i}@x>`).join(' ');
    const { references } = replyHeaders([field('Message-ID', '<p@x>'), field('References', chain)], 'p@x');
    expect(references).toHaveLength(MAX_REFERENCES);
    expect(references[0]).toBe('r0@x');
    expect(references.at(-2)).toBe('r79@x');
    expect(references.at(-1)).toBe('p@x');
  });

  it('reads unfolded fields from a raw header block', () => {
    const raw = Buffer.from('Message-ID: <p@x>\r\nReferences: <a@x>\r\n <b@x>\r\nSubject: hi\r\n\r\nReferences: <body@x>\r\n');
    expect(rawHeaderFields(raw)).toEqual([field('Message-ID', '<p@x>'), field('References', '<a@x> <b@x>'), field('Subject', 'hi')]);
  });
});
