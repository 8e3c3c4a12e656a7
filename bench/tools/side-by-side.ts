/**
 * Two builds (or one build in several settings) side by side: each suite run for each variant, alternated round by
 * round (odd rounds in the given order, even rounds reversed, so neither build always runs on a warmer machine),
 * then the median per case of the subject's ratio to its baseline and of its server CPU per operation.
 *
 *   node --import tsx bench/tools/side-by-side.ts [--rounds 3] [--suites smtp,http,outbound] \
 *     --variant old=BIN=/path/to/old/bin/mailroom.js \
 *     --variant new \
 *     --variant 'quota=ENV=MAILROOM_METRICS_PORT=0 MAILROOM_QUOTA_SENT_PER_HOUR=1000000000'
 *
 * A variant is `NAME`, `NAME=BIN=path` (MAILROOM_BENCH_BIN) or `NAME=ENV=settings` (BENCH_SERVICE_ENV); BIN and ENV
 * may be joined with `;`. Every run's results are kept in bench/results/side-by-side/SUITE.NAME.ROUND.json. The
 * machine must be quiet: read bench/README.md ("Columns") on what other work does to the figures.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const OUT = join(ROOT, 'bench', 'results', 'side-by-side');

interface Variant {
  name: string;
  bin?: string;
  serviceEnv?: string;
}

interface Row {
  case: string;
  target: string;
  role: string;
  ratio?: number;
  measurement?: { serverCpuUsPerRequest?: number };
}

function parseVariant(text: string): Variant {
  const eq = text.indexOf('=');
  if (eq < 0) return { name: text };
  const variant: Variant = { name: text.slice(0, eq) };
  for (const part of text.slice(eq + 1).split(';')) {
    if (part.startsWith('BIN=')) variant.bin = part.slice(4);
    else if (part.startsWith('ENV=')) variant.serviceEnv = part.slice(4);
    else throw new Error(`--variant ${text}: expected BIN=… or ENV=… after the name`);
  }
  return variant;
}

function parseArgs(argv: readonly string[]): { rounds: number; suites: string[]; variants: Variant[] } {
  let rounds = 3;
  let suites = ['smtp', 'http', 'outbound'];
  const variants: Variant[] = [];
  for (let i = 0; i < argv.length; i++) {
    const value = argv[i + 1] ?? '';
    if (argv[i] === '--rounds') rounds = Number(value);
    else if (argv[i] === '--suites') suites = value.split(',');
    else if (argv[i] === '--variant') variants.push(parseVariant(value));
    else throw new Error(`unknown argument ${argv[i]}`);
    i++;
  }
  if (variants.length < 2 || !(rounds >= 1)) throw new Error('give --variant at least twice and --rounds ≥ 1');
  return { rounds, suites, variants };
}

/** One run; the kept results, or null when the run wrote none. */
function runOnce(suite: string, variant: Variant, round: number): string | null {
  const latest = join(ROOT, 'bench', 'results', 'latest.json');
  rmSync(latest, { force: true });
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.MAILROOM_BENCH_BIN;
  delete env.BENCH_SERVICE_ENV;
  if (variant.bin) env.MAILROOM_BENCH_BIN = variant.bin;
  if (variant.serviceEnv) env.BENCH_SERVICE_ENV = variant.serviceEnv;
  console.log(`${new Date().toISOString()} ${suite} ${variant.name} round ${round}`);
  const run = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'run.ts'), suite], { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'inherit'] });
  if (run.status !== 0) console.log(`  exit ${String(run.status)}`);
  if (!existsSync(latest)) return null;
  const kept = join(OUT, `${suite}.${variant.name}.${round}.json`);
  copyFileSync(latest, kept);
  return kept;
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? Number.NaN;
};

/** Per case and variant: the subject rows' ratios and CPU per operation over the rounds. */
function summarise(files: ReadonlyArray<{ variant: string; file: string }>, order: readonly string[]): void {
  const cases = new Map<string, Map<string, { ratios: number[]; cpu: number[] }>>();
  for (const { variant, file } of files) {
    const results = (JSON.parse(readFileSync(file, 'utf8')) as { results: Array<{ suite: string; rows: Row[] }> }).results;
    for (const suite of results) {
      for (const row of suite.rows.filter((r) => r.role === 'subject' && r.ratio !== undefined)) {
        const key = `${suite.suite} · ${row.case} · ${row.target}`;
        const byVariant = cases.get(key) ?? new Map<string, { ratios: number[]; cpu: number[] }>();
        cases.set(key, byVariant);
        const entry = byVariant.get(variant) ?? { ratios: [], cpu: [] };
        byVariant.set(variant, entry);
        entry.ratios.push(row.ratio!);
        if (row.measurement?.serverCpuUsPerRequest !== undefined) entry.cpu.push(row.measurement.serverCpuUsPerRequest);
      }
    }
  }
  const [first] = order;
  for (const [key, byVariant] of cases) {
    console.log(key);
    const base = byVariant.get(first!);
    for (const name of order) {
      const entry = byVariant.get(name);
      if (!entry) continue;
      const ratio = median(entry.ratios);
      const cpu = median(entry.cpu);
      const versus = base && name !== first ? `  → ${(ratio / median(base.ratios)).toFixed(3)}× ratio, ${(cpu / median(base.cpu)).toFixed(3)}× CPU/op of ${first}` : '';
      console.log(`  ${name.padEnd(8)} ratio ${ratio.toFixed(3)} (${entry.ratios.map((r) => r.toFixed(3)).join(', ')}), CPU/op ${cpu.toFixed(0)} µs${versus}`);
    }
  }
}

const { rounds, suites, variants } = parseArgs(process.argv.slice(2));
mkdirSync(OUT, { recursive: true });
const files: Array<{ variant: string; file: string }> = [];
for (let round = 1; round <= rounds; round++) {
  for (const suite of suites) {
    const order = round % 2 === 1 ? variants : [...variants].reverse();
    for (const variant of order) {
      const file = runOnce(suite, variant, round);
      if (file) files.push({ variant: variant.name, file });
    }
  }
}
summarise(files, variants.map((v) => v.name));
