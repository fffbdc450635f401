import parsePrometheusTextFormat from 'parse-prometheus-text-format';

export interface MetricFamily {
  name: string;
  type: string;
  metrics: { value?: string; labels?: Record<string, string>; buckets?: Record<string, string>; count?: string }[];
}

/** GET /metrics, parsed by a real Prometheus text-format parser. */
export async function readMetrics(baseUrl: string): Promise<MetricFamily[]> {
  const res = await fetch(`${baseUrl}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  return parsePrometheusTextFormat(await res.text()) as MetricFamily[];
}

/** The value of one series (a counter or gauge), 0 when it does not exist yet. */
export function valueOf(families: MetricFamily[], name: string, labels: Record<string, string> = {}): number {
  const family = families.find((f) => f.name === name);
  const series = family?.metrics.find((m) => Object.entries(labels).every(([key, value]) => m.labels?.[key] === value));
  return Number(series?.value ?? series?.count ?? 0);
}

/**
 * The value of one series of the text format, found by its full name (a histogram's
 * `<name>_count` too: the parser above keeps neither a labelled histogram's counts nor its
 * labels) and the labels it must carry; 0 when it does not exist yet.
 */
export async function seriesValue(baseUrl: string, name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  for (const line of text.split('\n')) {
    const match = /^([\w:]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const carried = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]),
    );
    if (Object.entries(labels).every(([key, value]) => carried[key] === value)) return Number(match[3]);
  }
  return 0;
}
