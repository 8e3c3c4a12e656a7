import { describe, expect, it } from 'vitest';
import { isReservedLocalPart } from './reserved.js';

describe('reserved local parts', () => {
  it.each([
    'postmaster',
    'PostMaster',
    'postmaster_',
    'postmaster=x',
    'postmaster+x',
    'post.master',
    'mailer_daemon',
    'mailer-daemon',
    'mailerdaemon',
    'no_reply',
    'no.reply',
    'noreply',
    '_abuse_',
    // RFC 2142's role mailboxes.
    'info',
    'marketing',
    'sales',
    'support',
    'abuse',
    'noc',
    'security',
    'hostmaster',
    'usenet',
    'news',
    'webmaster',
    'www',
    'uucp',
    'ftp',
    'Web_Master=billing',
    'bounces+msg_01jd0000000000000000000000-0123456789ab',
  ])('%s is reserved', (local) => {
    expect(isReservedLocalPart(local)).toBe(true);
  });

  it.each(['postmasters', 'admin-team', 'rooted', 'my.abuse.desk', 'newsletter', 'helpdesk', 'orders', 'information', 'x=postmaster', 'sales_team'])('%s is not', (local) => {
    expect(isReservedLocalPart(local)).toBe(false);
  });
});
