import { describe, expect, it } from 'vitest';
import { chooseLogFormat, type LogFormat, type LogFormatSetting } from './logger.js';

describe('chooseLogFormat', () => {
  it('is pretty for a terminal and JSON for anything else unless told', () => {
    const cases: Array<[LogFormatSetting, boolean, LogFormat]> = [
      ['auto', true, 'pretty'],
      ['auto', false, 'json'],
      ['json', true, 'json'],
      ['json', false, 'json'],
      ['pretty', true, 'pretty'],
      ['pretty', false, 'pretty'],
    ];
    for (const [setting, tty, format] of cases) expect(chooseLogFormat(setting, tty), `${setting} tty=${tty}`).toBe(format);
  });
});
