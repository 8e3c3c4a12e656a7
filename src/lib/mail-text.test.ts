import { describe, expect, it } from 'vitest';
import { searchDocumentOf, searchEntryOf, tsvectorOf, type SearchSource } from './mail-text.js';

const message = (over: Partial<SearchSource> = {}): SearchSource => ({
  subject: 'Invoice für Zoë',
  from: { name: 'Ann Lee', address: 'ann@example.com' },
  to: [{ name: '', address: 'bob@example.net' }],
  cc: [],
  text: 'Pay the invoice, Bob. The invoice is due.',
  html: null,
  attachments: [{ filename: 'invoice.pdf' }],
  ...over,
});

describe('the search entry of a message', () => {
  it('gives the words of each field and one tsvector with a position a word, fields a step apart', () => {
    const entry = searchEntryOf(message());
    expect(entry.document).toEqual({ subject: 'invoice fur zoe', from: 'ann lee ann example com', to: 'bob example net', cc: '', filename: 'invoice pdf', body: 'pay the invoice bob the invoice is due' });
    expect(entry.tsvector).toBe(
      "'invoice':2,16,21,24 's.invoice':2 'fur':3 's.fur':3 'zoe':4 's.zoe':4 'ann':6,8 'f.ann':6,8 'lee':7 'f.lee':7 " +
        "'example':9,13 'f.example':9 'com':10 'f.com':10 'bob':12,22 't.bob':12 't.example':13 'net':14 't.net':14 " +
        "'n.invoice':16 'pdf':17 'n.pdf':17 'pay':19 'the':20,23 'is':25 'due':26",
    );
  });

  it('builds the same tsvector from the joined document (as a migration does) and leaves it out for FTS5', () => {
    const source = message({ text: 'word '.repeat(400) + 'end', cc: [{ name: 'Cy', address: 'cy@example.org' }] });
    expect(tsvectorOf(searchDocumentOf(source))).toBe(searchEntryOf(source).tsvector);
    expect(searchEntryOf(source, 'fts5')).toEqual({ document: searchDocumentOf(source), tsvector: '' });
  });

  it('keeps at most 255 positions of a word and no position past 16383', () => {
    const vector = searchEntryOf(message({ subject: '', from: null, to: [], attachments: [], text: 'word '.repeat(20_000) + 'last' })).tsvector;
    const [word, last] = vector.split(' ');
    expect(word!.split(',')).toHaveLength(255);
    expect(last).toBe("'last':16383");
  });
});
