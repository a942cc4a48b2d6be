"""Credential references → values, resolved inside an adapter at call time only.

Definitions name a credential (``credential = "procurement_api"``). The runtime
context file maps each name to where its value lives, and holds non-secret
configuration for adapter templates (``config.procurement_url``)::

    credentials:
      procurement_api: { env: PROCUREMENT_TOKEN }
      mail_relay: { file: /run/secrets/mail }
    config:
      procurement_url: http://127.0.0.1:8080

A value is read when an adapter asks for it, wrapped in a :class:`Secret` that
will not print, serialise or pickle, and dropped after the call; nothing here
stores it. A file source is re-checked at every read: a regular file (not a
symlink), owned by the current user, readable by nobody else.

>>> context = RuntimeContext.load(".openseal/context.yaml")            # doctest: +SKIP
>>> token = context.credentials.resolve("procurement_api")              # doctest: +SKIP
>>> headers = {"authorization": f"Bearer {token.reveal()}"}            # doctest: +SKIP
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import NoReturn

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)

from openseal.compiler import did_you_mean, looks_secret
from openseal.errors import OpenSealError
from openseal.skills.secrets import Secret, SecretFilter, redact

DEFAULT_CONTEXT_PATH = Path(".openseal") / "context.yaml"
#: secret files are small; a bigger one is almost certainly the wrong path
MAX_SECRET_BYTES = 64 * 1024


class CredentialError(OpenSealError):
    """A credential could not be resolved; the message names where it looked, never a value."""

    code = "credential_unavailable"


class ContextError(OpenSealError):
    """The runtime context file is missing or malformed."""

    code = "runtime_context_invalid"


class CredentialSource(BaseModel):
    """Where one credential's value lives: exactly one of ``env`` or ``file``."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    file: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _exactly_one(self) -> CredentialSource:
        if (self.env is None) == (self.file is None):
            raise ValueError("give exactly one of `env` or `file`")
        return self


ConfigValue = StrictStr | StrictInt | StrictFloat | StrictBool


class ContextFile(BaseModel):
    """The runtime context file's shape."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    credentials: dict[str, CredentialSource] = Field(default_factory=dict)
    config: dict[str, ConfigValue] = Field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CredentialResolver:
    """Resolves references to :class:`Secret` values, reading the source at every call.

    ``log_filter``, when given, learns every value resolved so log records that
    would carry one are redacted.
    """

    sources: Mapping[str, CredentialSource] = field(default_factory=dict)
    #: where the sources came from, for messages (the context file)
    origin: str = "the runtime context"
    log_filter: SecretFilter | None = None

    @property
    def references(self) -> tuple[str, ...]:
        return tuple(sorted(self.sources))

    def resolve(self, reference: str) -> Secret:
        source = self.sources.get(reference)
        if source is None:
            hint = did_you_mean(reference, self.sources)
            known = ", ".join(f"`{r}`" for r in self.references) or "none"
            message = f"credential `{reference}` is not defined in {self.origin} (defined: {known})"
            raise CredentialError(f"{message}; {hint}" if hint else message)
        secret = read_source(reference, source)
        if self.log_filter is not None:
            self.log_filter.register(secret)
        return secret


def read_source(reference: str, source: CredentialSource) -> Secret:
    if source.env is not None:
        return read_env(reference, source.env)
    assert source.file is not None  # the model guarantees one of the two
    return read_owner_only_file(reference, Path(source.file))


def read_env(reference: str, name: str) -> Secret:
    value = os.environ.get(name)
    if value is None:
        raise CredentialError(f"credential `{reference}`: environment variable {name} is not set")
    if not value:
        raise CredentialError(f"credential `{reference}`: environment variable {name} is empty")
    return Secret(value)


def read_owner_only_file(reference: str, path: Path) -> Secret:
    """Read a secret file, refusing symlinks, non-regular files and group/other access.

    The checks run on the opened descriptor (``O_NOFOLLOW`` then ``fstat``), so
    the file cannot be swapped between the check and the read.
    """
    where = f"credential `{reference}`: file {path}"
    nofollow = getattr(os, "O_NOFOLLOW", None)
    if nofollow is None:
        raise CredentialError(f"{where}: file credentials need a POSIX system")
    # O_NONBLOCK: opening a FIFO must not hang; fstat refuses it just after
    flags = os.O_RDONLY | nofollow | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        _refuse_open(where, exc)
    try:
        _check_descriptor(where, path, os.fstat(fd))
        data = os.read(fd, MAX_SECRET_BYTES + 1)
    finally:
        os.close(fd)
    return _decode(where, data)


def _refuse_open(where: str, exc: OSError) -> NoReturn:
    if exc.errno == errno.ELOOP:
        reason = "is a symbolic link; name the file itself"
    elif exc.errno == errno.ENOENT:
        reason = "does not exist"
    elif exc.errno == errno.EACCES:
        reason = "cannot be read (permission denied)"
    else:
        reason = f"cannot be opened ({exc.strerror})"
    raise CredentialError(f"{where} {reason}") from None


def _check_descriptor(where: str, path: Path, info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise CredentialError(f"{where} is not a regular file")
    if info.st_uid != os.geteuid():
        raise CredentialError(f"{where} is not owned by the current user")
    if info.st_mode & 0o077:
        mode = stat.S_IMODE(info.st_mode)
        raise CredentialError(
            f"{where} has mode {mode:04o}; others may read it (run `chmod 600 {path}`)"
        )


def _decode(where: str, data: bytes) -> Secret:
    # decide outside any `except` so no exception chain carries the bytes
    if len(data) > MAX_SECRET_BYTES:
        raise CredentialError(f"{where} is larger than {MAX_SECRET_BYTES} bytes")
    try:
        text: str | None = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None:
        raise CredentialError(f"{where} is not UTF-8 text")
    # one trailing newline is how editors and `echo` write files, not part of the value
    text = text.removesuffix("\n").removesuffix("\r")
    if not text:
        raise CredentialError(f"{where} is empty")
    return Secret(text)


@dataclass(frozen=True, slots=True)
class RuntimeContext:
    """The runtime context: credential sources and non-secret adapter configuration."""

    path: str | None
    config: Mapping[str, object]
    credentials: CredentialResolver

    @classmethod
    def empty(cls, *, log_filter: SecretFilter | None = None) -> RuntimeContext:
        return cls(None, MappingProxyType({}), CredentialResolver(log_filter=log_filter))

    @classmethod
    def load(
        cls, path: str | os.PathLike[str] | None = None, *, log_filter: SecretFilter | None = None
    ) -> RuntimeContext:
        """Load and validate a context file; :class:`ContextError` names the file and key.

        Without ``path`` the default ``.openseal/context.yaml`` is used if it
        exists, else the context is empty. Relative ``file`` sources are taken
        relative to the context file's directory.
        """
        if path is None:
            if not DEFAULT_CONTEXT_PATH.exists():
                return cls.empty(log_filter=log_filter)
            path = DEFAULT_CONTEXT_PATH
        where = os.fspath(path)
        raw = _read_yaml(where)
        parsed = _validate(where, raw)
        base = Path(where).parent
        sources = {name: _anchor(source, base) for name, source in parsed.credentials.items()}
        resolver = CredentialResolver(MappingProxyType(sources), where, log_filter)
        return cls(where, MappingProxyType(dict(parsed.config)), resolver)

    def merged(self, other: RuntimeContext) -> RuntimeContext:
        """This context with ``other``'s credentials and configuration added; on a name both
        define, ``other``'s wins. Lookups name both files in their messages."""
        mine, theirs = self.credentials, other.credentials
        resolver = CredentialResolver(
            MappingProxyType({**mine.sources, **theirs.sources}),
            f"{mine.origin} or {theirs.origin}",
            theirs.log_filter or mine.log_filter,
        )
        config = MappingProxyType({**self.config, **other.config})
        return RuntimeContext(other.path or self.path, config, resolver)


def _read_yaml(where: str) -> object:
    try:
        text = Path(where).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ContextError(f"runtime context file {where} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "it is not UTF-8 text"
        raise ContextError(f"runtime context file {where} cannot be read: {reason}") from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass: no objects
    except yaml.MarkedYAMLError as exc:
        problem = _yaml_problem(exc)
    except yaml.YAMLError:
        problem = "invalid YAML"
    raise ContextError(f"{where}:{problem}")


def _yaml_problem(exc: yaml.MarkedYAMLError) -> str:
    # line, column and the parser's phrase only: the snippet could quote a value
    mark = exc.problem_mark
    place = f"{mark.line + 1}:{mark.column + 1}: " if mark is not None else " "
    return f"{place}invalid YAML: {exc.problem or exc.context or 'syntax error'}"


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader that refuses duplicate keys (PyYAML silently keeps the last)."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[object, object]:
    seen: set[object] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key `{key}`", key_node.start_mark
            )
        seen.add(key)
    return dict(loader.construct_mapping(node))


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _validate(where: str, raw: object) -> ContextFile:
    if raw is not None and not isinstance(raw, dict):
        raise ContextError(f"{where}: the top level must be a mapping with `credentials`, `config`")
    problems: str | None = None
    try:
        parsed = ContextFile.model_validate({} if raw is None else raw)
    except ValidationError as exc:
        problems = _problems(exc)
    if problems is not None:
        raise ContextError(f"{where}: {problems}")
    for name in parsed.credentials:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            raise ContextError(
                f"{where}: credentials.{name}: names use letters, digits, `_`, `-` and `.`"
            )
    secretish = sorted(
        k for k, v in parsed.config.items() if isinstance(v, str) and looks_secret(k)
    )
    if secretish:
        raise ContextError(
            f"{where}: config.{secretish[0]} looks like a secret; config values are not secret "
            "and may be recorded, so move it under `credentials` with an `env` or `file` source"
        )
    return parsed


def _problems(exc: ValidationError) -> str:
    """One phrase per offending key; a union's per-member complaints collapse into one."""
    found: dict[str, str] = {}
    for e in exc.errors():
        loc = [str(p) for p in e["loc"]]
        if len(loc) >= 2 and loc[0] == "config":
            found.setdefault(f"config.{loc[1]}", "must be a string, number or boolean")
            continue
        key = ".".join(loc) or "the file"
        if e["type"] == "extra_forbidden":
            expected = "`env`, `file`" if loc[0] == "credentials" else "`credentials`, `config`"
            found.setdefault(key, f"unknown key (expected {expected})")
            continue
        found.setdefault(key, e["msg"].removeprefix("Value error, "))
    return "; ".join(f"{key}: {message}" for key, message in found.items())


def _anchor(source: CredentialSource, base: Path) -> CredentialSource:
    if source.file is None:
        return source
    file = Path(source.file).expanduser()
    return source if file.is_absolute() else CredentialSource(file=os.fspath(base / file))


def resolve_credential(reference: str, config: Mapping[str, str]) -> str:
    """The value of ``reference`` from flat adapter configuration (``credential.<name>``).

    ``config["credential.mail_relay"]`` is ``"env:NAME"`` or ``"file:PATH"``; without
    an entry the variable ``OPENSEAL_CREDENTIAL_MAIL_RELAY`` is used. Files get the
    same owner-only checks as :meth:`CredentialResolver.resolve`.
    """
    spec = config.get(f"credential.{reference}", f"env:{default_variable(reference)}")
    kind, _, where = spec.partition(":")
    if kind == "env":
        if not where or not (where[0].isalpha() or where[0] == "_"):
            raise CredentialError(f"credential `{reference}`: `{spec}` names no variable")
        return read_env(reference, where).reveal()
    if kind == "file" and where:
        return read_owner_only_file(reference, Path(where)).reveal()
    raise CredentialError(
        f"credential `{reference}` is configured as `{kind}:...`; use `env:NAME` or `file:PATH`"
    )


def default_variable(reference: str) -> str:
    """``mail_relay`` → ``OPENSEAL_CREDENTIAL_MAIL_RELAY``."""
    return "OPENSEAL_CREDENTIAL_" + "".join(c if c.isalnum() else "_" for c in reference).upper()


__all__ = [
    "DEFAULT_CONTEXT_PATH",
    "ContextError",
    "CredentialError",
    "CredentialResolver",
    "CredentialSource",
    "RuntimeContext",
    "Secret",
    "SecretFilter",
    "default_variable",
    "redact",
    "resolve_credential",
]
