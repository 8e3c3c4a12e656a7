/**
 * The README's walkthrough as data: its fenced blocks from `## Quick start` up to `## Sandbox`, with the markers and
 * expected output that test/readme.test.ts runs and checks (its header comment has the conventions), and that the
 * `first-mail` bench follows from a fresh clone.
 */

export interface ReadmeBlock {
  line: number;
  lang: string;
  marker: 'skip' | 'background' | null;
  code: string;
  expected: string | null;
}

/** The fenced blocks of the walkthrough, each shell block with its expected output. */
export function walkthroughBlocks(markdown: string): ReadmeBlock[] {
  const lines = markdown.split('\n');
  const start = lines.indexOf('## Quick start');
  const end = lines.indexOf('## Sandbox');
  if (start < 0 || end < start) throw new Error('README.md: no "## Quick start" … "## Sandbox" walkthrough');
  const fences: Array<{ line: number; lang: string; marker: ReadmeBlock['marker']; code: string; endLine: number }> = [];
  for (let i = start; i < end; i++) {
    const open = /^(\s*)```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const body: string[] = [];
    let j = i + 1;
    while (j < end && lines[j]!.trim() !== '```') body.push(lines[j++]!.slice(indent));
    let k = i - 1;
    while (k > start && lines[k]!.trim() === '') k--;
    const mark = /^\s*<!-- readme-test: (skip|background) -->\s*$/.exec(lines[k]!);
    fences.push({ line: i + 1, lang: open[2]!, marker: (mark?.[1] as ReadmeBlock['marker'] | undefined) ?? null, code: body.join('\n'), endLine: j });
    i = j;
  }
  return fences.flatMap((fence, n) => {
    if (fence.lang !== 'sh') return [];
    const next = fences[n + 1];
    const adjacent = next && ['json', 'text'].includes(next.lang) && lines.slice(fence.endLine + 1, next.line - 1).every((l) => l.trim() === '');
    return [{ line: fence.line, lang: fence.lang, marker: fence.marker, code: fence.code, expected: adjacent ? next.code : null }];
  });
}

/** Ids, secrets, times and widths that change from run to run, made alike. */
export function normalize(text: string): string {
  return text
    .replace(/\b[a-z]{2,4}_[0-9a-hjkmnp-tv-z]{26}\b/g, '<id>')
    .replace(/\bm(?:rk|rs|st)_[\w-]{20,}/g, '<secret>')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g, '<time>')
    .replace(/mailroom-verification=[\w-]+/g, 'mailroom-verification=<token>')
    .replace(/p=[A-Za-z0-9+/=]+…?/g, 'p=<key>')
    .replace(/\bmr\d{6}\b/g, 'mr<month>')
    .replace(/"(size|message_count|unread_count)":\d+/g, '"$1":<n>')
    .replace(/[ \t]+/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .join('\n')
    .trim();
}

/** Whether `actual` is what the README shows: normalized alike, `…` standing for any text. */
export function matchesShown(actual: string, shown: string): boolean {
  const pattern = normalize(shown)
    .split('…')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[\\s\\S]*?');
  return new RegExp(`^${pattern}$`).test(normalize(actual));
}

/** The README's commands and answers with the service on other ports than its 127.0.0.1:8080 (HTTP) and :2525 (SMTP). */
export function withPorts(text: string, ports: { http: number; smtp: number }): string {
  return text
    .replaceAll('127.0.0.1:8080', `127.0.0.1:${ports.http}`)
    .replaceAll('127.0.0.1:2525', `127.0.0.1:${ports.smtp}`)
    .replaceAll('port:2525', `port:${ports.smtp}`);
}
