import { describe, expect, it } from 'vitest';
import { iso } from './clock.js';

describe('iso', () => {
  it('writes exactly what toISOString writes, across days, years, the epoch and the edges of four-digit years', () => {
    const samples = [
      0, 1, 999, 1000, 59_999, 3_599_999, 86_399_999, 86_400_000, -1, -86_400_001, 951_782_400_000 /* 2000-02-29 */, 1_795_461_019_431,
      -62_167_219_200_000, -62_167_219_200_001, 253_402_300_799_999, 253_402_300_800_000, 8.64e15, -8.64e15,
    ];
    // And a walk over ten years in uneven steps, so the cached day changes back and forth.
    let ms = 1_600_000_000_000;
    for (let i = 0; i < 20_000; i++) {
      ms += ((i * 7_919_993) % 86_400_000) * (i % 3 === 0 ? -0.5 : 1);
      samples.push(Math.round(ms));
    }
    for (const sample of samples) expect(iso(sample), String(sample)).toBe(new Date(sample).toISOString());
    expect(iso(null)).toBeNull();
  });
});
