// Sorted string arrays kept in order by binary search: an insert or delete costs a
// search and one splice, not a re-sort.

export function lowerBound(list: readonly string[], value: string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function insertSorted(list: string[], value: string): void {
  const at = lowerBound(list, value);
  if (list[at] !== value) list.splice(at, 0, value);
}

export function removeSorted(list: string[], value: string): void {
  const at = lowerBound(list, value);
  if (list[at] === value) list.splice(at, 1);
}
