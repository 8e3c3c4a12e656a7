import { readFileSync } from 'node:fs';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

// The Node versions the README promises are package.json's `engines.node`; every package `npm ci` installs must
// run on all of them, or npm warns EBADENGINE and the promise is false for someone.
interface LockEntry {
  version?: string;
  engines?: { node?: string } | string[];
}
interface Lockfile {
  packages: Record<string, LockEntry>;
}

const root = new URL('../', import.meta.url);
const promised = (JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { engines: { node: string } }).engines.node;
const lock = JSON.parse(readFileSync(new URL('package-lock.json', root), 'utf8')) as Lockfile;

/** The lock-file packages whose `engines.node` leaves out some Node version in `range`. */
function packagesExcluding(range: string, packages: Record<string, LockEntry>): string[] {
  const out: string[] = [];
  for (const [path, entry] of Object.entries(packages)) {
    // "" is our own package; an old-style array of engines is not checked by npm either.
    if (path === '' || !entry.engines || Array.isArray(entry.engines) || !entry.engines.node) continue;
    if (!semver.subset(range, entry.engines.node)) out.push(`${path}@${entry.version ?? '?'} needs node ${entry.engines.node}`);
  }
  return out;
}

describe('Node support', () => {
  it('package.json promises a valid range that this Node is in', () => {
    expect(semver.validRange(promised)).not.toBeNull();
    expect(semver.satisfies(process.versions.node, promised)).toBe(true);
  });

  it('every package in package-lock.json runs on every Node version package.json promises', () => {
    expect(packagesExcluding(promised, lock.packages)).toEqual([]);
  });

  it('the check catches a package that needs a newer Node', () => {
    const packages: Record<string, LockEntry> = {
      '': { engines: { node: promised } },
      'node_modules/cookie': { version: '2.0.2', engines: { node: '>=22' } },
      'node_modules/jsdoc-type-pratt-parser': { version: '9.5.0', engines: { node: '^22.22.2 || >=24.15.0' } },
      'node_modules/ok': { version: '1.0.0', engines: { node: '>=18' } },
    };
    expect(packagesExcluding(promised, packages)).toEqual([
      'node_modules/cookie@2.0.2 needs node >=22',
      'node_modules/jsdoc-type-pratt-parser@9.5.0 needs node ^22.22.2 || >=24.15.0',
    ]);
  });
});
