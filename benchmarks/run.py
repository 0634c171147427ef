"""Benchmark runner: the engine against hand-written NumPy and PyTorch (CPU, at 1 and 2 threads).

Run ``make bench`` (or ``python -m benchmarks.run [--filter TEXT] [--repeat N] [--threads 1,2]``).
It prints one table per thread count, ``case | engine ms | numpy ms | torch ms | engine/numpy |
engine/torch``, then the engine/torch ratios side by side with each case's goal; a ratio below 1
means the engine is faster. Benchmarks are not tests: nothing here asserts a time.

Protocol for adding a benchmark
-------------------------------
Create ``benchmarks/bench_<topic>.py`` with a module-level list ``CASES``. Each case is any object
with these attributes (``benchmarks.run.Case`` is a ready-made dataclass):

- ``name``: short label for the table row, e.g. ``"mlp 784-256-10 b128 SGD step"``;
- ``engine``, ``numpy``, ``torch``: zero-argument *setup* functions, or ``None`` when that column
  does not apply. The runner calls each setup once (untimed); it builds data, model and optimizer
  and returns the zero-argument function that does one unit of work (e.g. one training step),
  which the runner times. Import ``torch`` inside the torch setup, never at module level, so the
  module loads without torch (the column then reads ``n/a``);
- ``torch_goal`` (optional): the engine/torch ratio the case should stay at or under (the summary
  marks it ``ok`` or ``MISSED``).

All three setups of a case should build the same problem from the same seed, so the columns
compare like with like. Keep one call in the millisecond range; the runner repeats it.

Measurement
-----------
- Each case runs in its own Python process per thread count, so one case's heap and threads cannot
  slow the next; within it the engine, NumPy and PyTorch columns share the process.
- Threads: ``--threads 1,2`` (default; ``BENCH_THREADS=1`` for one count) runs every case at each
  count N: PyTorch gets ``torch.set_num_threads(N)``, NumPy's BLAS gets N threads
  (``OMP/OPENBLAS/MKL_NUM_THREADS``, set in the child's environment before NumPy is imported,
  overriding what the caller exported) and so does the engine's conv2d (``ENGINE_NUM_THREADS``):
  the engine and PyTorch always run at the same thread count. On a busy machine (load average near the CPU count) PyTorch's
  OpenMP threads wait on each other and small torch steps slow down many times over; the header
  prints the load and warns, so quote figures from a quiet machine.
- Each function is called ``--warmup`` times, then its inner loop count ``n`` is doubled until one
  sample of ``n`` calls lasts at least ``--min-time`` seconds. Then ``--repeat`` samples are taken,
  round-robin across the columns of a case (so a slow moment of a shared machine hits all of
  them), each sample after a 0.3 s pause (0.05 s at one thread) and one untimed call of its own (so that the previous
  column's spinning threads and cache contents do not bill this one), and the table shows the median time per call, measured with ``time.perf_counter``.
- ``--cpu`` measures CPU time (``time.process_time``) instead: other processes' load then barely
  moves the figures, but every thread's time is summed, so use it with ``BENCH_THREADS=1``.
"""

from __future__ import annotations

import os

THREAD_COUNTS = os.environ.get("BENCH_THREADS", "1,2")  # the default of --threads
THREADS = int(THREAD_COUNTS.split(",")[0])  # this process's count (a child gets its own)
# the engine's conv2d gets as many threads as the others (engine/ops/_parallel.py: by default it
# adds none to a BLAS that is not pinned to one thread)
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "ENGINE_NUM_THREADS")
for _variable in THREAD_VARIABLES:
    os.environ.setdefault(_variable, str(THREADS))

import argparse  # noqa: E402
import importlib  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
COLUMNS = ("engine", "numpy", "torch")
SETTLE_SECONDS = 0.3


@dataclass
class Case:
    """One benchmark row; each column is a setup function returning the callable to time."""

    name: str
    engine: Callable[[], Callable[[], object]] | None = None
    numpy: Callable[[], Callable[[], object]] | None = None
    torch: Callable[[], Callable[[], object]] | None = None
    torch_goal: float | None = None  # engine/torch should stay at or under this ratio


@dataclass
class Result:
    seconds: float | None = None  # median seconds per call
    note: str = ""  # why there is no time ("n/a", "torch missing", "error")


def discover(directory: Path = HERE) -> list[tuple[str, object]]:
    """(module name, case) for every case of every ``bench_*.py`` in ``directory``, sorted."""
    cases = []
    for path in sorted(Path(directory).glob("bench_*.py")):
        if Path(directory).resolve() == HERE:
            module = importlib.import_module(f"benchmarks.{path.stem}")
        else:
            spec = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        if not hasattr(module, "CASES"):
            raise AttributeError(f"{path.name} defines no CASES list (see benchmarks/run.py)")
        cases.extend((path.stem, case) for case in module.CASES)
    return cases


_clock = time.perf_counter  # --cpu: time.process_time


def _sample(fn: Callable[[], object], number: int) -> float:
    start = _clock()
    for _ in range(number):
        fn()
    return _clock() - start


def calibrate(fn: Callable[[], object], min_time: float, warmup: int) -> int:
    """Calls per sample so that one sample lasts at least ``min_time`` seconds."""
    for _ in range(warmup):
        fn()
    number = 1
    while _sample(fn, number) < min_time and number < 1 << 20:
        number *= 2
    return number


def _configure_torch() -> str:
    try:
        import torch
    except ImportError:
        return "not installed"
    torch.set_num_threads(THREADS)
    return f"{torch.__version__} ({torch.get_num_threads()} threads)"


def measure_case(case, repeat: int, min_time: float, warmup: int, errors: list[str]) -> dict[str, Result]:
    """Median seconds per call of each column of ``case``."""
    results = {column: Result(note="n/a") for column in COLUMNS}
    runners: dict[str, tuple[Callable[[], object], int]] = {}
    for column in COLUMNS:
        setup = getattr(case, column, None)
        if setup is None:
            continue
        try:
            fn = setup()
            runners[column] = (fn, calibrate(fn, min_time, warmup))
        except ImportError as error:
            results[column] = Result(note=f"{getattr(error, 'name', None) or 'module'} missing")
        except Exception:  # one broken column must not hide the others
            results[column] = Result(note="error")
            errors.append(f"{case.name} [{column}]:\n{traceback.format_exc()}")
    samples: dict[str, list[float]] = {column: [] for column in runners}
    for _ in range(repeat):
        for column, (fn, number) in runners.items():
            # PyTorch's OpenMP threads spin for a while after their work; let them go to sleep
            # so that they do not bill the next column, then warm this column's caches
            time.sleep(SETTLE_SECONDS if THREADS > 1 else SETTLE_SECONDS / 6)  # one thread: nothing spins
            fn()
            samples[column].append(_sample(fn, number) / number)
    for column, values in samples.items():
        results[column] = Result(seconds=statistics.median(values))
    return results


def _ms(result: Result) -> str:
    return f"{result.seconds * 1e3:.3f}" if result.seconds is not None else result.note


def _ratio(a: Result, b: Result) -> str:
    return f"{a.seconds / b.seconds:.2f}x" if a.seconds and b.seconds else "-"


def format_table(rows: list, header: tuple | None = None) -> str:
    """A Markdown table: one row per (case name, results) pair, or rows of cells under ``header``."""
    if header is None:
        header = ("case", "engine ms", "numpy ms", "torch ms", "engine/numpy", "engine/torch")
        rows = [
            (
                name,
                _ms(r["engine"]),
                _ms(r["numpy"]),
                _ms(r["torch"]),
                _ratio(r["engine"], r["numpy"]),
                _ratio(r["engine"], r["torch"]),
            )
            for name, r in rows
        ]
    body = rows
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]

    def line(cells):
        return (
            "| "
            + " | ".join(
                cell.ljust(width) if i == 0 else cell.rjust(width) for i, (cell, width) in enumerate(zip(cells, widths))
            )
            + " |"
        )

    rule = "|" + "|".join("-" * (w + 1) + (":" if i else "-") for i, w in enumerate(widths)) + "|"
    return "\n".join([line(header), rule, *(line(row) for row in body)])


def format_goals(cases, tables: dict[int, list[tuple[str, dict[str, Result]]]]) -> str:
    """engine/torch per thread count next to each case's goal (Markdown)."""
    counts = list(tables)
    header = ("case", *(f"engine/torch, {n} thread{'s' if n > 1 else ''}" for n in counts), "goal")
    body = []
    for i, case in enumerate(cases):
        goal = getattr(case, "torch_goal", None)
        cells = []
        for n in counts:
            r = tables[n][i][1]
            ratio = _ratio(r["engine"], r["torch"])
            if goal is not None and r["engine"].seconds and r["torch"].seconds:
                ratio += " ok" if r["engine"].seconds / r["torch"].seconds <= goal else " MISSED"
            cells.append(ratio)
        body.append((case.name, *cells, f"<= {goal:.2f}x" if goal is not None else "-"))
    return format_table(body, header)


def _measure_one(args) -> int:
    """Child process: measure case number ``args.one`` and print its results as one JSON line."""
    _configure_torch()
    _, case = [c for c in discover(args.dir) if args.filter in c[1].name][args.one]
    errors: list[str] = []
    results = measure_case(case, args.repeat, args.min_time, args.warmup, errors)
    print(json.dumps({"results": {k: [r.seconds, r.note] for k, r in results.items()}, "errors": errors}))
    return 0


def _measure_in_child(index: int, threads: int, args, errors: list[str]) -> dict[str, Result]:
    """Each case runs in a fresh process: no heap state, cache or idle-spinning library threads
    left behind by an earlier case can bill a later one. ``threads`` goes to every library."""
    command = [
        sys.executable,
        "-m",
        "benchmarks.run",
        "--one",
        str(index),
        "--filter",
        args.filter,
        "--repeat",
        str(args.repeat),
        "--min-time",
        str(args.min_time),
        "--warmup",
        str(args.warmup),
        "--dir",
        str(args.dir),
    ] + (["--cpu"] if args.cpu else [])
    env = dict(os.environ, BENCH_THREADS=str(threads), **{v: str(threads) for v in THREAD_VARIABLES})
    done = subprocess.run(command, cwd=HERE.parent, capture_output=True, text=True, env=env)
    try:
        report = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        errors.append(f"case {index} (child process exit {done.returncode}):\n{done.stderr[-2000:]}")
        return {column: Result(note="error") for column in COLUMNS}
    errors.extend(report["errors"])
    return {k: Result(seconds=v[0], note=v[1]) for k, v in report["results"].items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.split("\n")[0])
    parser.add_argument("--filter", default="", help="run only cases whose name contains this text")
    parser.add_argument("--repeat", type=int, default=30, help="timed samples per column (median)")
    parser.add_argument(
        "--threads", default=THREAD_COUNTS, help="thread counts to run every case at, comma-separated (default 1,2)"
    )
    parser.add_argument("--min-time", type=float, default=0.05, help="seconds per sample, at least")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls before timing")
    parser.add_argument("--dir", type=Path, default=HERE, help="where the bench_*.py modules are")
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="time with the process's CPU time instead of the wall clock: steadier on a "
        "shared machine; it sums all threads' time, so use it with BENCH_THREADS=1",
    )
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)  # child process
    args = parser.parse_args(argv)
    if args.cpu:
        global _clock
        _clock = time.process_time
    if args.one is not None:
        return _measure_one(args)

    import numpy

    torch_status = _configure_torch()
    cases = [(module, case) for module, case in discover(args.dir) if args.filter in case.name]
    timer = "process_time" if args.cpu else "perf_counter"
    clock = time.get_clock_info(timer)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    print(
        f"python {platform.python_version()} | numpy {numpy.__version__} | torch {torch_status.split(' (')[0]} | "
        f"{os.cpu_count()} CPUs | "
        f"load average {load:.2f}\n"
        f"median of {args.repeat} samples of >= {args.min_time * 1e3:.0f} ms each, "
        f"after {args.warmup} warm-up calls; {timer} resolution {clock.resolution:.0e} s"
        + (" (CPU time: every thread's time summed)" if args.cpu else "")
    )
    if load > 0.5 * (os.cpu_count() or 1):
        print(
            f"WARNING: load average {load:.1f} on {os.cpu_count()} CPUs: other processes compete "
            "for the cores; multi-threaded timings (torch above all) are unreliable."
        )
    if not cases:
        print(f"no benchmark cases found (bench_*.py with CASES in {args.dir})")
        return 0

    errors: list[str] = []
    counts = [int(n) for n in args.threads.split(",")]
    tables = {}
    for threads in counts:
        rows = []
        for index, (module, case) in enumerate(cases):
            print(f"  {threads} thread(s): {module}: {case.name} ...", file=sys.stderr, flush=True)
            rows.append((case.name, _measure_in_child(index, threads, args, errors)))
        tables[threads] = rows
        print(f"\n{threads} thread(s) (torch, BLAS and the engine's conv2d alike):\n")
        print(format_table(rows))
    print("\nratios: engine time / other time (below 1.00x: the engine is faster)\n")
    print(format_goals([case for _, case in cases], tables))
    for error in errors:
        print(f"\nERROR in {error}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
