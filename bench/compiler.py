"""compiler: the full compile against python-hcl2's bare parse, and CLI start-up.

* ``compile N states (HCL)``: ``compile_paths`` on one generated project (load, resolve,
  typecheck, build, checks, emit; compile cache off) ÷ ``hcl2.loads`` of the same file text
  (read included in both). Target ≤ 1.0×: all our stages cost no more than the bare parse.
* ``compile N states (YAML)``: the same project in YAML (PyYAML's C loader when present)
  ÷ the HCL compile. No target; it shows what the syntax costs.
* ``validate start-up``: ``openseal validate`` on one small file as a subprocess, wall time,
  ÷ ``python -c pass``. Target: well under 0.5 s.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import hcl2
import yaml

from bench.generate import compile_once, write_project
from bench.harness import (
    Options,
    Report,
    Target,
    compare,
    environment,
    profile_text,
    repeat_timed,
    scaled,
)

NAME = "compiler"


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
    measure_startup(report, options)
    return report
