"""What bench/ramdev.py prints: a line per side, case and round, and the tables per stack."""
import statistics
import sys


def mib(n):
    return f"{n / 2**20:.0f}"


class Tally:
    """One side's calls in one case of one round."""

    def __init__(self):
        self.ns, self.cpu_us, self.user_us, self.sys_us = [], 0.0, 0.0, 0.0
        self.majflt = self.minflt = self.nvcsw = self.rows = 0
        self.dev = [0, 0, 0, 0, 0]  # requests, merged, sectors, ms of the reads, ms the device was busy
        self.peak = 0

    def add(self, reply, rows, d0, d1):
        self.ns.append(reply["ns"])
        self.user_us += reply["user_us"]
        self.sys_us += reply["sys_us"]
        self.cpu_us += reply["user_us"] + reply["sys_us"]
        self.majflt += reply["majflt"]
        self.minflt += reply["minflt"]
        self.nvcsw += reply["nvcsw"]
        self.rows += rows
        self.dev = [x + b - a for x, a, b in zip(self.dev, d0, d1)]


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def line(t, batch):
    p50 = pct(t.ns, 0.5)
    return (f"p50 {p50 / 1e3:9.1f} p99 {pct(t.ns, 0.99) / 1e3:9.1f} us  {batch / (p50 / 1e9):10.0f} rows/s  "
            f"cpu {t.cpu_us / t.rows:6.2f} us/row  peak {mib(t.peak):>4s} MiB  dev {t.dev[0] / t.rows:5.2f} reads "
            f"{t.dev[2] * 512 / 1024 / t.rows:5.1f} KiB /row")


def summary(a, results, bounds):
    """Markdown tables: per stack, case and bound, both sides over every round."""
    for stack in a.stacks:
        print(f"\n### {stack}: spark's library against the stack's read path, {a.rounds} rounds\n")
        print("| ids | case | bound | baseline p50 / p99 (us) | spark p50 / p99 (us) | rows/s at p50, baseline -> spark "
              "| baseline/spark p50, median (range) | CPU us/row, baseline / spark | peak MiB, baseline / spark "
              "| device reads/row, baseline / spark | KiB/row, baseline / spark |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for batch in a.batches:
            for mode in ("cold", "warm"):
                for label, _ in bounds:
                    rounds = results.get((stack, label, batch, mode))
                    if not rounds:
                        continue
                    pooled = {n: [x for r in rounds for x in r[n].ns] for n in ("baseline", "spark")}
                    ratios = [pct(r["baseline"].ns, 0.5) / pct(r["spark"].ns, 0.5) for r in rounds]

                    def tot(n, f):
                        return sum(f(r[n]) for r in rounds)

                    rows = {n: tot(n, lambda t: t.rows) for n in pooled}
                    cells = [f"{batch:,}", mode, label,
                             f"{pct(pooled['baseline'], 0.5) / 1e3:,.1f} / {pct(pooled['baseline'], 0.99) / 1e3:,.1f}",
                             f"{pct(pooled['spark'], 0.5) / 1e3:,.1f} / {pct(pooled['spark'], 0.99) / 1e3:,.1f}",
                             " -> ".join(f"{batch / (pct(pooled[n], 0.5) / 1e9) / 1e3:,.0f}k" for n in pooled),
                             f"**{statistics.median(ratios):.2f}x** ({min(ratios):.2f}-{max(ratios):.2f})",
                             " / ".join(f"{tot(n, lambda t: t.cpu_us) / rows[n]:.2f}" for n in pooled),
                             " / ".join(mib(max(r[n].peak for r in rounds)) for n in pooled),
                             " / ".join(f"{tot(n, lambda t: t.dev[0]) / rows[n]:.2f}" for n in pooled),
                             " / ".join(f"{tot(n, lambda t: t.dev[2]) * 512 / 1024 / rows[n]:.1f}" for n in pooled)]
                    print("| " + " | ".join(cells) + " |")
    sys.stdout.flush()
