// The human report: findings grouped by severity, each with where and the fix, and the nodes
// looked at (how each answered, or why it did not).
import { nodeLabel } from '../preflight-api/node.js';
import type { PreflightReport } from './runner.js';
import type { Severity } from '../preflight-api/types.js';

const HEADINGS: Record<Severity, string> = { error: 'ERRORS', warn: 'WARNINGS', info: 'NOTES' };
const COLORS: Record<Severity, string> = { error: '\x1b[31m', warn: '\x1b[33m', info: '\x1b[36m' };
const VIA: Record<string, string> = { local: 'this machine', spark: 'spark on the node', probe: 'sh probe' };

function where(r: PreflightReport): string {
  if (r.mode === 'cluster') {
    const up = r.nodes.filter((n) => n.via !== null).length;
    return `${up} of ${r.nodes.length} node${r.nodes.length === 1 ? '' : 's'} answered`;
  }
  return r.node ? nodeLabel(r.node) : 'no node-local checks (this host is not in the cluster)';
}

export function formatReport(r: PreflightReport, color = false): string {
  const paint = (sev: Severity, s: string) => (color ? `${COLORS[sev]}${s}\x1b[0m` : s);
  const lines: string[] = [];
  lines.push(
    `preflight ${r.recipe}: ${r.stack} (family from ${r.family.from}), ${r.world} node${r.world === 1 ? '' : 's'}; ${where(r)}`,
  );
  if (r.mode === 'cluster') {
    for (const n of r.nodes) {
      const how = n.via !== null ? `checked by ${VIA[n.via] ?? n.via}` : `not reached (${n.unreachable})`;
      lines.push(`  ${nodeLabel(n)}: ${how}${n.notes.length > 0 ? `; ${n.notes.join('; ')}` : ''}`);
    }
  }
  if (r.snapshot) lines.push(`snapshot: ${r.snapshot.dir} (from ${r.snapshot.how})`);
  for (const sev of ['error', 'warn', 'info'] as const) {
    const group = r.findings.filter((f) => f.severity === sev);
    if (group.length === 0) continue;
    lines.push('', paint(sev, `${HEADINGS[sev]} (${group.length})`));
    for (const f of group) {
      lines.push(`  ${f.rule}: ${f.message}`);
      lines.push(
        `    at ${f.where}${f.node && !f.where.includes(`(${f.node.host})`) ? ` · ${nodeLabel(f.node)}` : ''}`,
      );
      lines.push(`    fix: ${f.fix}`);
    }
  }
  if (r.skipped.length > 0) {
    lines.push('', `NOT CHECKED (${r.skipped.length})`);
    for (const s of r.skipped) lines.push(`  ${s.rule}${s.node ? ` on ${nodeLabel(s.node)}` : ''}: ${s.reason}`);
  }
  const c = r.counts;
  lines.push(
    '',
    `${c.error} error${c.error === 1 ? '' : 's'}, ${c.warn} warning${c.warn === 1 ? '' : 's'}, ${c.info} note${c.info === 1 ? '' : 's'}; ` +
      `${r.ran.length} rules ran, ${r.skipped.length} not checked (${(r.seconds * 1000).toFixed(0)} ms)`,
  );
  return lines.join('\n');
}
