"""A click group whose subcommands are imported on first use.

``openseal --help`` lists every command from ``summaries`` (each command's first help
paragraph) without importing any of them, so it starts without SQLAlchemy, Alembic or FastAPI;
a command with no summary is imported to ask it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import click


class LazyGroup(click.Group):
    """``lazy_commands`` maps a command name to ``"module:attribute"``."""

    def __init__(
        self,
        *args: Any,
        lazy_commands: Mapping[str, str] | None = None,
        summaries: Mapping[str, str] | None = None,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands or {})
        self.summaries: dict[str, str] = dict(summaries or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_commands and cmd_name not in self.commands:
            module_name, _, attribute = self.lazy_commands[cmd_name].partition(":")
            command = getattr(importlib.import_module(module_name), attribute)
            if not isinstance(command, click.Command):
                raise TypeError(f"{self.lazy_commands[cmd_name]} is not a click command")
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's command list, with the summaries of commands not imported yet."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows: list[tuple[str, str]] = []
        for name in names:
            if name in self.summaries and name not in self.commands:
                rows.append((name, _short(self.summaries[name], limit)))
                continue
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _short(text: str, limit: int) -> str:
    """``text`` cut as click cuts a command's help for the command list."""
    return click.Command(None, help=text).get_short_help_str(limit)
