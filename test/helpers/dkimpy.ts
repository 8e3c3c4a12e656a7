import { execFileSync } from 'node:child_process';

/** A Python 3 that can import `modules` (Debian's python3-* packages install into /usr/bin/python3's path); null when none can. */
function pythonWith(modules: string): string | null {
  for (const candidate of ['/usr/bin/python3', 'python3']) {
    try {
      execFileSync(candidate, ['-c', `import ${modules}`], { stdio: 'ignore' });
      return candidate;
    } catch {
      // not this one
    }
  }
  return null;
}

/** A Python 3 that can `import dkim` (Debian's python3-dkim); null when none can. */
export const dkimpyPython = (): string | null => pythonWith('dkim');

/** A Python 3 that can `import spf` (Debian's python3-spf, pyspf, with dnspython); null when none can. */
export const pyspfPython = (): string | null => pythonWith('spf, dns.resolver');
