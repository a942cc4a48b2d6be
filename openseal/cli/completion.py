"""``openseal completion SHELL``: the script that makes a shell complete openseal's commands."""

from __future__ import annotations

import click


@click.command("completion")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the completion script for SHELL: commands, options and their choices.

    \b
    Examples:
        eval "$(openseal completion bash)"              # in ~/.bashrc
        eval "$(openseal completion zsh)"               # in ~/.zshrc
        openseal completion fish > ~/.config/fish/completions/openseal.fish
    """
    from click.shell_completion import get_completion_class

    from openseal.cli.main import cli

    found = get_completion_class(shell)
    if found is None:  # click knows all three; guarded for the type checker
        raise click.UsageError(f"no completion for {shell}")
    click.echo(found(cli, {}, "openseal", "_OPENSEAL_COMPLETE").source())
