"""Command line: ``python -m harness compare | list | report | bench | reproduce | compile``.

Bad input (unknown name, bad parameter, unreadable config) prints one line naming what is
allowed and what was received, exits with code 2 and writes nothing. ``compare``'s options,
from flags or from a TOML config, are checked by :mod:`harness.run.options`, the same rules
as the Python API's. Without a command, the help is printed and the exit code is 2.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import tomllib
from pathlib import Path

from harness import __version__
from harness.cli.bench import DEFAULT_BENCH_OUT, run_bench_command
from harness.cli.common import check_processes, methods_to_compile
from harness.core import registry
from harness.core.errors import BadInputError, HarnessError
from harness.run.options import check_option

EXIT_BAD_INPUT = 2
CONFIG_KEYS = ("datasets", "models", "methods", "seeds", "out", "jobs", "timeout", "executor",
               "explain_on", "max_explain", "force", "max_memory", "scheduler")
MEMORY_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def memory_size(text: str) -> int:
    """Bytes from '512M', '2G', '1.5G' or a plain number of bytes (argparse type)."""
    value = str(text).strip().upper().removesuffix("B").removesuffix("I")
    unit = value[-1:] if value[-1:] in MEMORY_UNITS else ""
    try:
        number = float(value[: len(value) - len(unit)]) * MEMORY_UNITS[unit]
    except ValueError:
        number = -1.0
    if not 1 <= number < math.inf:  # 'inf' and '1e400' parse as floats but are no size
        raise argparse.ArgumentTypeError(
            f"expected a size such as 512M, 2G or a number of bytes; got {text!r}")
    return int(number)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def _flatten(values):
    if values is None:
        return None
    return [item for group in values for item in group]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="harness",
                     description="Benchmark variable-importance measures of tree ensembles.",
                     epilog="Run 'python -m harness COMMAND --help' for the options of a "
                            "command.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    # not required: without a command, main() prints the whole help instead of one line
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)
    cmp = commands.add_parser("compare", help="run a grid of datasets x models x methods")
    cmp.add_argument("-d", "--dataset", action="append", nargs="+", metavar="SPEC",
                     help="dataset spec, e.g. led or 'led[n_samples=200]' (repeatable)")
    cmp.add_argument("-m", "--method", action="append", nargs="+", metavar="SPEC",
                     help="method spec, e.g. 'treeshap[perturbation=interventional]'")
    cmp.add_argument("--model", action="append", nargs="+", metavar="SPEC",
                     help="model spec, e.g. 'extra_trees[n_estimators=100,max_features=1]' "
                          "or 'hist_gradient_boosting[learning_rate=0.05]' (names: see list)")
    cmp.add_argument("--seeds", nargs="+", type=int, metavar="N",
                     help="distinct seeds in [0, 2**32 - 1] (default: 0)")
    cmp.add_argument("--out", help="run folder (default: runs/compare)")
    cmp.add_argument("--jobs", type=int,
                     help="cells run in parallel (default: the cores this process may use)")
    cmp.add_argument("--timeout", type=float,
                     help="hard per-cell timeout in seconds, in (0, 1e6] (default: 600)")
    cmp.add_argument("--executor", choices=("process", "inprocess", "dask"),
                     help="process (default: isolated, with timeouts), inprocess (debug) or "
                          "dask (a dask.distributed cluster; pip install 'dask[distributed]')")
    cmp.add_argument("--scheduler", metavar="ADDRESS",
                     help="with --executor dask: scheduler address such as tcp://host:8786 "
                          "(default: start a LocalCluster of worker processes)")
    cmp.add_argument("--max-memory", type=memory_size, dest="max_memory", metavar="SIZE",
                     help="per-cell memory limit such as 2G (a cell over it becomes an error)")
    cmp.add_argument("--explain-on", choices=("train", "test", "all"), dest="explain_on",
                     help="rows that local methods explain (default: train)")
    cmp.add_argument("--max-explain", type=int, dest="max_explain",
                     help="explain at most this many rows (a seeded subset)")
    cmp.add_argument("--config", type=Path, help="TOML file with any of the options above")
    cmp.add_argument("--force", action="store_true", default=None,
                     help="recompute cells already stored")
    cmp.add_argument("--no-progress", action="store_true", help="no progress bar")
    commands.add_parser("list", help="methods, datasets and models with their parameters")
    rpr = commands.add_parser("reproduce", help="reproduce published results as gallery pages")
    rpr.add_argument("targets", nargs="*", metavar="TARGET",
                     help="target names (see --list), or 'all'")
    rpr.add_argument("--list", action="store_true", dest="list_targets",
                     help="list the targets and their sources")
    rpr.add_argument("--quick", action="store_true",
                     help="reduced runs (fewer trees or rows, stated on each page)")
    rpr.add_argument("--out", type=Path, default=None,
                     help="folder of the pages (default: runs/reproduce/gallery)")
    rpr.add_argument("--gallery", action="store_true",
                     help="write the pages into the committed gallery, reports/gallery "
                          "(full-scale runs only)")
    rpr.add_argument("--store", type=Path, default=None,
                     help="where the targets' run stores live (default: runs/reproduce)")
    rpr.add_argument("--jobs", type=int,
                     help="cells run in parallel (default: the cores this process may use)")
    rpr.add_argument("--no-progress", action="store_true", help="no progress lines")
    rep = commands.add_parser("report", help="rebuild the reports of a run folder")
    rep.add_argument("out", type=Path)
    bench = commands.add_parser(
        "bench", help="time methods as multiples of predict, beside shap and others")
    bench.add_argument("--case", action="append", metavar="NAME",
                       help="bench case (repeatable; default: all)")
    bench.add_argument("--method", action="append", metavar="NAME",
                       help="only these methods (repeatable)")
    bench.add_argument("--repeat", type=int, default=3, help="timed runs, best kept (3)")
    bench.add_argument("--all-rows", action="store_true",
                       help="explain every row with every method, TreeSHAP included (slow: "
                            "shap alone then takes about 7 minutes on A1 and C)")
    bench.add_argument("--threads", type=int, default=1,
                       help="threads of the compiled kernels (default 1: the forest's "
                            "predict and the other libraries run on one thread); above 1, "
                            "each method is also timed on one thread and the speed-up shown "
                            "(wall, and for idle cores from per-thread CPU time)")
    bench.add_argument("--out", type=Path, default=DEFAULT_BENCH_OUT,
                       help="where to write the table as JSON (runs/bench/bench.json)")
    bench.add_argument("--runner", action="store_true",
                       help="instead: the runner's own overhead per cell for each executor at "
                            "10^3 and 10^4 cells of a trivial method, and how the store and "
                            "the reports grow (harness.bench.overhead)")
    bench.add_argument("--scaling", action="store_true",
                       help="instead: time every method over n, p, trees and depth around a "
                            "base point, fit each one's exponent and draw the log-log curves "
                            "(harness.bench.scaling; --out defaults to runs/bench/"
                            "scaling.json)")
    bench.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                       help="with --scaling: skip points predicted to take longer (1.0; "
                            "--quick: 0.25)")
    bench.add_argument("--quick", action="store_true",
                       help="with --scaling: a smaller budget and fewer repeats")
    bench.add_argument("--cold", action="store_true",
                       help="instead: in a fresh numba cache, the parallel compile of every "
                            "kernel, then each method's first call from that cache and from "
                            "an empty one (HARNESS_COMPILE=lazy), and without --method the "
                            "first `import harness` on an empty cache, each in a fresh "
                            "process (harness.bench.cold)")
    bench.add_argument("--processes", type=int,
                       help="--cold: compile processes (default: one per usable core)")
    bench.add_argument("--memory", action="store_true",
                       help="instead: peak memory (resident and traced) of every local method "
                            "at 10^4-10^6 rows x 20 features, 100-tree forest, each in a "
                            "fresh process (harness.bench.memory; about 10 minutes)")
    bench.add_argument("--everything", action="store_true",
                       help="every figure of the bench in one run: --cold, the speed table "
                            "on one thread, --threads 2 on the methods with a thread target, "
                            "--memory, --scaling and --runner, then a headline of each with "
                            "its wall time (34 minutes on this 2-core machine)")
    bench.add_argument("--no-progress", action="store_true", help="no progress bar")
    cmpl = commands.add_parser(
        "compile", help="compile every method's kernels into numba's cache, in parallel")
    cmpl.add_argument("-m", "--methods", nargs="+", action="append", metavar="NAME",
                      help="only these methods (default: every installed method)")
    cmpl.add_argument("--processes", type=int,
                      help="compile processes (default: one per usable core)")
    cmpl.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def _read_config(path: Path) -> dict:
    """The options of a TOML config, each checked as ``compare`` checks it."""
    try:
        with open(path, "rb") as handle:
            config = tomllib.load(handle)
    except OSError as exc:
        raise HarnessError(f"Cannot read config {str(path)!r}: {exc.strerror}.") from exc
    except tomllib.TOMLDecodeError as exc:
        raise HarnessError(f"Config {str(path)!r} is not valid TOML: {exc}.") from exc
    unknown = sorted(set(config) - set(CONFIG_KEYS))
    if unknown:
        raise HarnessError(f"Config {str(path)!r} has unknown key {unknown[0]!r}; allowed keys: "
                           f"{', '.join(CONFIG_KEYS)}.")
    checked = {}
    for key, value in config.items():
        try:
            if key == "max_memory" and isinstance(value, str):
                value = _config_memory_size(value)
            checked[key] = check_option(key, value)
        except HarnessError as exc:
            raise BadInputError(f"Config {str(path)!r}: {exc}") from exc
    return checked


def _config_memory_size(text: str) -> int:
    try:
        return memory_size(text)
    except argparse.ArgumentTypeError as exc:
        raise BadInputError(f"max_memory: {exc}.") from exc


def _compare_options(args) -> dict:
    options = _read_config(args.config) if args.config else {}
    given = {
        "datasets": _flatten(args.dataset), "methods": _flatten(args.method),
        "models": _flatten(args.model), "seeds": args.seeds, "out": args.out,
        "jobs": args.jobs, "timeout": args.timeout, "executor": args.executor,
        "explain_on": args.explain_on, "max_explain": args.max_explain, "force": args.force,
        "max_memory": args.max_memory, "scheduler": args.scheduler,
    }
    options.update({k: v for k, v in given.items() if v is not None})
    options.setdefault("out", "runs/compare")
    return options  # checked as a whole by compare, before it writes anything


class _Progress:
    """tqdm bar over cells (done / total, ETA); stage text in the description."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bar = None
        self.drawn = -float("inf")  # when the bar was last redrawn for a postfix

    def __call__(self, kind: str, payload) -> None:
        if not self.enabled:
            return
        from tqdm import tqdm

        if kind == "total":
            total, reused = payload
            # a log file (not a terminal) gets a line every 10 s, not every update
            self.bar = tqdm(total=total, initial=reused, unit="cell", file=sys.stderr,
                            dynamic_ncols=True, mininterval=0.1 if sys.stderr.isatty() else 10)
        elif kind == "stage" and self.bar is not None:
            self.bar.set_description_str(payload[:60])
        elif kind == "cell" and self.bar is not None:
            cell, status = payload
            self.bar.update(1)
            self._postfix(f"{cell.method!r}: {status}")
        elif kind == "progress" and self.bar is not None:
            cell, fraction = payload
            self._postfix(f"{cell.method!r}: {fraction:.0%}")

    def _postfix(self, text: str) -> None:
        """Show ``text`` after the bar, redrawn at most every ``mininterval`` seconds (a
        cell's progress comes many times a second)."""
        self.bar.set_postfix_str(text[:50], refresh=False)
        now = time.monotonic()
        if now - self.drawn >= self.bar.mininterval:
            self.bar.refresh()
            self.drawn = now

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _run_compare(args) -> int:
    from harness.run.runner import compare

    options = _compare_options(args)
    progress = _Progress(enabled=not args.no_progress)
    try:
        summary = compare(**options, on_event=progress)
    finally:
        progress.close()
    print(summary.line())
    index = Path(options["out"]) / "index.html"
    if index.exists():
        print(f"report: {index}")
    print(f"wall time: {summary.wall_time:.1f} s")
    return summary.exit_code


def _run_list() -> int:
    from harness.api import list_datasets, list_methods
    from harness.forest.models import list_models

    print("methods:")
    for row in list_methods().itertuples():
        state = "installed" if row.installed else f"NOT installed (needs {row.missing})"
        params = ", ".join(f"{k}={v!r}" for k, v in row.parameters.items()) or "-"
        print(f"  {row.name:<12} {row.scope:<6} {row.family:<20} [{state}]\n"
              f"      tasks: {row.tasks}; parameters: {params}\n      {row.summary}")
    print("datasets:")
    for row in list_datasets().itertuples():
        params = ", ".join(f"{k}={v!r}" for k, v in row.parameters.items()) or "-"
        print(f"  {row.name:<15} {row.task:<14} parameters: {params}\n      {row.summary}")
    print("models:")
    for model in list_models():
        state = ("installed" if model["installed"]
                 else f"NOT installed (pip install 'harness[{model['extra']}]')")
        params = ", ".join(f"{k}={v!r}" for k, v in model["parameters"].items())
        print(f"  {model['name']:<22} [{state}]\n      parameters: {params}\n"
              f"      {model['summary']}")
    return 0


def _run_compile(args) -> int:
    from tqdm import tqdm

    from harness.run.compile import cache_location, compile_in_processes

    check_processes(args.processes)
    names = methods_to_compile(_flatten(args.methods))
    classes = [registry.get_method_class(name) for name in names]
    bar = tqdm(total=len(classes), file=sys.stderr, disable=args.no_progress, unit="method",
               desc="compiling kernels", dynamic_ncols=True)

    def progress(done: int, total: int, name: str) -> None:
        bar.update(done - bar.n)
        if name:
            bar.set_postfix_str(name)

    try:
        report = compile_in_processes(classes, args.processes, progress)
    finally:
        bar.close()
    for name in names:
        if name in report.errors:
            print(f"  {name:<24} error: {report.errors[name]}")
        else:
            print(f"  {name:<24} {report.methods.get(name, float('nan')):6.1f} s wall "
                  f"{report.cpu.get(name, float('nan')):6.1f} s CPU")
    print(f"compiled the kernels of {len(names) - len(report.errors)} of {len(names)} methods "
          f"in {report.seconds:.1f} s on {report.processes} processes into {cache_location()}")
    return 1 if report.errors else 0


def _run_reproduce(args) -> int:
    reproduce = registry.reproduction()

    if args.list_targets:
        for name in reproduce.TARGETS:
            target = reproduce.load_target(name)
            print(f"{name:<22} {target.title}\n{'':<22} source: {target.source}")
        return 0
    if not args.targets:
        raise HarnessError("Name the targets to reproduce, or 'all'; available targets: "
                           f"{', '.join(reproduce.TARGETS)} (see --list).")
    if args.gallery and args.quick:
        raise BadInputError(
            f"--gallery refreshes the committed gallery ({reproduce.COMMITTED_GALLERY}), which "
            f"holds full-scale runs; got --gallery with --quick. Run --quick without --gallery "
            f"(its pages go to {reproduce.DEFAULT_GALLERY}, or to --out).")
    if args.gallery and args.out is not None:
        raise BadInputError(f"--gallery writes into {reproduce.COMMITTED_GALLERY}; got --gallery "
                            f"with --out {str(args.out)!r}. Give one of them.")
    say = None if args.no_progress else (lambda text: print(text, file=sys.stderr))
    gallery = args.out or (reproduce.COMMITTED_GALLERY if args.gallery
                           else reproduce.DEFAULT_GALLERY)
    pages = reproduce.reproduce(args.targets, args.quick, gallery,
                                args.store or reproduce.DEFAULT_STORE, args.jobs, say)
    for page in pages:
        print(page)
    print(f"index: {gallery / 'index.md'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    0: done; 1: a run finished with error or timeout cells; 2: bad input (one line on
    stderr), or no command (the help on stderr); 130: interrupted.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help, --version (0) or a usage error (2, one line)
        return int(exc.code or 0)
    if args.command is None:
        print(parser.format_help(), end="", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        if args.command == "compare":
            return _run_compare(args)
        if args.command == "list":
            return _run_list()
        if args.command == "bench":
            return run_bench_command(args)
        if args.command == "reproduce":
            return _run_reproduce(args)
        if args.command == "compile":
            return _run_compile(args)
        for path in registry.build_reports(args.out):
            print(path)
        return 0
    except HarnessError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("harness: interrupted; finished cells are stored, rerun to resume.",
              file=sys.stderr)
        return 130
