"""`openseal validate`: exit codes, located diagnostics, hostile input without tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from openseal.cli.main import cli, main

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the real console entry point in a new process, as a user would."""
    return subprocess.run(
        [sys.executable, "-c", "from openseal.cli.main import run; run()", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1"},
    )


def test_examples_validate_cleanly() -> None:
    result = run("validate", str(ROOT / "definitions"))
    assert result.returncode == 0, result.stderr
    assert "no problems" in result.stderr


def test_broken_file_gives_located_caret_diagnostic(tmp_path: Path) -> None:
    path = tmp_path / "bad.hcl"
    path.write_text('skill "s" {\n  description = "d"\n  efect = "read"\n}\n')
    result = run("validate", str(path))
    assert result.returncode == 1
    assert f"{path}:3:3: error[OS101]" in result.stderr
    assert "^^^^^" in result.stderr
    assert "did you mean `effect`?" in result.stderr
    assert "Traceback" not in result.stderr


def test_json_format_and_output_alias(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("skill:\n  s: 3\n")
    for args in (["--format", "json"], ["--output", "json"]):
        result = CliRunner().invoke(cli, ["validate", *args, str(path)])
        assert result.exit_code == 1
        payload = json.loads(result.stdout)
        assert payload["summary"]["errors"] >= 1
        assert all(d["span"]["line"] >= 1 for d in payload["diagnostics"])


def test_usage_error_exits_2() -> None:
    assert main(["validate"]) == 2
    assert main(["validate", "--format", "xml", "x.hcl"]) == 2


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("garbage.hcl", bytes(range(256)) * 4),
        ("bom.yaml", b"\xef\xbb\xbfagent:\n  a: {model: model.m, instructions: x}\n"),
        ("invalid.hcl", b'agent "a" {\n  instructions = "\xff\xfe"\n}\n'),
        ("deep.hcl", b"a = " + b"[" * 10_000 + b"]" * 10_000 + b"\n"),
        ("deep.yaml", b"a: " + b"[" * 10_000 + b"]" * 10_000 + b"\n"),
        ("empty.hcl", b""),
        ("empty.yaml", b""),
    ],
)
def test_hostile_input_never_tracebacks(tmp_path: Path, name: str, content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    result = run("validate", str(path))
    assert "Traceback" not in result.stderr + result.stdout
    assert result.returncode in (0, 1)
    if result.returncode == 1:
        assert f"{path}:" in result.stderr  # located, with file:line:col


def test_bom_file_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbfmodel:\n  m: {model: x}\n")
    assert run("validate", str(path)).returncode == 0


def test_huge_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    path = tmp_path / "huge.hcl"
    with path.open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    result = run("validate", str(path))
    assert result.returncode == 1
    assert "OS003" in result.stderr and "Traceback" not in result.stderr


def test_directory_without_definitions(tmp_path: Path) -> None:
    result = run("validate", str(tmp_path))
    assert result.returncode == 1 and "OS009" in result.stderr


def test_missing_file(tmp_path: Path) -> None:
    result = run("validate", str(tmp_path / "nope.hcl"))
    assert result.returncode == 1 and "OS001" in result.stderr


def test_help_everywhere() -> None:
    from openseal.cli.main import COMMANDS

    for args in (["--help"], *([name, "--help"] for name in COMMANDS)):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0 and "Usage:" in result.stdout, args


def test_validate_does_not_import_heavy_modules() -> None:
    # Start-up matters in pre-commit hooks: validate must not pull in the graph or store code.
    code = (
        "import sys\n"
        "from openseal.cli.main import main\n"
        "main(['validate', '--help'])\n"
        "heavy = ('networkx', 'sqlalchemy', 'openseal.runtime')\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_ctx_exit_code_is_returned() -> None:
    import click

    @cli.command("exit-three", hidden=True)
    @click.pass_context
    def exit_three(ctx: click.Context) -> None:
        ctx.exit(3)

    try:
        assert main(["exit-three"]) == 3
    finally:
        cli.commands.pop("exit-three")


def test_schema_command_writes_what_is_committed(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["schema", "--out", str(tmp_path), "--output", "json"])
    assert result.exit_code == 0, result.output
    written = json.loads(result.output)["written"]
    committed = ROOT / "schemas"
    assert {Path(p).name for p in written} == {p.name for p in committed.glob("*.json")}
    for path in written:
        assert Path(path).read_text() == (committed / Path(path).name).read_text()


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (
            "big.hcl",
            'model "m" {\n  provider = "scripted"\n  model = "x"\n'
            "  parameters = { big = 1e400 }\n}\n",
        ),
        (
            "nan.yaml",
            "model:\n  m:\n    provider: scripted\n    model: x\n    parameters: {n: .nan}\n",
        ),
    ],
)
@pytest.mark.parametrize("command", [["validate"], ["compile", "--check"]])
def test_unrepresentable_number_is_located_in_every_format(
    tmp_path: Path, name: str, text: str, command: list[str]
) -> None:
    path = tmp_path / name
    path.write_text(text)
    for fmt, line_of_it in [
        ("json", lambda out: json.loads(out)["diagnostics"][0]["span"]["line"]),
        (
            "sarif",
            lambda out: json.loads(out)["runs"][0]["results"][0]["locations"][0][
                "physicalLocation"
            ]["region"]["startLine"],
        ),
        ("github", lambda out: int(out.split(",line=")[1].split(",")[0])),
    ]:
        # in process: the entry point's own exit codes and streams are the subprocess tests'
        result = CliRunner().invoke(cli, [*command, "--format", fmt, str(path)])
        assert result.exit_code == 1, result.stderr
        assert "OS104" in result.stdout
        assert line_of_it(result.stdout) in (4, 5)


def test_a_flood_of_errors_is_capped_with_a_summary(tmp_path: Path) -> None:
    path = tmp_path / "many.hcl"
    path.write_text("".join(f'skill "s{i}" {{\n  description = "d"\n}}\n' for i in range(300)))
    capped_run = CliRunner().invoke(cli, ["validate", str(path)], env={"NO_COLOR": "1"})
    assert capped_run.exit_code == 1
    assert capped_run.stderr.count("error[OS102]") == 100
    assert "... 500 more diagnostics not shown (showing the first 100)" in capped_run.stderr
    assert capped_run.stderr.endswith("600 errors in 1 file\n")
    every = CliRunner().invoke(cli, ["validate", "--max-diagnostics", "0", str(path)])
    assert every.stderr.count("error[OS102]") == 600
    machine = CliRunner().invoke(cli, ["validate", "--format", "json", str(path)])
    assert len(json.loads(machine.stdout)["diagnostics"]) == 600
