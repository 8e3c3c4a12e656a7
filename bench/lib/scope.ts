/**
 * A stack of clean-up steps (stop a child, drop a database), run last-in first-out. Every step
 * runs even when an earlier one fails, so one stuck child never leaks a database.
 */
export class Scope {
  private readonly steps: Array<{ label: string; run: () => Promise<void> | void }> = [];
  private closed = false;

  constructor(private readonly log: (line: string) => void = (line) => console.error(line)) {}

  defer(label: string, run: () => Promise<void> | void): void {
    if (this.closed) throw new Error(`scope already closed; cannot defer '${label}'`);
    this.steps.push({ label, run });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (let step = this.steps.pop(); step; step = this.steps.pop()) {
      try {
        await step.run();
      } catch (err) {
        this.log(`  clean-up '${step.label}' failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }
}

/** Run `body` with a fresh scope that is always closed afterwards. */
export async function withScope<T>(log: (line: string) => void, body: (scope: Scope) => Promise<T>): Promise<T> {
  const scope = new Scope(log);
  try {
    return await body(scope);
  } finally {
    await scope.close();
  }
}
