import { describe, expect, it } from 'vitest';
import { jsonString } from './json-string.js';

describe('jsonString', () => {
  it('writes exactly what JSON.stringify writes, for plain, escaped, non-Latin and surrogate strings', () => {
    const samples = [
      '',
      'Order 1195609',
      'Any could friday draft … deadline',
      'quote " and backslash \\ inside',
      'tab\there, newline\nthere, nul \u0000, unit separator \u001f, del \u007f',
      'line separator \u2028 and paragraph separator \u2029',
      'emoji 📬 as a surrogate pair',
      'lone high \ud83d then text',
      'lone low \udcec at the end \udcec',
      'Ünïcödé, 中文, العربية',
      '</script><!--',
    ];
    // Every BMP code unit alone and inside text, so no class of character is missed.
    for (let unit = 0; unit <= 0xffff; unit++) samples.push(String.fromCharCode(unit), `a${String.fromCharCode(unit)}b`);
    for (const sample of samples) expect(jsonString(sample)).toBe(JSON.stringify(sample));
  });

  it('keeps text without escapes as it is, between quotes', () => {
    expect(jsonString('Order 1195609 …')).toBe('"Order 1195609 …"');
  });
});
