import { describe, expect, it } from 'vitest';
import { createSecretBox } from './secret-box.js';
import { createUnsubscribeTokens } from './unsubscribe-token.js';
import { createReturnPaths } from './verp.js';

const box = createSecretBox(Buffer.alloc(32, 7));
const tokens = createUnsubscribeTokens(box, 'https://mail.example.com/', 'Bounce.Example');
const ID = 'msg_01jd0000000000000000000000';

describe('unsubscribe tokens', () => {
  it('name the message and the place, in the link and the mailto address of one header field', () => {
    const token = tokens.token(ID, 3);
    expect(token).toMatch(new RegExp(`^${ID}\\.3-[0-9a-f]{16}$`));
    expect(tokens.parse(token)).toEqual({ messageId: ID, recipient: 3 });
    expect(tokens.parse(token.toUpperCase().replace('MSG_', 'msg_'))).toEqual({ messageId: ID, recipient: 3 });
    expect(tokens.headerLines(ID, 3)).toBe(
      `List-Unsubscribe: <https://mail.example.com/u/${token}>, <mailto:unsubscribe+${token}@bounce.example>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n`,
    );
    expect(tokens.parseAddress(`Unsubscribe+${token}@BOUNCE.example`)).toEqual({ kind: 'valid', messageId: ID, recipient: 3 });
  });

  it('refuse what this key did not make', () => {
    const token = tokens.token(ID, 0);
    const tag = token.slice(-16);
    const verpTag = /-([0-9a-f]{12})@/.exec(createReturnPaths(box, 'bounce.example').address(ID, 0))![1]!;
    const other = createUnsubscribeTokens(createSecretBox(Buffer.alloc(32, 8)), 'https://x.example', 'bounce.example').token(ID, 0);
    for (const bad of [other, token.replace('.0-', '.1-'), token.replace('.0-', '.00-'), `${token}0`, token.slice(0, -1), `${ID}.0-${verpTag}0000`, token.replace(tag, tag.replace(/./, (c) => (c === '0' ? '1' : '0'))), '', 'x'.repeat(10_000)]) {
      expect(tokens.parse(bad), bad).toBeNull();
    }
    expect(tokens.parseAddress(`unsubscribe+${other}@bounce.example`)).toEqual({ kind: 'forged' });
    expect(tokens.parseAddress(`unsubscribe@bounce.example`)).toEqual({ kind: 'other' });
    expect(tokens.parseAddress(`unsubscribe+${token}@other.example`)).toEqual({ kind: 'other' });
    expect(tokens.parseAddress(`bounces+${token}@bounce.example`)).toEqual({ kind: 'other' });
  });
});
