"""A stage's own progress while `reproduce` runs it: the training steps and encoding batches its cells
count with tqdm, not only the cells done, so a cell that trains for minutes does not look hung.

The stage's kernel and the runner share one small file. The runner starts each kernel with
`kernel_progress` (`KERNEL_ARGUMENTS`, an IPython start-up line), which every few seconds writes the
kernel's live tqdm bars (description, count, total, unit, elapsed time, rate) to the file
$COMPSENSE_PROGRESS names: every bar compsense, sentence-transformers and the transformers Trainer open
is one, in a notebook front-end or not, and a notebook needs no code of its own for it. The runner reads
the file (`watch`) and prints one line when the bars moved, at most every `every` seconds. Nothing here
can fail a stage: a bar that cannot be read, or a file that cannot be written, is skipped.
"""

from __future__ import annotations

import json
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path

ENV = "COMPSENSE_PROGRESS"  # the file a stage's kernel writes its live bars into
KERNEL_EVERY = 2.0  # seconds between the kernel's writes
PRINT_EVERY = 30.0  # the runner prints a stage's bars at most this often


def kernel_arguments(every: float = KERNEL_EVERY) -> list[str]:
    """What the runner adds to a stage kernel's command line: an IPython start-up line that starts
    `kernel_progress` (papermill passes it on as nbclient's `extra_arguments`)."""
    line = f"from compsense.pipeline.progress import kernel_progress; kernel_progress(every={float(every)!r})"
    return [f"--IPKernelApp.exec_lines={line}"]


def live_bars() -> list[dict]:
    """The tqdm bars open in this process, oldest first: desc, n, total, unit, elapsed (s), rate (units/s)."""
    from tqdm import tqdm

    with tqdm.get_lock():
        bars = list(tqdm._instances)  # noqa: SLF001 - tqdm's own registry of open bars (its monitor reads it)
    found = []
    for bar in sorted(bars, key=lambda b: getattr(b, "start_t", 0.0)):
        try:
            d = bar.format_dict
            found.append(
                {
                    "desc": str(d.get("prefix") or ""),
                    "n": float(d["n"]),
                    "total": None if d.get("total") is None else float(d["total"]),
                    "unit": str(d.get("unit") or "it"),
                    "elapsed": float(d.get("elapsed") or 0.0),
                    "rate": d.get("rate"),
                }
            )
        except (AttributeError, KeyError, TypeError, ValueError):  # a bar closing meanwhile
            continue
    return found


def kernel_progress(
    path=None, every: float = KERNEL_EVERY, stop: threading.Event | None = None
) -> threading.Thread | None:
    """In a stage's kernel: a daemon thread that writes `live_bars()` to `path` ($COMPSENSE_PROGRESS)
    every `every` seconds, when they changed (replacing the file whole), until `stop` is set (a kernel
    never sets it: the thread ends with the kernel). None when no file is named."""
    path = path or os.environ.get(ENV)
    if not path:
        return None
    target = Path(path)

    stop = stop or threading.Event()

    def write_loop():
        last = None
        while not stop.is_set():
            try:
                bars = live_bars()
                text = json.dumps({"bars": bars}, default=str)
                if text != last:
                    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
                    tmp.write_text(text, encoding="utf-8")
                    os.replace(tmp, target)
                    last = text
            except Exception:  # noqa: BLE001 - progress must never disturb the stage
                pass
            stop.wait(every)

    thread = threading.Thread(target=write_loop, name="compsense-progress", daemon=True)
    thread.start()
    return thread


def read_bars(path) -> list[dict]:
    """The bars a kernel last wrote to `path`; [] when there is no file yet or it cannot be read."""
    try:
        return list(json.loads(Path(path).read_text(encoding="utf-8")).get("bars") or [])
    except (OSError, ValueError, AttributeError):
        return []


def _count(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def bar_text(bar: dict) -> str:
    """One bar as a line's part: "train 12/100 it (31.2 s/it)", "Batches 3/40 it (2.1 it/s)"."""
    total = f"/{_count(bar['total'])}" if bar.get("total") else ""
    text = f"{bar.get('desc') or 'progress'} {_count(bar['n'])}{total} {bar.get('unit') or 'it'}"
    rate = bar.get("rate") or (bar["n"] / bar["elapsed"] if bar.get("elapsed") and bar.get("n") else None)
    if rate:
        text += (
            f" ({1 / rate:.1f} s/{bar.get('unit') or 'it'})"
            if rate < 1
            else f" ({rate:.1f} {bar.get('unit') or 'it'}/s)"
        )
    return text


def progress_line(key: str, seconds: float, bars: list[dict]) -> str:
    """The runner's line for stage `key`: its elapsed time and every open bar, outermost first."""
    minutes, secs = divmod(int(seconds), 60)
    return f"  [{key}] {minutes}:{secs:02d} · " + " · ".join(bar_text(b) for b in bars)


@contextmanager
def watch(key: str, every: float = PRINT_EVERY, poll: float = 1.0, show=None):
    """While the body runs one stage: name a fresh progress file in $COMPSENSE_PROGRESS (the kernel the
    body starts inherits it), and print `progress_line` whenever the kernel's bars moved, at most every
    `every` seconds (first after `every`). `show` prints a line (default: tqdm.write, which keeps the
    runner's own bars intact). The file and the variable are gone afterwards."""
    import tempfile

    if show is None:
        from tqdm.auto import tqdm

        show = tqdm.write
    before = os.environ.get(ENV)
    with tempfile.TemporaryDirectory(prefix="compsense-progress-") as folder:
        path = Path(folder) / f"{key}.json"
        os.environ[ENV] = str(path)
        started, done = time.monotonic(), threading.Event()

        def print_loop():
            shown, last = None, started
            while not done.wait(poll):
                bars = read_bars(path)
                now = time.monotonic()
                if bars and bars != shown and now - last >= every:
                    show(progress_line(key, now - started, bars))
                    shown, last = bars, now

        thread = threading.Thread(target=print_loop, name="compsense-progress-watch", daemon=True)
        thread.start()
        try:
            yield path
        finally:
            done.set()
            thread.join(timeout=5)
            if before is None:
                os.environ.pop(ENV, None)
            else:
                os.environ[ENV] = before
