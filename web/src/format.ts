/** A list date: the time for today, else the day. */
export function shortDate(iso: string | null): string {
  if (iso === null) return '';
  const date = new Date(iso);
  const now = new Date();
  return date.toDateString() === now.toDateString()
    ? date.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })
    : date.toLocaleDateString(undefined, { day: 'numeric', month: 'short', year: date.getFullYear() === now.getFullYear() ? undefined : 'numeric' });
}

export function longDate(iso: string | null): string {
  return iso === null ? '' : new Date(iso).toLocaleString();
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

export function person(a: { name: string; address: string } | null): string {
  if (a === null) return '(no sender)';
  return a.name || a.address;
}
