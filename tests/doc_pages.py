"""Read the shell sessions of a Markdown page and run them, in order, in a scratch directory.

The conventions (also in docs/cli.md, "Commands in these pages are tested"):

* A ```` ```console ```` block holds ``$ command`` lines, each followed by the output it
  prints (stdout and stderr together). A command whose shown output is empty is run and
  must exit 0, its output is not compared. A command whose shown output has a line starting
  with ``error:`` (or click's ``Error:``) must fail (exit non-zero), as must a command that
  ends in the comment ``# exits N`` with N other than 0; any other must exit 0.
* A ```` ```sh ```` block holds commands only; each must exit 0.
* A line ending in ``\\`` continues on the next line, as in the shell.
* ``<!-- not run: REASON -->`` on the line before a block leaves it out (a real PostgreSQL
  server, minutes of benchmarks); the reason is required.
* ``<!-- file: PATH -->`` before any block writes the block to PATH (relative to the working
  directory) when the page reaches it.
* ``cmd &`` starts a server in the background; the page goes on once the output shown under
  it has appeared. Background commands are stopped when the page ends.
* Shown output is compared after the same normalisation on both sides: 32-hex ids become
  ``<id>``, 64-hex hashes ``<hash>``, 12-hex short digests ``<digest>``, ISO 8601 times
  ``<time>``, durations such as ``0.02s`` ``<secs>``, and the scratch directory ``<dir>``. In
  shown output ``...`` or ``…`` stands for any text on its line, and a line holding only one
  of them for any number of lines.
* Ports 8400 (the API) and 8765 (the simulator) are replaced by free ports, everywhere on the
  page.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_FENCE = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<body>.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
_MARK = re.compile(r"<!--\s*(?P<what>not run|file):\s*(?P<value>.*?)\s*-->\s*$")
RUNNABLE = ("console", "sh")
_EXITS = re.compile(r"#\s*exits (\d+)\s*$")
PORTS = (8400, 8765)


@dataclass
class Step:
    """One command, or one file to write, at ``line`` of its page."""

    line: int
    command: str = ""
    shown: list[str] | None = None  # console output under the command; None in sh blocks
    file: str | None = None
    content: str = ""

    @property
    def background(self) -> bool:
        return self.command.rstrip().endswith("&") and not self.command.rstrip().endswith("&&")

    @property
    def must_fail(self) -> bool:
        said = _EXITS.search(self.command)
        if said is not None:
            return said[1] != "0"
        return any(line.startswith(("error:", "Error:")) for line in self.shown or ())


@dataclass
class Page:
    path: Path
    steps: list[Step] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (line, reason)
    unmarked: list[int] = field(default_factory=list)  # runnable-looking blocks of other kinds


def read_page(path: Path) -> Page:
    text = path.read_text(encoding="utf-8")
    page = Page(path)
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = _MARK.search(before)
        lang = match["info"].strip().split(" ")[0]
        body = match["body"]
        if mark and mark["what"] == "file":
            page.steps.append(Step(line, file=mark["value"], content=body))
            continue
        if lang not in RUNNABLE:
            continue
        if mark and mark["what"] == "not run":
            page.skipped.append((line, mark["value"]))
            continue
        page.steps += _commands(body, line + 1, console=lang == "console")
    return page


def _commands(body: str, first: int, *, console: bool) -> list[Step]:
    steps: list[Step] = []
    pending: Step | None = None
    for offset, raw in enumerate(body.splitlines()):
        if pending is not None:  # a continued command
            pending.command += "\n" + raw
            if not raw.endswith("\\"):
                pending = None
            continue
        if console and not raw.startswith("$ "):
            if steps and steps[-1].shown is not None:
                steps[-1].shown.append(raw)
            continue
        command = raw[2:] if console else raw
        if not command.strip() or command.lstrip().startswith("#"):
            continue
        step = Step(first + offset, command=command, shown=[] if console else None)
        steps.append(step)
        if command.endswith("\\"):
            pending = step
    return steps


# -- normalising output ------------------------------------------------------------------

_SHAPES = (
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)?"), "<time>"),
    (re.compile(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])"), "<hash>"),
    (re.compile(r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])"), "<id>"),
    (re.compile(r"(?<![0-9a-f])[0-9a-f]{12}(?![0-9a-f])"), "<digest>"),
    (re.compile(r"\b\d+\.\d+ ?s\b"), "<secs>"),
)
_WILDCARD = re.compile(r"\.\.\.|…")
#: an id or digest shown by its first characters (`01a22b…`) stands for the whole
_ABBREVIATED = re.compile(r"[0-9a-f]{4,}(?:\.\.\.|…)")


def normalise(text: str, scratch: Path | None = None) -> str:
    if scratch is not None:
        text = text.replace(str(scratch), "<dir>")
    for pattern, placeholder in _SHAPES:
        text = pattern.sub(placeholder, text)
    return "\n".join(line.rstrip() for line in text.splitlines())


#: a handle as a page shows one (`k7q9x2ad`; docs/decisions/0019-handles.md): eight of
#: Crockford's base32 characters, a digit and a letter among them. The record it names was made
#: when the page ran, so it stands for the handle the command printed in its place
_HANDLE = re.compile(
    r"(?<![0-9a-z])(?=[0-9a-z]{0,7}[0-9])(?=[0-9a-z]{0,7}[a-z])[0-9a-hjkmnp-tv-z]{8}(?![0-9a-z])"
)
#: a hash prefix a page shows and a later command types (`--hash bf85238147`)
_HEX_RUN = re.compile(r"(?<![0-9a-z])[0-9a-f]{10,64}(?![0-9a-z])")
_MARKER = re.compile(r"@@(\d+)@@")


def matches(shown: list[str], actual: str) -> bool:
    """Whether ``actual`` (normalised) is what ``shown`` (normalised) shows."""
    return capture(shown, actual) is not None


def capture(
    shown: list[str],
    actual: str,
    known: dict[str, str] | None = None,
    typed: set[str] = frozenset(),
) -> dict[str, str] | None:
    """Whether ``actual`` (normalised) is what ``shown`` (normalised) shows, and if so what
    stood in ``actual`` where ``shown`` has a handle, or a hex run a later command types
    (``typed``): {shown: printed}. Values ``known`` from earlier steps are compared as printed."""
    text = "\n".join(shown)
    for value, printed in (known or {}).items():
        text = re.sub(rf"(?<![0-9a-z]){re.escape(value)}(?![0-9a-z])", printed, text)
    tokens: list[str] = []

    printed_before = set((known or {}).values())

    def mark(found: re.Match[str]) -> str:
        if found[0] in printed_before:
            return found[0]
        if found[0] not in tokens:
            tokens.append(found[0])
        return f"@@{tokens.index(found[0])}@@"

    hex_typed = [token for token in typed if _HEX_RUN.fullmatch(token)]
    if hex_typed:
        words = "|".join(map(re.escape, hex_typed))
        text = re.sub(rf"(?<![0-9a-z])(?:{words})(?![0-9a-z])", mark, text)
    text = _HANDLE.sub(mark, _ABBREVIATED.sub("…", text))
    seen: set[int] = set()

    def group(found: re.Match[str]) -> str:
        index = int(found[1])
        if index in seen:
            return f"(?P=t{index})"
        seen.add(index)
        token = tokens[index]
        shape = "[0-9a-f]" if token in hex_typed else "[0-9a-hjkmnp-tv-z]"
        return f"(?P<t{index}>{shape}{{{len(token)}}})"

    pattern = ""
    for line in normalise(text).splitlines():
        if line.strip() in ("...", "…"):
            pattern += r"(?:[^\n]*\n)*?"
        else:
            parts = _WILDCARD.split(line)
            pattern += r"[^\n]*".join(re.escape(part) for part in parts) + r"\n"
    pattern = _MARKER.sub(group, pattern)
    text = "\n".join(line for line in actual.splitlines()) + "\n"
    found = re.fullmatch(pattern, text if actual.strip() else "")
    if found is None:
        return None
    return {token: found[f"t{index}"] for index, token in enumerate(tokens)}


def typed_later(page: Page) -> list[set[str]]:
    """For each step, the handles and hex runs its shown output holds that a later command on
    the page types: what the page's run must substitute with what was printed."""
    words = [set(re.findall(r"[0-9a-z]+", step.command)) for step in page.steps]
    found: list[set[str]] = []
    for index, step in enumerate(page.steps):
        later = set().union(*words[index + 1 :])
        shown = "\n".join(step.shown or [])
        candidates = set(_HANDLE.findall(shown)) | set(_HEX_RUN.findall(shown))
        found.append(candidates & later)
    return found


# -- running a page ----------------------------------------------------------------------


@dataclass
class Result:
    step: Step
    code: int
    output: str


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def scratch_directory(base: Path) -> Path:
    """A working directory holding the example definitions, as a git checkout of them."""
    work = base / "work"
    work.mkdir(parents=True)
    shutil.copytree(ROOT / "definitions", work / "definitions")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "defs"]):
        subprocess.run(["git", *args], cwd=work, env=_environment(base), check=True,
                       capture_output=True)  # fmt: skip
    return work


def run_page(page: Page, base: Path, *, timeout: float = 600) -> list[Result]:
    """Run every step of ``page`` in one shell, in order (variables and the working directory
    carry over from step to step, as in a terminal)."""
    work = scratch_directory(base)
    ports = {str(port): str(free_port()) for port in PORTS}
    script = [
        "set +e",
        "trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null' EXIT",
        f"cd {_quote(str(work))}",
    ]
    typed = typed_later(page)
    for index, step in enumerate(page.steps):
        script.append(f"printf '\\n@@step {index}@@\\n'")
        if step.file is not None:
            script.append(f'mkdir -p "$(dirname {_quote(step.file)})"')
            script.append(f"cat > {_quote(step.file)} <<'DOCS_FILE_END'")
            script.append(_ports(step.content, ports).rstrip("\n"))
            script.append("DOCS_FILE_END")
            script.append("printf '@@exit 0@@\\n'")
            continue
        command = _ports(step.command, ports)
        if step.background:
            log = f".docs-background-{index}.log"
            wait_for = _first_fixed_text(_ports("\n".join(step.shown or []), ports))
            script.append(f"{command.rstrip().rstrip('&').rstrip()} > {log} 2>&1 &")
            script.append(
                f"for _ in $(seq 1200); do grep -qF {_quote(wait_for)} {log} && break; "
                "kill -0 $! 2>/dev/null || break; sleep 0.1; done"
            )
            script.append(f"cat {log}; printf '@@exit 0@@\\n'")
            continue
        for value in sorted(set().union(*typed[:index]), key=len, reverse=True):
            command = re.sub(
                rf"(?<![0-9a-z]){value}(?![0-9a-z])", f"${{{_variable(value)}}}", command
            )
        if not typed[index]:
            script.append(f"{{ {command}\n}} 2>&1 </dev/null")
            script.append("printf '\\n@@exit %d@@\\n' $?")
            continue
        # what this step prints in place of values later commands type is read back into the
        # shell: `python -m tests.doc_pages` prints one `export` a value
        spec, out = f".docs-step-{index}.json", f".docs-step-{index}.out"
        (work / spec).write_text(
            json.dumps(
                {
                    "shown": step.shown,
                    "typed": sorted(typed[index]),
                    "ports": ports,
                    "work": str(work),
                }
            )
        )
        script.append(f"{{ {command}\n}} > {out} 2>&1 </dev/null; code=$?; cat {out}")
        script.append(
            f'eval "$(PYTHONPATH={_quote(str(ROOT))} python -m tests.doc_pages {spec} {out})"'
        )
        script.append("printf '\\n@@exit %d@@\\n' $code")
    env = _environment(base)
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=work, env=env, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    return _results(page, done.stdout, ports, work)


def _results(page: Page, stdout: str, ports: dict[str, str], work: Path) -> list[Result]:
    results: list[Result] = []
    chunks = re.split(r"\n?@@step (\d+)@@\n", stdout)
    back = {new: old for old, new in ports.items()}
    for number, chunk in zip(chunks[1::2], chunks[2::2], strict=True):
        found = re.search(r"\n?@@exit (\d+)@@\n?$", chunk)
        code = int(found[1]) if found else -1
        output = chunk[: found.start()] if found else chunk
        for new, old in back.items():
            output = output.replace(new, old)
        results.append(Result(page.steps[int(number)], code, normalise(output, work)))
    return results


def _environment(base: Path) -> dict[str, str]:
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENSEAL_")}
    venv_bin = Path(sys.executable).parent  # openseal, python and pytest of this checkout
    env.update(
        HOME=str(home),
        PATH=f"{venv_bin}{os.pathsep}{env.get('PATH', '')}",
        NO_COLOR="1",
        COLUMNS="100",
        LC_ALL="C.UTF-8",
        GIT_AUTHOR_NAME="docs",
        GIT_AUTHOR_EMAIL="docs@example.invalid",
        GIT_COMMITTER_NAME="docs",
        GIT_COMMITTER_EMAIL="docs@example.invalid",
    )
    env.pop("FORCE_COLOR", None)
    return env


def _ports(text: str, ports: dict[str, str]) -> str:
    for old, new in ports.items():
        text = re.sub(rf"(?<!\d){old}(?!\d)", new, text)
    return text


def _first_fixed_text(shown: str) -> str:
    first = next((line for line in shown.splitlines() if line.strip()), "")
    return _WILDCARD.split(first)[0].strip() or first.strip()


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def _variable(value: str) -> str:
    return f"DOCS_PRINTED_{value}"


def _export_printed(spec_file: str, output_file: str) -> None:
    """Print ``export`` lines for what a step printed where its page shows values a later
    command types (run by the page's shell after the step, see :func:`run_page`)."""
    spec = json.loads(Path(spec_file).read_text(encoding="utf-8"))
    known = {
        name[len("DOCS_PRINTED_") :]: value
        for name, value in os.environ.items()
        if name.startswith("DOCS_PRINTED_")
    }
    output = Path(output_file).read_text(encoding="utf-8")
    for old, new in spec["ports"].items():
        output = output.replace(new, old)
    output = normalise(output, Path(spec["work"]))
    found = capture(spec["shown"], output, known, set(spec["typed"])) or {}
    for value in spec["typed"]:
        if value in found:
            print(f"export {_variable(value)}={_quote(found[value])}")


if __name__ == "__main__":
    _export_printed(sys.argv[1], sys.argv[2])
