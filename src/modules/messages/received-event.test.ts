import { describe, expect, it } from 'vitest';
import { cutUtf8, eventText, EVENT_TEXT_BYTES } from './received-event.js';

describe('cutUtf8', () => {
  it('keeps a text that fits, whole', () => {
    expect(cutUtf8('héllo', 6)).toEqual({ text: 'héllo', truncated: false });
    expect(cutUtf8('', 4)).toEqual({ text: '', truncated: false });
  });
  it('cuts before a character that would not fit whole (2, 3 and 4 byte characters)', () => {
    expect(cutUtf8('aé', 2)).toEqual({ text: 'a', truncated: true });
    expect(cutUtf8('a✓b', 3)).toEqual({ text: 'a', truncated: true });
    expect(cutUtf8('a✓b', 4)).toEqual({ text: 'a✓', truncated: true });
    expect(cutUtf8('ab😀', 5)).toEqual({ text: 'ab', truncated: true });
    expect(cutUtf8('ab😀c', 6)).toEqual({ text: 'ab😀', truncated: true });
  });
  it('cuts at the byte limit exactly when characters are ASCII, and reads only the start of a huge text', () => {
    const cut = cutUtf8('x'.repeat(10_000_000), EVENT_TEXT_BYTES);
    expect(cut.text.length).toBe(EVENT_TEXT_BYTES);
    expect(cut.truncated).toBe(true);
  });
});

describe('eventText', () => {
  it('takes the text part, else the text of the HTML part, else null', () => {
    expect(eventText({ text: 'plain', html: '<p>html</p>' })).toEqual({ text: 'plain', truncated: false });
    expect(eventText({ text: null, html: '<p>only <i>html</i></p>' }).text!.replace(/\s+/g, ' ').trim()).toBe('only html');
    expect(eventText({ text: null, html: null })).toEqual({ text: null, truncated: false });
  });
});
