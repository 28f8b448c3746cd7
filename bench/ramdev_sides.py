"""The two sides of a bench/ramdev.py pair: each a child process (bench/ramdev_child.py) placed
in its own cgroups (bench/ramdev_cgroup.py) between fork and exec, before it opens anything,
and driven over its stdin and stdout."""
import json
import os
import signal
import subprocess
import sys

import numpy as np

import ramdev_cgroup as cgroups

BENCH = os.path.dirname(os.path.abspath(__file__))
BIG = 49152  # the largest batch: each side's buffers are this many rows


class Environment(Exception):
    """Something of the machine the bench needs is missing or refused: exit 3."""


class SideProc:
    """One side's child process in its own cgroup, driven over its stdin and stdout."""

    def __init__(self, config, env, group, cpu=None):
        self.name, self.group = config["name"], group

        def placed():
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # stays ignored across exec: Ctrl-C is the parent's
            group.join(os.getpid())
            if cpu is not None:
                cpu.join(os.getpid())

        self.proc = subprocess.Popen([sys.executable, os.path.join(BENCH, "ramdev_child.py"), json.dumps(config)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, preexec_fn=placed)

    def hello(self):
        """Waits for the store to be open; checks the process is in its cgroup."""
        hello = self._reply()
        self.pid, self.evict_tid = hello["pid"], hello["evict_tid"]
        if not any(line.endswith("/" + os.path.basename(self.group.path)) for line in hello["cgroup"].splitlines()):
            raise Environment(f"{self.name}: not in its cgroup {self.group.path}: {hello['cgroup']!r}")

    def _reply(self):
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            if self.group.oom_kills():
                raise Environment(f"{self.name}: killed by the OOM killer of its cgroup: its bound is smaller than "
                                  "what the side needs (interpreter, buffers, --cache); raise --bound or lower --cache")
            raise Environment(f"{self.name}: its process ended (exit {code}); its stderr is above")
        return json.loads(line)

    def ask(self, op, ids=None):
        msg = {"op": op} if ids is None else {"op": op, "n": len(ids)}
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        if ids is not None:
            self.proc.stdin.write(np.ascontiguousarray(ids, np.int64).tobytes())
        self.proc.stdin.flush()
        return self._reply()

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(b'{"op": "quit"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


class Pair:
    """Both sides of one stack under one bound, each in a fresh cgroup; closed by the ExitStack."""

    def __init__(self, a, stack, bound, src, stack_cleanup, tag):
        self.stack, self.sides = stack, []
        base = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_ENGRAM_", "DSV41_"))}
        for name in ("spark", "baseline"):
            group = cgroups.MemoryCgroup(f"spark-ramdev-{os.getpid()}-{tag}-{stack}-{name}", bound)
            stack_cleanup.callback(group.remove)
            cpu = None
            if a.cpu_weight:
                cpu = cgroups.CpuCgroup(f"spark-ramdev-{os.getpid()}-{tag}-{stack}-{name}", a.cpu_weight)
                stack_cleanup.callback(cpu.remove)
            env = dict(base)
            config = {"stack": stack, "name": name, "table": src["table"], "rows": a.rows, "batch_max": BIG}
            if stack == "overlay":
                config.update(lib=a.libs[stack][name], threads=a.threads, woff=src["woff"], soff=src["soff"])
                if name == "spark":
                    env["SPARK_ENGRAM_LIB_CACHE_GB"] = str(a.cache)
            else:
                config.update(lib=a.libs[stack][name], budget=int(a.cache * 2**30), checkpoint=src["checkpoint"])
                env.update(DSV41_IO_THREADS=str(a.mia_threads), DSV41_RESIDENT_SCALES="0")
            side = SideProc(config, env, group, cpu)
            stack_cleanup.callback(side.stop)
            side.hello()
            self.sides.append(side)
