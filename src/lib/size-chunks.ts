/**
 * Rows (each with a byte size) in consecutive chunks of at most `maxBytes` bytes and `maxCount` rows, a row larger
 * than `maxBytes` alone: reading or writing a chunk at a time keeps memory to that bound, not to the rows' count.
 */
export function sizeChunks<T extends { size: number }>(rows: readonly T[], maxBytes: number, maxCount = Number.POSITIVE_INFINITY): T[][] {
  const chunks: T[][] = [];
  let chunk: T[] = [];
  let bytes = 0;
  for (const row of rows) {
    if (chunk.length > 0 && (chunk.length >= maxCount || bytes + row.size > maxBytes)) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push(row);
    bytes += row.size;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

/** Items in consecutive chunks of at most `size` (none for no items): a list bound for one statement at a time. */
export function chunksOf<T>(items: readonly T[], size: number): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
}
