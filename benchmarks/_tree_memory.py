"""Peak resident memory of a process tree, sampled from /proc (Linux)."""

from __future__ import annotations

import os
import threading
import time

__all__ = ["TreeMemory"]

_PAGE = os.sysconf("SC_PAGE_SIZE")


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        tree.setdefault(int(fields[1]), []).append(int(entry))
    return tree


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * _PAGE
    except OSError:
        return 0


class TreeMemory:
    """Samples the summed RSS of `pid` and all its descendants every `interval_s`."""

    def __init__(self, pid: int, interval_s: float = 0.05) -> None:
        self.pid, self.interval_s, self.peak_bytes = pid, interval_s, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            tree, total, stack = _children(), 0, [self.pid]
            while stack:
                pid = stack.pop()
                total += _rss(pid)
                stack.extend(tree.get(pid, []))
            self.peak_bytes = max(self.peak_bytes, total)
            time.sleep(self.interval_s)

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
