"""``openseal models check PROFILE``: try a model profile's endpoint without starting a run."""

from __future__ import annotations

from pathlib import Path

import click

from openseal.cli.output import echo_data, output_option
from openseal.errors import CompileError, InvalidInput


@click.group()
def models() -> None:
    """Model profiles: check that an endpoint works before a run needs it."""


@models.command("check")
@click.argument("profile")
@click.option(
    "--definitions", type=click.Path(path_type=Path, exists=True), default=Path("."),
    show_default=True, help="Definition files or folders that define the model profile.",
)  # fmt: skip
@click.option(
    "--context", "context_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
    envvar="OPENSEAL_CONTEXT",
    help="Runtime context file whose credentials the profile's `credential` names "
    "(default .openseal/context.yaml if it exists).",
)  # fmt: skip
@output_option()
def check(profile: str, definitions: Path, context_path: Path | None, output: str) -> None:
    """Send PROFILE's endpoint a few small requests and report what works: reachable,
    authorized (the credential from --context), tool calls, and `json_schema` structured
    output. Nothing is stored and no run is started; each request costs a few tokens.

    Exit status 0 when the profile can run turns (reachable, authorized, calls tools),
    1 otherwise.

    \b
    Examples:
        openseal models check procurement_default --definitions definitions/procurement/hcl
        openseal models check hosted --context context.yaml -o json
    """
    from openseal.compiler import compile_paths
    from openseal.runtime.service import check_profile
    from openseal.skills.credentials import RuntimeContext

    context = RuntimeContext.load(context_path)
    result = compile_paths([definitions])
    if not result.ok:
        raise CompileError(f"{definitions} does not compile; see `openseal validate {definitions}`")
    found = [d for d in result.documents.values() if d.kind == "model" and d.name == profile]
    if not found:
        known = sorted(d.name for d in result.documents.values() if d.kind == "model")
        listed = ", ".join(known) or "none"
        raise InvalidInput(f"no model profile {profile!r} in {definitions} (defined: {listed})")
    document = found[0].document
    spec = dict(document.get("spec") or {})
    if spec.get("provider", "openai") != "openai":
        raise InvalidInput(
            f"model profile {profile!r} uses provider {spec.get('provider')!r}; only `openai` "
            "(OpenAI-compatible) endpoints can be checked"
        )
    report = check_profile({"name": profile, **spec}, context.credentials)

    def text() -> None:
        click.echo(f"model profile {report.profile}: {report.model} at {report.base_url}")
        for item in report.checks:
            detail = f"  {item.detail}" if item.detail else ""
            click.echo(f"  {item.name:<12} {item.status}{detail}")

    echo_data(report.to_json(), output, text)
    if not report.ok:
        raise click.exceptions.Exit(1)
