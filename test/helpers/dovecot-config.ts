// A private Dovecot's configuration, for the differential tests (dovecot.ts) and the `imap` bench's reference server
// (bench/lib/dovecot.ts): everything in one temp directory, no system configuration read, one loopback listener.
import { execFileSync } from 'node:child_process';
import { userInfo } from 'node:os';

export const DOVECOT_BINARY = '/usr/sbin/dovecot';

/** Who runs what: the login user, Dovecot's internal user and group, and the uid and gid the mail belongs to. */
export interface DovecotIdentities {
  loginUser: string;
  internalUser: string;
  internalGroup: string;
  uid: number;
  gid: number;
}

/** As root, login and mail processes must not be root (Dovecot refuses), so Dovecot's own users take them. */
export function dovecotIdentities(): DovecotIdentities {
  const me = userInfo();
  if (me.uid !== 0) {
    const group = execFileSync('id', ['-gn'], { encoding: 'utf8' }).trim();
    return { loginUser: me.username, internalUser: me.username, internalGroup: group, uid: me.uid, gid: me.gid };
  }
  const id = (flag: string) => Number(execFileSync('id', [flag, 'dovecot'], { encoding: 'utf8' }).trim());
  return { loginUser: 'dovenull', internalUser: 'dovecot', internalGroup: 'dovecot', uid: id('-u'), gid: id('-g') };
}

export interface DovecotConfigOptions {
  /** The temp directory it lives in: run, state, mail (a maildir per user) and home below it, and its log. */
  dir: string;
  port: number;
  who: DovecotIdentities;
  /** Every user's password (a static passdb). */
  password: string;
  /** The first line, a comment saying who wrote the file. */
  comment: string;
  /** Lines added before the passdb (a namespace, a limit). */
  extra?: string;
}

/** The dovecot.conf text. */
export function dovecotConfig({ dir, port, who, password, comment, extra = '' }: DovecotConfigOptions): string {
  return `# ${comment}; no system configuration is read
base_dir = ${dir}/run
state_dir = ${dir}/state
log_path = ${dir}/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain
default_login_user = ${who.loginUser}
default_internal_user = ${who.internalUser}
default_internal_group = ${who.internalGroup}
first_valid_uid = 1
mail_location = maildir:${dir}/mail/%u
${extra}passdb {
  driver = static
  args = password=${password}
}
userdb {
  driver = static
  args = uid=${who.uid} gid=${who.gid} home=${dir}/home/%u
}
service imap-login {
  chroot =
  inet_listener imap {
    address = 127.0.0.1
    port = ${port}
  }
  inet_listener imaps {
    port = 0
  }
}
service anvil {
  chroot =
}
service stats {
  chroot =
}
`;
}
