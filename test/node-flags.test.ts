import { describe, expect, it } from 'vitest';
import { missingServerFlags, SERVER_NODE_FLAGS } from '../src/cli/node-flags.js';

describe('the Node flags the server runs with', () => {
  it('are missing unless the command line or NODE_OPTIONS gives them, whatever their value', () => {
    expect(missingServerFlags([], undefined)).toEqual([...SERVER_NODE_FLAGS]);
    expect(missingServerFlags(['--enable-source-maps'], '--max-old-space-size=4096')).toEqual(['--max-semi-space-size=64']);
    expect(missingServerFlags(['--max-semi-space-size=64'], undefined)).toEqual([]);
    expect(missingServerFlags([], '--trace-warnings  --max-semi-space-size=32')).toEqual([]);
  });
});
