"""``python -m harness bench``: its modes, each printing its tables, and ``--everything``.

Each mode is a section function of the parsed options that prints its tables and returns a
:class:`Section`: the exit code and a one-line headline of what it measured (the misses
named). ``--everything`` runs every section in one process, one after the other, in the order
of issue 22's parts (first calls, speed on one thread, threads, memory, scaling, runner),
and ends with the headlines, each section's wall time and the total: every figure of the
bench in one run. A section that fails prints its error and the run goes on with the next.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.cli.common import check_processes, methods_to_compile
from harness.core import registry
from harness.core.errors import HarnessError

DEFAULT_BENCH_OUT = Path("runs/bench/bench.json")
BENCH_COLUMNS = {
    "case": "case", "method": "method", "n_rows": "rows", "seconds": "seconds",
    "ratio_to_predict": "x predict", "target_ratio": "max x", "reference": "versus",
    "reference_status": "status", "reference_seconds": "its seconds", "speedup": "speed-up",
    "target_speedup": "min speed-up", "max_abs_diff": "max|diff|",
    "max_diff_in_std": "max|diff|/std", "note": "note", "memory_ratio": "memory x",
    "one_thread_seconds": "1-thread s", "thread_speedup": "threads x",
    "cpu_thread_speedup": "threads x (CPU)",
    "target_thread_speedup": "min threads x", "same_as_one_thread": "same bits",
    "first_thread_speedup": "threads x, first try",
    "meets_target": "meets",
}
#: the modes that replace the speed table, by option name
MODES = ("runner", "scaling", "cold", "memory")
#: threads of the thread section of ``--everything`` (issue 22, part 5: 2 against 1)
EVERYTHING_THREADS = 2


@dataclass(frozen=True)
class Section:
    """What a bench section reports back: its exit code and a one-line headline."""

    code: int
    headline: str


def _say(args) -> Callable[[str], None] | None:
    return None if args.no_progress else (lambda text: print(text, file=sys.stderr))


def step_bar(no_progress: bool):
    """A tqdm bar of steps on stderr and the ``on_step(text, done, total)`` that moves it."""
    from tqdm import tqdm

    bar = tqdm(file=sys.stderr, disable=no_progress, unit="step", dynamic_ncols=True)

    def progress(text: str, done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)
        bar.set_description_str(text[:60])

    return bar, progress


def _set_threads(threads: int) -> None:
    import numba

    if not 1 <= threads <= numba.config.NUMBA_NUM_THREADS:
        raise HarnessError(f"--threads must be in [1, {numba.config.NUMBA_NUM_THREADS}]; "
                           f"got {threads}.")
    numba.set_num_threads(threads)


def _runner(args) -> Section:
    from harness.bench.overhead import run_overhead

    runner, store = run_overhead(on_step=_say(args))
    print("runner overhead per cell (jobs=1; wall minus the cells' own explain and predict):")
    print(runner.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    print("store and reports, per cell:")
    print(store.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    largest = runner[runner["cells"] == runner["cells"].max()]
    overheads = ", ".join(f"{row.executor} {row.overhead_ms:.2f} ms"
                          for row in largest.itertuples())
    return Section(0, f"runner overhead per cell at {int(largest['cells'].max())} cells: "
                      f"{overheads}")


def _scaling(args) -> Section:
    from harness.bench.scaling import BUDGET, MIN_SPAN, QUICK, run_scaling, scaling_record

    _set_threads(args.threads)
    budget = args.budget if args.budget is not None else (
        QUICK["budget"] if args.quick else BUDGET)
    if not 0 < budget < math.inf:
        raise HarnessError(f"--budget must be a number of seconds > 0; got {budget}.")
    options = {"budget": budget, "methods": args.method,
               **({"fit_budget": QUICK["fit_budget"], "repeat": QUICK["repeat"]}
                  if args.quick else {"repeat": args.repeat})}
    result = run_scaling(**options, on_step=_say(args))
    out = args.out if args.out != DEFAULT_BENCH_OUT else DEFAULT_BENCH_OUT.with_name(
        "scaling.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(scaling_record(result), indent=1), encoding="utf-8")
    result["points"].to_csv(out.with_suffix(".csv"), index=False)
    written = registry.write_scaling_report(out)
    points = result["points"]
    skipped = points[points["status"] != "ok"]
    print(f"fitted exponents (time ~ size^k; stated in brackets; * disagrees; ? not judged: "
          f"sizes span less than {MIN_SPAN:g}x, or a slope below the stated order over points "
          f"the flat part may dominate; notes in {written[0].name}):")
    print(exponent_table(result["exponents"]).to_string())
    print(f"base point: {result['settings']['base']}; {int((points['status'] == 'ok').sum())} "
          f"points timed, {len(skipped)} not ({', '.join(sorted(set(skipped['status'])))}"
          f"; reasons in the table)")
    print(f"table: {out}; figure: {written[-1]}; wall time: {result['wall_seconds']:.1f} s")
    exponents = result["exponents"]
    stated = exponents[exponents["stated"].notna()]
    disagree = stated[stated["agrees"] == False]  # noqa: E712 (None: not judged)
    named = "".join(f"; disagrees: {row.method} on {row.axis} {row.exponent:.2f}"
                    for row in disagree.itertuples())
    return Section(0, f"{int((points['status'] == 'ok').sum())} points; of "
                      f"{len(stated)} stated exponents {int((stated['agrees'] == True).sum())} "  # noqa: E712
                      f"agree, {len(disagree)} disagree, "
                      f"{int(stated['agrees'].isna().sum())} not judged{named}")


def exponent_table(exponents):
    """Fitted exponents as a method x axis table of text: the exponent, the stated order in
    brackets, ``*`` where they disagree and ``?`` where the exponent is shown, not judged."""
    from harness.core.complexity import stated_label

    def cell(row) -> str:
        if row.exponent != row.exponent:  # NaN: no fit
            return "-"
        label = stated_label(getattr(row, "stated_low", row.stated), row.stated)
        stated = f" [{label}]" if label else ""
        mark = "*" if row.agrees is False else ""
        if row.agrees is None and stated:  # shown, not judged (the note says why)
            mark = "?"
        return f"{row.exponent:.2f}{stated}{mark}"

    table = exponents.assign(cell=[cell(row) for row in exponents.itertuples()])
    return table.pivot(index="method", columns="axis", values="cell").fillna("-")


def _cold(args) -> Section:
    from harness.bench.cold import MEETS, MISSES, OWN_WORK, TARGET_SECONDS, run_cold

    check_processes(args.processes)
    names = methods_to_compile(args.method)
    bar, progress = step_bar(args.no_progress)
    try:  # (d), the first import, compiles every installed method: only when all are asked
        table, summary = run_cold(names, args.processes, import_once=not args.method,
                                  on_step=progress)
    finally:
        bar.close()
    print(f"(a) parallel compile of every kernel into an empty cache: "
          f"{summary['compile_wall']:.1f} s wall on {summary['processes']} processes "
          f"(in the workers: {summary['compile_work']:.1f} s wall, "
          f"{summary['compile_cpu']:.1f} s CPU)")
    if "import_wall" in summary:
        print(f"(d) the first `import harness` on an empty cache (HARNESS_COMPILE=import, the "
              f"default; it runs (a)): {summary['import_wall']:.1f} s wall, "
              f"{summary['import_cpu']:.1f} s CPU {summary['import_error']}".rstrip())
    print(f"(b) first call from that cache (what every first call costs after (d)), then a "
          f"second call (warm); (c) first call from an empty cache with HARNESS_COMPILE=lazy: "
          f"one fresh process each, one numba thread, 50-tree random forest on diabetes; "
          f"target <= {TARGET_SECONDS:g} s")
    columns = {"method": "method", "compile_seconds": "(a) its compile s",
               "first_call_wall": "(b) wall s", "first_call_cpu": "(b) cpu s",
               "warm_wall": "(b) warm s", "first_call_extra": "(b) - warm s",
               "verdict": "(b) verdict", "empty_cache_wall": "(c) wall s",
               "empty_cache_cpu": "(c) cpu s", "meets": "(c) meets", "note": "note"}
    shown = table[[c for c in columns if c in table]].rename(columns=columns)
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    print(f"bench wall time: {summary['wall']:.1f} s")
    first_import = (f"; first import on an empty cache {summary['import_wall']:.1f} s"
                    if "import_wall" in summary else "")
    meets = int((table["verdict"] == MEETS).sum())

    def named(kind: str) -> str:
        rows = table[table["verdict"] == kind].itertuples()
        return ", ".join(f"{row.method} {row.first_call_wall:.2f} s (warm {row.warm_wall:.2f} s, "
                         f"+{row.first_call_extra:.2f} s)" for row in rows) or "none"

    return Section(0, f"first calls after the compile within {TARGET_SECONDS:g} s: {meets} of "
                      f"{len(table)}; over by their own work alone (the warm call over "
                      f"{TARGET_SECONDS:g} s, the first call's extra within it): "
                      f"{named(OWN_WORK)}; missed: {named(MISSES)}{first_import}")


def _memory(args) -> Section:
    from harness.bench.memory import run_memory

    _set_threads(args.threads)  # the measuring processes use it
    bar, progress = step_bar(args.no_progress)
    start = time.perf_counter()
    try:
        table = run_memory(threads=args.threads, on_step=progress)
    finally:
        bar.close()
    out = args.out.with_name("memory.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_json(out, orient="records", indent=1)
    print("memory of each local method's explain (MB; extra = peak above the start, where X "
          "and the forest are in memory, minus the output):")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"wall time {time.perf_counter() - start:.0f} s; table: {out}")
    largest = table[table["n_rows"] == table["n_rows"].max()]
    peaks = ", ".join(f"{row.method} peak RSS {row.rss_peak_mb:.0f} MB, extra traced "
                      f"{row.extra_traced_mb:.1f} MB" for row in largest.itertuples())
    return Section(0, f"at {int(table['n_rows'].max()):,} rows: {peaks}")


def _table(args) -> Section:
    from harness.bench.runner import run_bench

    _set_threads(args.threads)
    bar, progress = step_bar(args.no_progress)
    try:
        table = run_bench(args.case, args.method, args.repeat, args.all_rows,
                          on_step=progress)
    finally:
        bar.close()
    if not table.empty:  # printed first: the figures stay on screen if the write fails
        shown = table[list(BENCH_COLUMNS)].rename(columns=BENCH_COLUMNS).dropna(axis=1,
                                                                              how="all")
        print(shown.to_string(index=False, float_format=lambda v: f"{v:.3g}"), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_json(args.out, orient="records", indent=1)
    if table.empty:
        print("no timings: no method of these cases matches --method")
        return Section(0, "no timings: no method of these cases matches --method")
    missed = table[table["meets_target"] == False]  # noqa: E712 (None = no target)
    print(f"{len(table)} timings, {len(missed)} miss their target; table: {args.out}")
    named = ", ".join(f"{row.case} {row.method}"  # a ratio to predict has no reference
                      + (f" vs {row.reference}" if isinstance(row.reference, str) else "")
                      for row in missed.itertuples())
    retried = _retried(table)
    if retried:
        print(f"timed twice, the first try under the thread target: {retried}")
    return Section(0, f"{len(table)} timings on {args.threads} thread(s), {len(missed)} miss "
                      f"their target{f': {named}' if named else ''}"
                      f"{f'; timed twice: {retried}' if retried else ''}")


def _retried(table) -> str:
    """The methods timed beside one thread twice, their first try under the thread target
    (:func:`harness.bench.runner.timed_threads_retried`), with both speed-ups."""
    rows = table[table["first_thread_speedup"].notna()].drop_duplicates(["case", "method"])
    return ", ".join(f"{row.case} {row.method} (first {row.first_thread_speedup:.2f}x, kept "
                     f"{row.thread_speedup:.2f}x)" for row in rows.itertuples())


def _threads_table(args) -> Section:
    """The speed table on :data:`EVERYTHING_THREADS` threads, of the methods with a thread
    target (each also timed on one thread, alternating)."""
    import numba

    from harness.bench.runner import THREAD_TARGETS

    if numba.config.NUMBA_NUM_THREADS < EVERYTHING_THREADS:
        print(f"skipped: numba has {numba.config.NUMBA_NUM_THREADS} thread(s) here")
        return Section(0, f"skipped: numba has {numba.config.NUMBA_NUM_THREADS} thread(s)")
    try:
        return _table(argparse.Namespace(**{
            **vars(args), "threads": EVERYTHING_THREADS, "method": list(THREAD_TARGETS),
            "out": args.out.with_name(f"{args.out.stem}-threads{args.out.suffix}")}))
    finally:
        numba.set_num_threads(1)


def _scaling_beside_table(args) -> Section:
    """The scaling section writing ``scaling.json`` beside the speed table (``--out`` names
    the table's file in ``--everything``)."""
    return _scaling(argparse.Namespace(**{**vars(args),
                                          "out": args.out.with_name("scaling.json")}))


#: ``--everything``: (title, section) in the order of issue 22's parts
EVERYTHING: tuple[tuple[str, Callable[[argparse.Namespace], Section]], ...] = (
    ("first calls, from a fresh cache and from an empty one (--cold)", _cold),
    ("speed against predict and the other libraries, one thread", _table),
    (f"{EVERYTHING_THREADS} threads against one (--threads {EVERYTHING_THREADS}, "
     f"the methods with a thread target)", _threads_table),
    ("memory at 10^4-10^6 rows (--memory)", _memory),
    ("scaling over n, p, trees and depth (--scaling)", _scaling_beside_table),
    ("the runner's overhead per cell, the store and the reports (--runner)",
     _runner),
)


def _everything(args) -> int:
    """Every section of :data:`EVERYTHING`, then their headlines, wall times and the total."""
    if args.threads != 1 or args.method or args.case or args.all_rows:
        raise HarnessError(
            "--everything runs every section on its own settings; got it with "
            f"--threads {args.threads}, --method {args.method}, --case {args.case}, "
            f"--all-rows {args.all_rows}. Run a single mode for a subset.")
    start, done = time.perf_counter(), []
    for title, section in EVERYTHING:
        print(f"\n== {title} ==", flush=True)
        began = time.perf_counter()
        _set_threads(1)  # each section starts on one thread, whatever the last one left
        try:
            outcome = section(args)
        except Exception as exc:  # noqa: BLE001 (one failing section never ends the run)
            traceback.print_exc(file=sys.stderr)
            outcome = Section(1, f"error: {type(exc).__name__}: {exc}")
        done.append((title, outcome, time.perf_counter() - began))
        print(flush=True)
    total = time.perf_counter() - start
    print("== every part of the bench, in one run ==")
    for title, outcome, seconds in done:
        print(f"- {title} [{seconds:.0f} s]: {outcome.headline}")
    print(f"bench wall time: {total:.0f} s ({total / 60:.1f} min)")
    _set_threads(1)
    return max(outcome.code for _, outcome, _ in done)


def check_out(out: Path) -> None:
    """``--out`` names the JSON file of the table, beside which the other modes write theirs:
    refused before any timing when it is a folder or not a ``.json`` name (a folder failed
    the one-thread table's write after its 24 minutes of timings)."""
    if out.is_dir():
        raise HarnessError(f"--out names the table's JSON file (default {DEFAULT_BENCH_OUT}); "
                           f"got the folder {str(out)!r}: give a file in it, such as "
                           f"{str(out / DEFAULT_BENCH_OUT.name)!r}.")
    if out.suffix != ".json":
        raise HarnessError(f"--out names the table's JSON file, a name ending in .json "
                           f"(default {DEFAULT_BENCH_OUT}); got {str(out)!r}.")


def run_bench_command(args) -> int:
    """``python -m harness bench``: one mode, or ``--everything``."""
    if args.repeat < 1:
        raise HarnessError(f"--repeat must be an int >= 1; got {args.repeat}.")
    check_out(args.out)
    chosen = [mode for mode in MODES if getattr(args, mode)]
    if args.everything:
        if chosen:
            raise HarnessError(f"--everything runs every mode; got it with --{chosen[0]}.")
        return _everything(args)
    if len(chosen) > 1:
        raise HarnessError(f"give one of --{', --'.join(MODES)}; got --{' and --'.join(chosen)}.")
    section = {"runner": _runner, "cold": _cold, "memory": _memory,
               "scaling": _scaling}[chosen[0]](args) if chosen else _table(args)
    print(section.headline)  # the line --everything lists for the section
    return section.code
