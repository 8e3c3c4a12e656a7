import { describe, expect, it } from 'vitest';
import { safeFilename } from './download.js';

describe('file names from the server', () => {
  const cases: Array<[string | null, string]> = [
    ['receipt.pdf', 'receipt.pdf'],
    ['../../etc/passwd', 'passwd'],
    ['..\\..\\boot.ini', 'boot.ini'],
    ['..', 'fallback'],
    ['.bashrc', 'bashrc'],
    ['a\u001b[2Jb.txt', 'a_[2Jb.txt'],
    ['naïve résumé.txt', 'naïve résumé.txt'],
    [null, 'fallback'],
  ];
  it.each(cases)('%s → %s', (name, expected) => expect(safeFilename(name, 'fallback')).toBe(expected));
});
