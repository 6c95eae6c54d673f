/**
 * Stable in-place sort for the short lists of the analysis (scalars matching a key, findings,
 * cited fields): insertion sort up to 16 items, `Array.prototype.sort` (also stable) above. Same
 * order as `arr.sort(cmp)`; avoids the work-array copy the built-in sort allocates per call.
 * Pure.
 *
 * @returns `arr`, sorted.
 */
export function sortSmall<T>(arr: T[], cmp: (a: T, b: T) => number): T[] {
  const n = arr.length;
  if (n > 16) return arr.sort(cmp);
  for (let i = 1; i < n; i++) {
    const x = arr[i] as T;
    let j = i - 1;
    while (j >= 0 && cmp(arr[j] as T, x) > 0) {
      arr[j + 1] = arr[j] as T;
      j--;
    }
    arr[j + 1] = x;
  }
  return arr;
}
