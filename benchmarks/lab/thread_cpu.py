"""CPU seconds of each thread of this process, of each child process and of the host,
between any two moments of a run: where a long benchmark's time goes when every core is
busy (journal, "Where a ten-million import's CPU goes").

A sampler thread reads Linux's ``/proc`` every ``every`` seconds. Python 3.11 gives its
threads no OS names, so each thread of this process is named by its Python name (numbered
pool threads as one: ``citewell-texts_0`` and ``_1`` are ``citewell-texts``), else by the
OS's (Lance's ``lance-cpu``). A thread that ends keeps what it had used when last seen;
what the process used beyond its threads so seen is "threads that ended". Each child
process (and each of theirs) counts whole, its ended threads too, named by its process id
and when the sampler first saw it. What the host spent beyond this tree (the kernel's own
threads, other processes) is the rest. Used by ``benchmarks.import_chunks --thread-cpu``.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

TICKS = os.sysconf("SC_CLK_TCK")
ENDED = "threads that ended"
OUTSIDE = "host, outside this process and its children"


def _ticks(stat_path: str) -> int:
    """utime + stime of a /proc stat file (0 if it is gone)."""
    try:
        with open(stat_path) as handle:
            text = handle.read()
    except OSError:
        return 0
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])


def _comm(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return "?"


def _children(pid: int) -> list[int]:
    """Every descendant process of ``pid``."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tids = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{parent}/task/{tid}/children") as handle:
                    kids = [int(k) for k in handle.read().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def _host() -> tuple[int, int, int]:
    """The host's busy, idle and waiting-for-disk ticks so far."""
    with open("/proc/stat") as handle:
        user, nice, system, idle, iowait, *rest = (int(x) for x in handle.readline().split()[1:])
    return user + nice + system + sum(rest[:3]), idle, iowait


@dataclass
class Sample:
    at: float
    ticks: Counter[str]  # label → ticks so far
    host: tuple[int, int, int]


@dataclass
class ThreadCpu:
    """``with ThreadCpu() as cpu:`` samples until the block ends; then ``between(t0, t1)``
    (``time.perf_counter`` moments) gives CPU seconds by thread or process."""

    every: float = 2.0
    samples: list[Sample] = field(default_factory=list)
    _names: dict[int, str] = field(default_factory=dict)
    _started: dict[int, float] = field(default_factory=dict)
    _threads: dict[int, tuple[str, int]] = field(default_factory=dict)  # tid → label, ticks
    _children: dict[int, tuple[str, int]] = field(default_factory=dict)  # pid → label, ticks
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> ThreadCpu:
        self._began = time.perf_counter()
        self._thread = threading.Thread(target=self._run, name="thread-cpu", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append(self._sample())

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append(self._sample())
            self._stop.wait(self.every)

    def _label(self, tid: int) -> str:
        name = self._names.get(tid)
        if name is not None:
            return re.sub(r"_\d+$", "", name)
        return _comm(f"/proc/self/task/{tid}/comm")

    def _sample(self) -> Sample:
        """Each thread's and child's ticks as last seen (an ended one keeps its last)."""
        self._names.update({t.native_id: t.name for t in threading.enumerate() if t.native_id})
        for tid in map(int, os.listdir("/proc/self/task")):
            self._threads[tid] = (self._label(tid), _ticks(f"/proc/self/task/{tid}/stat"))
        now = time.perf_counter()
        for pid in _children(os.getpid()):
            started = self._started.setdefault(pid, now - self._began)
            label = f"child process {pid} ({_comm(f'/proc/{pid}/comm')}, from {started:.0f} s)"
            self._children[pid] = (label, _ticks(f"/proc/{pid}/stat"))
        ticks: Counter[str] = Counter()
        for label, used in [*self._threads.values(), *self._children.values()]:
            ticks[label] += used
        ticks[ENDED] = _ticks("/proc/self/stat") - sum(u for _, u in self._threads.values())
        return Sample(now, ticks, _host())

    def _nearest(self, moment: float) -> Sample:
        return min(self.samples, key=lambda s: abs(s.at - moment))

    def between(self, start: float, end: float) -> dict[str, float]:
        """CPU seconds by thread or process from ``start`` to ``end`` (the samples nearest
        them), the most first; with the host's busy, idle and disk-waiting seconds and what
        it spent outside this tree."""
        first, last = self._nearest(start), self._nearest(end)
        spent = {k: (v - first.ticks.get(k, 0)) / TICKS for k, v in last.ticks.items()}
        busy, idle, iowait = ((b - a) / TICKS for a, b in zip(first.host, last.host, strict=True))
        spent[OUTSIDE] = busy - sum(spent.values())
        top = dict(sorted(((k, round(v, 1)) for k, v in spent.items() if v >= 0.5),
                          key=lambda kv: -kv[1]))  # fmt: skip
        wall = last.at - first.at
        return {"wall": round(wall, 1), "host busy": round(busy, 1), "host idle": round(idle, 1),
                "host waiting for disk": round(iowait, 1), **top}  # fmt: skip
