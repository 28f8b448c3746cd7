// A small line chart as a standalone SVG: rows/s (y) against threads (x, log2 scale), one
// line per series. No dependencies; text is escaped.

export interface Series {
  name: string;
  points: { x: number; y: number }[];
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#7f7f7f'];

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function niceMax(v: number): number {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function fmt(v: number): string {
  if (v >= 1e6) return `${(v / 1e6).toFixed(v >= 1e7 ? 0 : 1)}M`;
  if (v >= 1e3) return `${(v / 1e3).toFixed(v >= 1e4 ? 0 : 1)}k`;
  return String(Math.round(v));
}

export function lineChartSvg(title: string, xLabel: string, yLabel: string, series: Series[]): string {
  const W = 760,
    H = 440,
    L = 70,
    R = 200,
    T = 40,
    B = 50;
  const xs = [...new Set(series.flatMap((s) => s.points.map((p) => p.x)))].sort((a, b) => a - b);
  const xMin = Math.log2(Math.max(1, xs[0] ?? 1));
  const xMax = Math.max(xMin + 1, Math.log2(Math.max(1, xs[xs.length - 1] ?? 2)));
  const yMax = niceMax(Math.max(0, ...series.flatMap((s) => s.points.map((p) => p.y))));
  const px = (x: number): number => L + ((Math.log2(Math.max(1, x)) - xMin) / (xMax - xMin)) * (W - L - R);
  const py = (y: number): number => T + (1 - y / yMax) * (H - T - B);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2 - R / 2}" y="22" text-anchor="middle" font-size="15">${esc(title)}</text>`,
    `<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="black"/>`,
    `<line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="black"/>`,
    `<text x="${(L + W - R) / 2}" y="${H - 12}" text-anchor="middle">${esc(xLabel)}</text>`,
    `<text x="16" y="${(T + H - B) / 2}" text-anchor="middle" transform="rotate(-90 16 ${(T + H - B) / 2})">${esc(yLabel)}</text>`,
  ];
  for (const x of xs) {
    out.push(`<line x1="${px(x)}" y1="${H - B}" x2="${px(x)}" y2="${H - B + 5}" stroke="black"/>`);
    out.push(`<text x="${px(x)}" y="${H - B + 18}" text-anchor="middle">${x}</text>`);
  }
  for (let i = 0; i <= 5; i++) {
    const y = (yMax * i) / 5;
    out.push(`<line x1="${L}" y1="${py(y)}" x2="${W - R}" y2="${py(y)}" stroke="#ddd"/>`);
    out.push(`<text x="${L - 6}" y="${py(y) + 4}" text-anchor="end">${fmt(y)}</text>`);
  }
  series.forEach((s, i) => {
    const c = COLORS[i % COLORS.length];
    const pts = [...s.points].sort((a, b) => a.x - b.x);
    out.push(
      `<polyline fill="none" stroke="${c}" stroke-width="2" points="${pts.map((p) => `${px(p.x).toFixed(1)},${py(p.y).toFixed(1)}`).join(' ')}"/>`,
    );
    for (const p of pts) out.push(`<circle cx="${px(p.x).toFixed(1)}" cy="${py(p.y).toFixed(1)}" r="3" fill="${c}"/>`);
    const ly = T + 10 + i * 18;
    out.push(`<line x1="${W - R + 15}" y1="${ly}" x2="${W - R + 35}" y2="${ly}" stroke="${c}" stroke-width="2"/>`);
    out.push(`<text x="${W - R + 40}" y="${ly + 4}">${esc(s.name)}</text>`);
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}
