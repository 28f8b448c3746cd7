"""cgroups for bench/ramdev.py, one of each kind per side.

Memory: each side's memory (its page cache included: the kernel charges a page-cache page to the
cgroup of the process that read it in) bounded as on a node, where page cache is GPU memory and
the overlay's governor holds it. CPU (--cpu-weight): each side one scheduling entity of a given
weight, so on a loaded machine a side's thread count does not buy it a larger share of the CPU
(the scheduler is fair between threads, not processes).

Whichever the machine has: cgroup v2 (memory.max, memory.peak, cpu.weight) where the controller
is in the unified hierarchy, else v1 (memory.limit_in_bytes, memory.max_usage_in_bytes,
cpu.shares). A v1 group is made under the group this process runs in (so whatever bounds it
bounds them too); a v2 group under the hierarchy's root, the one place a v2 group with a
controller can always be made beside processes. A process joins with join(pid) before it opens
anything: the bench calls it in the child between fork and exec."""
import os
import sys
import time


def _v2_root(controller):
    for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        try:
            with open(os.path.join(root, "cgroup.controllers")) as f:
                if controller in f.read().split():
                    return root
        except OSError:
            pass
    return None


def _v1_mount(controller):
    """Where the v1 hierarchy holding `controller` is mounted, or None."""
    with open("/proc/mounts") as f:
        for line in f:
            _, where, kind, options = line.split()[:4]
            if kind == "cgroup" and controller in options.split(","):
                return where
    return None


def _own_v1_group(controller):
    mount = _v1_mount(controller)
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if controller in controllers.split(","):
                return os.path.join(mount, path.lstrip("/"))
    return mount


def flavour(controller="memory"):
    """'v2', 'v1', or None when neither hierarchy has the controller."""
    if _v2_root(controller):
        return "v2"
    return "v1" if _v1_mount(controller) else None


def _write(path, value):
    with open(path, "w") as f:
        f.write(value)


def _read_int(path):
    with open(path) as f:
        return int(f.read().split()[0])


class Cgroup:
    """A fresh group named `name` in the hierarchy of `controller`."""

    def __init__(self, name, controller):
        self.kind = flavour(controller)
        if self.kind is None:
            raise OSError(f"no {controller} cgroup controller (neither cgroup v2 nor v1 has it)")
        root = _v2_root(controller) if self.kind == "v2" else _own_v1_group(controller)
        self.path = os.path.join(root, name)
        os.mkdir(self.path)
        if self.kind == "v2":
            sub = os.path.join(root, "cgroup.subtree_control")
            with open(sub) as f:
                if controller not in f.read().split():
                    _write(sub, "+" + controller)

    def _file(self, name):
        return os.path.join(self.path, name)

    def join(self, pid):
        """Moves pid (all its threads) into the group."""
        _write(self._file("cgroup.procs"), str(pid))

    def remove(self):
        """rmdir, once every process in it has exited (the kernel may take a moment to see them go);
        says so when it cannot."""
        for attempt in range(50):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError as e:
                if attempt == 49:
                    print(f"ramdev: could not remove the cgroup {self.path}: {e}", file=sys.stderr)
                time.sleep(0.1)


class CpuCgroup(Cgroup):
    """A group with the CPU share of `weight` ordinary tasks, however many threads it holds."""

    def __init__(self, name, weight):
        super().__init__(name, "cpu")
        if self.kind == "v2":
            _write(self._file("cpu.weight"), str(min(10000, round(100 * weight))))
        else:
            _write(self._file("cpu.shares"), str(max(2, round(1024 * weight))))


class MemoryCgroup(Cgroup):
    """A fresh memory cgroup named `name`, bounded to `limit` bytes (None: no bound)."""

    def __init__(self, name, limit):
        super().__init__(name, "memory")
        self.limit = limit
        self._peak_fd = None
        self.peak_how = "memory.max_usage_in_bytes" if self.kind == "v1" else "memory.peak"
        if self.kind == "v2":
            _write(self._file("memory.max"), str(limit) if limit else "max")
            if limit and os.path.exists(self._file("memory.swap.max")):
                _write(self._file("memory.swap.max"), "0")
            if not os.path.exists(self._file("memory.peak")):
                self.peak_how = "memory.current sampled after each call (this kernel has no memory.peak)"
        elif limit:
            _write(self._file("memory.limit_in_bytes"), str(limit))
            if os.path.exists(self._file("memory.memsw.limit_in_bytes")):
                _write(self._file("memory.memsw.limit_in_bytes"), str(limit))
        self._sampled = 0

    def current(self):
        return _read_int(self._file("memory.current" if self.kind == "v2" else "memory.usage_in_bytes"))

    def oom_kills(self):
        """Processes the kernel's OOM killer ended in this group (0 where the kernel does not say)."""
        name = "memory.events" if self.kind == "v2" else "memory.oom_control"
        try:
            with open(self._file(name)) as f:
                for line in f:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        except OSError:
            pass
        return 0

    def sample(self):
        """After each call: what peak() reports when the kernel keeps no peak of its own."""
        self._sampled = max(self._sampled, self.current())

    def reset_peak(self):
        self._sampled = self.current()
        if self.kind == "v1":
            _write(self._file("memory.max_usage_in_bytes"), "0")
        elif self.peak_how == "memory.peak":
            # Since Linux 6.12 a write to memory.peak restarts the peak seen through that open file.
            if self._peak_fd is not None:
                os.close(self._peak_fd)
                self._peak_fd = None
            try:
                fd = os.open(self._file("memory.peak"), os.O_RDWR)
            except OSError:  # before 6.12 the file is read-only
                self.peak_how = "memory.peak (since the group was made: this kernel cannot restart it)"
                return
            try:
                os.write(fd, b"reset\n")
                self._peak_fd = fd
            except OSError:
                os.close(fd)
                self.peak_how = "memory.peak (since the group was made: this kernel cannot restart it)"

    def peak(self):
        if self.kind == "v1":
            return _read_int(self._file("memory.max_usage_in_bytes"))
        if self._peak_fd is not None:
            return int(os.pread(self._peak_fd, 64, 0).split()[0])
        if self.peak_how.startswith("memory.current"):
            return self._sampled
        return _read_int(self._file("memory.peak"))

    def remove(self):
        if self._peak_fd is not None:
            os.close(self._peak_fd)
            self._peak_fd = None
        super().remove()
