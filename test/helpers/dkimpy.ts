import { execFileSync } from 'node:child_process';

/** A Python 3 that can `import dkim` (Debian's python3-dkim installs into /usr/bin/python3's path); null when none can. */
export function dkimpyPython(): string | null {
  for (const candidate of ['/usr/bin/python3', 'python3']) {
    try {
      execFileSync(candidate, ['-c', 'import dkim'], { stdio: 'ignore' });
      return candidate;
    } catch {
      // not this one
    }
  }
  return null;
}

/** A Python 3 that can `import spf` (Debian's python3-spf, pyspf, with dnspython); null when none can. */
export function pyspfPython(): string | null {
  for (const candidate of ['/usr/bin/python3', 'python3']) {
    try {
      execFileSync(candidate, ['-c', 'import spf, dns.resolver'], { stdio: 'ignore' });
      return candidate;
    } catch {
      // not this one
    }
  }
  return null;
}
