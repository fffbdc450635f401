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
