// The one syntax for durations, sizes and booleans, shared by flags and annotations.

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const DURATION_PART = /(\d+(?:\.\d+)?)(ms|s|m|h)/y;

/**
 * "250ms", "5s", "1.5s", "2m", "1h30m" -> milliseconds. "0" is 0.
 * Returns undefined when the text is not a duration.
 */
export function parseDuration(text: string): number | undefined {
  const s = text.trim();
  if (s === '0') return 0;
  if (s === '') return undefined;
  let total = 0;
  DURATION_PART.lastIndex = 0;
  let at = 0;
  while (at < s.length) {
    DURATION_PART.lastIndex = at;
    const m = DURATION_PART.exec(s);
    if (!m) return undefined;
    total += Number(m[1]) * DURATION_UNITS[m[2]!]!;
    at = DURATION_PART.lastIndex;
  }
  return Math.round(total);
}

/**
 * A duration in an annotation: as parseDuration, and a bare number of seconds ("600"),
 * which is how ingress-nginx's annotations (cors-max-age, proxy-*-timeout) are written.
 */
export function parseAnnotationDuration(text: string): number | undefined {
  const s = text.trim();
  return /^\d+$/.test(s) ? Number(s) * 1000 : parseDuration(s);
}

const SIZE_UNITS: Record<string, number> = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };

/** "512", "512k", "10m", "1g" (binary multiples, case-insensitive; "10Mi", "10MiB" too) -> bytes; undefined if not a size. */
export function parseSize(text: string): number | undefined {
  const m = /^(\d+)(?:([kmg])(?:ib?)?)?$/i.exec(text.trim());
  if (!m) return undefined;
  return Number(m[1]) * SIZE_UNITS[(m[2] ?? '').toLowerCase()]!;
}

/** true/false/1/0/yes/no, case-insensitive; undefined otherwise. */
export function parseBool(text: string): boolean | undefined {
  switch (text.trim().toLowerCase()) {
    case 'true': case '1': case 'yes': return true;
    case 'false': case '0': case 'no': return false;
    default: return undefined;
  }
}
