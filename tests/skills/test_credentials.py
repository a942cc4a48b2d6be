"""Credential resolution, the runtime context file, Secret, redaction and the log filter."""

from __future__ import annotations

import copy
import io
import json
import logging
import os
import pickle
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from openseal.skills.credentials import (
    ContextError,
    CredentialError,
    CredentialResolver,
    CredentialSource,
    RuntimeContext,
    resolve_credential,
)
from openseal.skills.secrets import Secret, SecretFilter, redact

CANARY = "canary-5e1f0c-never-print-me"


def write_secret(path: Path, value: str = CANARY, mode: int = 0o600) -> Path:
    path.write_text(value + "\n", encoding="utf-8")
    path.chmod(mode)
    return path


def write_context(tmp_path: Path, text: str, name: str = "context.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def file_resolver(path: Path) -> CredentialResolver:
    return CredentialResolver({"mail": CredentialSource(file=str(path))})


def exception_text(exc: BaseException | None) -> str:
    """Every string an exception chain could show: messages, reprs, args, causes."""
    parts: list[str] = []
    while exc is not None:
        parts += [str(exc), repr(exc), *map(repr, exc.args)]
        exc = exc.__cause__ or exc.__context__
    return "\n".join(parts)


# -- resolution --------------------------------------------------------------


def test_env_source_resolves_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    resolver = CredentialResolver({"api": CredentialSource(env="OS_TEST_TOKEN")})
    monkeypatch.setenv("OS_TEST_TOKEN", "first")
    assert resolver.resolve("api").reveal() == "first"
    monkeypatch.setenv("OS_TEST_TOKEN", "rotated")
    assert resolver.resolve("api").reveal() == "rotated"


def test_missing_variable_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OS_TEST_ABSENT", raising=False)
    resolver = CredentialResolver({"api": CredentialSource(env="OS_TEST_ABSENT")})
    with pytest.raises(CredentialError) as caught:
        resolver.resolve("api")
    assert (
        caught.value.message == "credential `api`: environment variable OS_TEST_ABSENT is not set"
    )


def test_empty_variable_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OS_TEST_EMPTY", "")
    resolver = CredentialResolver({"api": CredentialSource(env="OS_TEST_EMPTY")})
    with pytest.raises(CredentialError, match="OS_TEST_EMPTY is empty"):
        resolver.resolve("api")


def test_owner_only_file_resolves_without_its_trailing_newline(tmp_path: Path) -> None:
    path = write_secret(tmp_path / "mail")
    assert file_resolver(path).resolve("mail").reveal() == CANARY


def test_stricter_mode_is_accepted(tmp_path: Path) -> None:
    path = write_secret(tmp_path / "mail", mode=0o400)
    assert file_resolver(path).resolve("mail").reveal() == CANARY


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o602])
def test_group_or_other_bits_are_refused(tmp_path: Path, mode: int) -> None:
    path = write_secret(tmp_path / "mail", mode=mode)
    with pytest.raises(CredentialError) as caught:
        file_resolver(path).resolve("mail")
    assert f"has mode {mode:04o}" in caught.value.message
    assert "chmod 600" in caught.value.message


def test_symlink_is_refused_even_to_a_good_file(tmp_path: Path) -> None:
    target = write_secret(tmp_path / "real")
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(CredentialError, match="is a symbolic link"):
        file_resolver(link).resolve("mail")


def test_mode_is_checked_again_at_every_use(tmp_path: Path) -> None:
    path = write_secret(tmp_path / "mail")
    resolver = file_resolver(path)
    assert resolver.resolve("mail").reveal() == CANARY
    path.chmod(0o644)
    with pytest.raises(CredentialError, match="has mode 0644"):
        resolver.resolve("mail")


def test_file_swapped_for_a_symlink_after_first_use_is_refused(tmp_path: Path) -> None:
    path = write_secret(tmp_path / "mail")
    resolver = file_resolver(path)
    resolver.resolve("mail")
    other = write_secret(tmp_path / "elsewhere", "attacker")
    path.unlink()
    path.symlink_to(other)
    with pytest.raises(CredentialError, match="symbolic link"):
        resolver.resolve("mail")


def test_fifo_is_refused_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(CredentialError, match="not a regular file"):
        file_resolver(fifo).resolve("mail")


def test_directory_and_missing_file_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "dir"
    folder.mkdir(mode=0o700)
    with pytest.raises(CredentialError, match="not a regular file"):
        file_resolver(folder).resolve("mail")
    with pytest.raises(CredentialError, match="does not exist"):
        file_resolver(tmp_path / "nope").resolve("mail")


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
def test_file_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    path = write_secret(tmp_path / "mail")
    os.chown(path, 65534, 65534)
    with pytest.raises(CredentialError, match="not owned by the current user"):
        file_resolver(path).resolve("mail")


def test_empty_file_is_refused(tmp_path: Path) -> None:
    path = write_secret(tmp_path / "mail", value="")
    with pytest.raises(CredentialError, match="is empty"):
        file_resolver(path).resolve("mail")


def test_unknown_reference_lists_what_is_defined() -> None:
    resolver = CredentialResolver(
        {"mail_relay": CredentialSource(env="A"), "procurement_api": CredentialSource(env="B")},
        origin="ctx.yaml",
    )
    with pytest.raises(CredentialError) as caught:
        resolver.resolve("mail_rely")
    message = caught.value.message
    assert "`mail_rely` is not defined in ctx.yaml" in message
    assert "`procurement_api`" in message
    assert "did you mean `mail_relay`?" in message


def test_source_needs_exactly_one_of_env_and_file() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        CredentialSource(env="A", file="/x")
    with pytest.raises(ValueError, match="exactly one"):
        CredentialSource()


# -- the runtime context file -----------------------------------------------


def test_context_file_loads_sources_and_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_secret(tmp_path / "mail.secret", "relay-value")
    path = write_context(
        tmp_path,
        """
credentials:
  procurement_api: { env: OS_TEST_PROCUREMENT }
  mail_relay: { file: mail.secret }
config:
  procurement_url: http://127.0.0.1:8080
  retries: 3
  verbose: false
""",
    )
    monkeypatch.setenv("OS_TEST_PROCUREMENT", "tok")
    context = RuntimeContext.load(path)
    assert dict(context.config) == {
        "procurement_url": "http://127.0.0.1:8080",
        "retries": 3,
        "verbose": False,
    }
    assert context.credentials.references == ("mail_relay", "procurement_api")
    assert context.credentials.resolve("procurement_api").reveal() == "tok"
    # a relative file is taken relative to the context file, not the working directory
    assert context.credentials.resolve("mail_relay").reveal() == "relay-value"
    with pytest.raises(TypeError):
        context.config["retries"] = 4  # type: ignore[index]


def test_default_path_is_optional(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    empty = RuntimeContext.load()
    assert empty.path is None
    assert empty.credentials.references == ()
    (tmp_path / ".openseal").mkdir()
    (tmp_path / ".openseal" / "context.yaml").write_text("config: {a: b}\n")
    assert dict(RuntimeContext.load().config) == {"a": "b"}


def test_an_explicit_missing_file_is_an_error(tmp_path: Path) -> None:
    where = tmp_path / "absent.yaml"
    with pytest.raises(ContextError, match=f"runtime context file {where} does not exist"):
        RuntimeContext.load(where)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("credentials:\n  a: {env: X, file: /y}\n", "credentials.a: give exactly one of"),
        ("credentials:\n  a: {}\n", "credentials.a: give exactly one of"),
        ("credentials:\n  a: {env: 'not a name'}\n", "credentials.a.env:"),
        ("credentials:\n  a: {env: X, ttl: 3}\n", "credentials.a.ttl: unknown key"),
        ("credential:\n  a: {env: X}\n", "credential: unknown key (expected `credentials`"),
        ("credentials:\n  'a b': {env: X}\n", "credentials.a b: names use"),
        ("config:\n  nested: [1, 2]\n", "config.nested: must be a string, number or boolean"),
        ("config:\n  api_token: abc\n", "config.api_token looks like a secret"),
        ("- just\n- a list\n", "the top level must be a mapping"),
        ("config:\n  a: 1\n  a: 2\n", ":3:3: invalid YAML: duplicate key `a`"),
        ("config: {a: [\n", "invalid YAML"),
    ],
)
def test_bad_context_files_give_one_line_naming_file_and_key(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = write_context(tmp_path, text)
    with pytest.raises(ContextError) as caught:
        RuntimeContext.load(path)
    message = caught.value.message
    assert message.startswith(str(path))
    assert expected in message
    assert "\n" not in message


def test_secret_like_config_keys_that_are_not_secrets_are_fine(tmp_path: Path) -> None:
    path = write_context(tmp_path, "config:\n  token_url: http://x\n  auth_header: X-Key\n")
    assert set(RuntimeContext.load(path).config) == {"token_url", "auth_header"}


# -- Secret ------------------------------------------------------------------


def test_secret_never_shows_its_value() -> None:
    secret = Secret(CANARY)
    shown = [repr(secret), str(secret), f"{secret}", f"{secret!r}", f"{secret:>40}", format(secret)]
    assert all(text == "Secret('***')" for text in shown)
    assert CANARY not in repr([secret, {"k": secret}])
    assert secret.reveal() == CANARY


def test_secret_refuses_serialisation() -> None:
    secret = Secret(CANARY)
    with pytest.raises(TypeError):
        json.dumps({"token": secret})
    with pytest.raises(TypeError):
        pickle.dumps(secret)
    with pytest.raises(TypeError):
        vars(secret)
    # an encoder that falls back to str() still only sees the mask
    assert CANARY not in json.dumps({"token": secret}, default=str)


def test_secret_copies_share_the_object_and_it_is_immutable() -> None:
    secret = Secret(CANARY)
    assert copy.copy(secret) is secret
    assert copy.deepcopy({"s": secret})["s"] is secret
    with pytest.raises(AttributeError):
        secret._value = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Secret(b"bytes")  # type: ignore[arg-type]


# -- redaction ---------------------------------------------------------------


def test_redact_replaces_every_value() -> None:
    text = f"POST failed: Authorization: Bearer {CANARY}; again {CANARY}; user=alice"
    assert redact(text, [Secret(CANARY), Secret("alice")]) == (
        "POST failed: Authorization: Bearer ***; again ***; user=***"
    )


def test_redact_masks_a_longer_value_whole() -> None:
    # "abc" inside "abcdef" must not leave "def" behind
    assert redact("x abcdef y abc", [Secret("abc"), Secret("abcdef")]) == "x *** y ***"


def test_redact_without_secrets_or_with_empty_ones_is_identity() -> None:
    assert redact("unchanged", []) == "unchanged"
    assert redact("unchanged", [Secret("")]) == "unchanged"
    assert redact("a.b", [Secret(".")]) == "a***b"  # values are literal, not patterns


@pytest.fixture
def captured() -> Iterator[tuple[logging.Logger, io.StringIO, SecretFilter]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    scrub = SecretFilter()
    handler.addFilter(scrub)
    logger = logging.getLogger("openseal.tests.credentials")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    try:
        yield logger, stream, scrub
    finally:
        logger.removeHandler(handler)


def test_log_filter_redacts_messages_args_and_exceptions(
    captured: tuple[logging.Logger, io.StringIO, SecretFilter],
) -> None:
    logger, stream, scrub = captured
    scrub.register(Secret(CANARY))
    logger.info("calling with token %s", CANARY)
    logger.warning(f"inline {CANARY}")
    try:
        raise RuntimeError(f"server said: bad token {CANARY}")
    except RuntimeError:
        logger.exception("request failed")
    logger.info("nothing secret here")
    output = stream.getvalue()
    assert CANARY not in output
    assert "calling with token ***" in output
    assert "inline ***" in output
    assert "RuntimeError: server said: bad token ***" in output
    assert "nothing secret here" in output


def test_log_filter_learns_values_the_resolver_hands_out(
    captured: tuple[logging.Logger, io.StringIO, SecretFilter],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    logger, stream, scrub = captured
    monkeypatch.setenv("OS_TEST_LOGGED", CANARY)
    resolver = CredentialResolver({"api": CredentialSource(env="OS_TEST_LOGGED")}, log_filter=scrub)
    logger.info("before: %s", CANARY)  # not yet known to the filter
    token = resolver.resolve("api")
    logger.info("after: %s", token.reveal())
    lines = stream.getvalue().splitlines()
    assert lines == [f"INFO before: {CANARY}", "INFO after: ***"]


def test_context_load_passes_the_filter_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OS_TEST_VIA_CONTEXT", CANARY)
    path = write_context(tmp_path, "credentials:\n  api: {env: OS_TEST_VIA_CONTEXT}\n")
    scrub = SecretFilter()
    RuntimeContext.load(path, log_filter=scrub).credentials.resolve("api")
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "value %s", (CANARY,), None)
    scrub.filter(record)
    assert record.getMessage() == "value ***"


# -- the canary never appears in an error -----------------------------------


def canary_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[BaseException]:
    """Provoke every error path with the canary sitting in a value or a secret file.

    Keys are names, and messages quote them on purpose; only values are secret.
    """
    monkeypatch.setenv("OS_TEST_CANARY", CANARY)
    cases: list[tuple[CredentialResolver, str]] = [
        (file_resolver(write_secret(tmp_path / "wide", mode=0o644)), "mail"),
        (file_resolver(write_secret(tmp_path / "group", mode=0o640)), "mail"),
        (CredentialResolver({"api": CredentialSource(env="OS_TEST_CANARY")}), "other"),
    ]
    target = write_secret(tmp_path / "target")
    (tmp_path / "link").symlink_to(target)
    cases.append((file_resolver(tmp_path / "link"), "mail"))
    binary = tmp_path / "binary"
    binary.write_bytes(CANARY.encode() + b"\xff\xfe")
    binary.chmod(0o600)
    cases.append((file_resolver(binary), "mail"))
    huge = write_secret(tmp_path / "huge", CANARY * 5000)
    cases.append((file_resolver(huge), "mail"))
    for resolver, reference in cases:
        try:
            resolver.resolve(reference)
        except CredentialError as exc:
            yield exc
        else:
            raise AssertionError(f"expected a refusal for {reference}")
    contexts = [
        f"config:\n  password: {CANARY}\n",
        f"config:\n  url: [{CANARY}\n",
        f'config:\n  url: "{CANARY}\n',
        f"config:\n  list: [{CANARY}]\n",
        f"config:\n  a: {CANARY}\n  a: {CANARY}\n",
    ]
    for index, text in enumerate(contexts):
        try:
            RuntimeContext.load(write_context(tmp_path, text, f"c{index}.yaml"))
        except ContextError as exc:
            yield exc
        else:
            raise AssertionError(f"expected a refusal for context {index}")


def test_canary_never_appears_in_any_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    errors = list(canary_errors(tmp_path, monkeypatch))
    assert len(errors) == 11
    for exc in errors:
        assert CANARY not in exception_text(exc), exc


# -- the flat-config form the HTTP adapter uses -----------------------------


def test_flat_config_env_and_default_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OS_TEST_FLAT", "v1")
    monkeypatch.setenv("OPENSEAL_CREDENTIAL_MAIL_RELAY", "v2")
    assert resolve_credential("api", {"credential.api": "env:OS_TEST_FLAT"}) == "v1"
    assert resolve_credential("mail_relay", {}) == "v2"


def test_flat_config_file_gets_the_same_checks(tmp_path: Path) -> None:
    good = write_secret(tmp_path / "good")
    assert resolve_credential("x", {"credential.x": f"file:{good}"}) == CANARY
    good.chmod(0o644)
    with pytest.raises(CredentialError, match="has mode 0644"):
        resolve_credential("x", {"credential.x": f"file:{good}"})
    with pytest.raises(CredentialError, match="use `env:NAME` or `file:PATH`"):
        resolve_credential("x", {"credential.x": "vault:abc"})


def test_mode_helper_matches_stat() -> None:
    # guards the test helper: chmod really sets what the checks read
    assert stat.S_IMODE(0o100600) == 0o600
