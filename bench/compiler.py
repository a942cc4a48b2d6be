"""compiler: the full compile against python-hcl2's bare parse, and CLI start-up.

* ``compile N states (HCL)``: ``compile_paths`` on one generated project (load, resolve,
  typecheck, build, checks, emit; compile cache off) ÷ ``hcl2.loads`` of the same file text
  (read included in both). Target ≤ 1.0×: all our stages cost no more than the bare parse.
* ``compile N states (YAML)``: the same project in YAML (PyYAML's C loader when present)
  ÷ the HCL compile. No target; it shows what the syntax costs.
* ``validate start-up``: ``openseal validate`` on one small file as a subprocess, wall time,
  ÷ ``python -c pass``. Target: well under 0.5 s.
* ``compile one X MB file``: one HCL file of many small workflows (many definitions in
  one file), CPU seconds, ÷ ``hcl2.loads`` of it. Target ≤ 1.0× at 5 MB; and the
  5 MB compile ÷ the 0.5 MB one, which is ≈ 10× when the cost is linear. Beside each, the
  peak resident memory of that interpreter (``ru_maxrss``) against ``hcl2.loads``'s; target
  ≤ 300 MiB at 5 MB.
* ``validate the examples``: ``openseal validate definitions/`` as a subprocess, CPU
  seconds of the child, with the compile cache warm (target ≤ 0.5 s) and with a fresh
  ``OPENSEAL_CACHE_DIR`` each time; the parser tables built meanwhile must be none.
"""

from __future__ import annotations

import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import hcl2
import yaml

from bench.generate import compile_once, write_large_file, write_project
from bench.harness import (
    Options,
    Report,
    Stats,
    Target,
    compare,
    environment,
    profile_text,
    repeat_timed,
    scaled,
    summarize,
)
from openseal.compiler import cache

ROOT = Path(__file__).resolve().parents[1]

NAME = "compiler"
#: the most the compile of one 5 MB file may hold resident, in MiB
MEMORY_BOUND_MIB = 300


def parse_once(path: Path) -> None:
    hcl2.loads(path.read_text(encoding="utf-8"))


def measure_size(report: Report, options: Options, states: int) -> None:
    hcl_file = write_project(options.workdir / f"hcl-{states}", states, "hcl")
    yaml_file = write_project(options.workdir / f"yaml-{states}", states, "yaml")
    repeat = options.repeat
    baseline = report.add(
        compare(
            f"hcl2.loads {states} states",
            "ms",
            scaled(repeat_timed(lambda: parse_once(hcl_file), repeat=repeat), 1000),
        )
    )
    ours = report.add(
        compare(
            f"compile {states} states (HCL)",
            "ms",
            scaled(repeat_timed(lambda: compile_once(hcl_file.parent), repeat=repeat), 1000),
            baseline,
            Target(1.0),
        )
    )
    report.add(
        compare(
            f"compile {states} states (YAML)",
            "ms",
            scaled(repeat_timed(lambda: compile_once(yaml_file.parent), repeat=repeat), 1000),
            ours,
        )
    )
    if ours.met is False and not options.quick:
        report.profiles[ours.name] = profile_text(lambda: compile_once(hcl_file.parent))


def openseal_command() -> list[str]:
    script = Path(sys.executable).with_name("openseal")
    if script.exists():
        return [str(script)]
    found = shutil.which("openseal")
    if found is None:
        raise RuntimeError("the `openseal` command is not installed next to this Python")
    return [found]


def run_quietly(command: list[str], cwd: Path) -> None:
    completed = subprocess.run(command, cwd=cwd, capture_output=True, check=False, timeout=120)
    if completed.returncode != 0:
        message = completed.stderr.decode(errors="replace").strip().splitlines()
        raise RuntimeError(f"{' '.join(command)} exited {completed.returncode}: {message[-1:]}")


def measure_startup(report: Report, options: Options) -> None:
    small = write_project(options.workdir / "small", 4, "hcl")
    repeat = max(options.repeat, 10) if not options.quick else options.repeat
    bare = report.add(
        compare(
            "python -c pass",
            "ms",
            scaled(
                repeat_timed(
                    lambda: run_quietly([sys.executable, "-c", "pass"], small.parent),
                    repeat=repeat,
                    warmup=2,
                ),
                1000,
            ),
        )
    )
    command = [*openseal_command(), "validate", small.name]
    startup = report.add(
        compare(
            "openseal validate start-up",
            "ms",
            scaled(
                repeat_timed(lambda: run_quietly(command, small.parent), repeat=repeat, warmup=2),
                1000,
            ),
            bare,
            Target(500, on="value"),
            note="one 4-state file; compile cache warm after the warm-up",
        )
    )
    if startup.met is False and not options.quick:
        report.notes.append("start-up missed its target; profile with `python -X importtime`")


def cpu_timed(fn: Callable[[], object], *, repeat: int, warmup: int = 1) -> Stats:
    """CPU seconds per call of ``fn``, this process and the children it waited for."""

    def spent() -> float:
        own = time.process_time()
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own + children.ru_utime + children.ru_stime

    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        started = spent()
        fn()
        samples.append(spent() - started)
    return summarize(samples)


#: run in a fresh interpreter: warm up on a tiny file, then print the CPU seconds of one call
#: and the process's peak resident memory in KiB (the warm-up and the interpreter included)
_CHILD = """
import resource, sys, time
from pathlib import Path
from bench.compiler import parse_once
from bench.generate import compile_once, write_large_file
kind, path, scratch = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
call = parse_once if kind == "parse" else lambda p: compile_once(p.parent)
call(write_large_file(scratch, 2_000))
started = time.process_time()
call(path)
print(time.process_time() - started, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def cpu_in_child(kind: str, path: Path, scratch: Path, repeat: int) -> tuple[Stats, Stats]:
    """CPU seconds of one parse or compile of ``path``, each in a fresh interpreter, and the
    peak resident memory of that interpreter in MiB.

    Each measurement gets a process of its own, so what an earlier one left in the heap
    (``hcl2.loads`` of 5 MB leaves gigabytes of freed objects behind) cannot slow the next,
    and the growth from one size to another is the work's own.
    """
    samples, peaks = [], []
    for i in range(repeat):
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, kind, str(path), str(scratch / f"{kind}-{i}")],
            capture_output=True, text=True, check=True, cwd=ROOT,
        )  # fmt: skip
        seconds, peak_kib = done.stdout.strip().splitlines()[-1].split()
        samples.append(float(seconds))
        peaks.append(int(peak_kib) / 1024)
    return summarize(samples), summarize(peaks)


def measure_large(report: Report, options: Options) -> None:
    small_size, large_size = (20_000, 200_000) if options.quick else (500_000, 5_000_000)
    compiled, memory = {}, {}
    for size in (small_size, large_size):
        path = write_large_file(options.workdir / f"large-{size}", size)
        scratch = options.workdir / f"warm-{size}"
        label = f"{size / 1e6:g} MB"
        repeat = 1 if size >= 1_000_000 else options.repeat  # hcl2.loads of 5 MB takes minutes
        parse_cpu, parse_peak = cpu_in_child("parse", path, scratch, repeat)
        compile_cpu, compile_peak = cpu_in_child("compile", path, scratch, repeat)
        baseline = report.add(compare(f"hcl2.loads, one {label} file", "s", parse_cpu))
        compiled[size] = report.add(
            compare(
                f"compile one {label} file",
                "s",
                compile_cpu,
                baseline,
                Target(1.0) if size == large_size else None,
                note="CPU seconds, each in a fresh interpreter; many small workflows in one file",
            )
        )
        parse_memory = report.add(
            compare(f"hcl2.loads, one {label} file, peak RSS", "MiB", parse_peak)
        )
        memory[size] = report.add(
            compare(
                f"compile one {label} file, peak RSS",
                "MiB",
                compile_peak,
                parse_memory,
                Target(MEMORY_BOUND_MIB, on="value") if size == large_size else None,
                note="the process's peak resident memory, interpreter and warm-up included",
            )
        )
    large = compiled[large_size]
    assert large.stats is not None
    report.add(
        compare(
            f"compile growth, {small_size / 1e6:g} → {large_size / 1e6:g} MB",
            "s",
            large.stats,
            compiled[small_size],
            note="10× the text; ≈ 10× when the cost is linear",
        )
    )
    large_memory = memory[large_size]
    assert large_memory.stats is not None
    report.add(
        compare(
            f"compile peak RSS growth, {small_size / 1e6:g} → {large_size / 1e6:g} MB",
            "MiB",
            large_memory.stats,
            memory[small_size],
            note="includes the interpreter's own, so below 10× even when the cost is linear",
        )
    )


def tables_state() -> dict[str, float]:
    directory = cache.parser_directory()
    if not directory.is_dir():
        return {}
    return {p.name: p.stat().st_mtime for p in directory.iterdir()}


def measure_validate(report: Report, options: Options) -> None:
    command = [*openseal_command(), "validate", "definitions"]
    examples = report.add(
        compare(
            "validate the examples, warm",
            "s",
            cpu_timed(lambda: run_quietly(command, ROOT), repeat=options.repeat, warmup=2),
            target=Target(0.5, on="value"),
            note="CPU seconds of `openseal validate definitions/`, compile cache warm",
        )
    )
    before = tables_state()
    counter = iter(range(1_000_000))

    def fresh() -> None:
        directory = options.workdir / f"fresh-cache-{next(counter)}"
        with environment(OPENSEAL_CACHE=None, OPENSEAL_CACHE_DIR=str(directory)):
            run_quietly(command, ROOT)

    report.add(
        compare(
            "validate the examples, fresh OPENSEAL_CACHE_DIR",
            "s",
            cpu_timed(fresh, repeat=options.repeat, warmup=0),
            examples,
            note="every stage runs; the parser tables come from the user cache directory",
        )
    )
    after = tables_state()
    rebuilt = sum(1 for name, mtime in after.items() if before.get(name) != mtime)
    report.add(
        compare(
            "parser tables built while OPENSEAL_CACHE_DIR moved",
            "tables",
            summarize([float(rebuilt)]),
            target=Target(0, on="value"),
        )
    )


def run(options: Options) -> Report:
    report = Report(NAME)
    sizes = (10,) if options.quick else (10, 100, 1000)
    report.parameters.update(
        sizes=list(sizes),
        repeat=options.repeat,
        yaml_c_loader=hasattr(yaml, "CSafeLoader"),
        hcl2_version=version("python-hcl2"),
    )
    with environment(OPENSEAL_CACHE="off"):
        compile_once(write_project(options.workdir / "warm", 4, "hcl").parent)  # build parsers
        for states in sizes:
            measure_size(report, options, states)
        measure_large(report, options)
    with environment(OPENSEAL_CACHE=None, OPENSEAL_CACHE_DIR=None):
        measure_validate(report, options)
    measure_startup(report, options)
    return report
