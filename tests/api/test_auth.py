"""Token files, caller identification, and `openseal serve`'s refusals (no server needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.api.auth import Caller, TokenTable, identify, load_tokens, parse_tokens
from openseal.api.errors import ApiError
from openseal.cli.main import main
from openseal.errors import UsageError
from openseal.runtime.actions.approvals import ApprovalAuthority
from openseal.runtime.service import FULL, Grant
from tests.api.conftest import ALICE_TOKEN, BOB_TOKEN, sha


def test_token_files_take_hashes_principal_entries_and_plain_tokens(tmp_path: Path) -> None:
    path = tmp_path / "tokens.yaml"
    path.write_text(
        "tokens:\n"
        f'  "sha256:{sha(ALICE_TOKEN)}": user:alice\n'
        f"  user:bob: {{sha256: {sha(BOB_TOKEN)}}}\n"
        "  plain-token-for-carol-000: user:carol\n",
        encoding="utf-8",
    )
    table = load_tokens(path)
    assert table.principal(ALICE_TOKEN) == "user:alice"
    assert table.principal(BOB_TOKEN) == "user:bob"
    assert table.principal("plain-token-for-carol-000") == "user:carol"
    assert table.principal(sha(ALICE_TOKEN)) is None  # the hash is not the token
    assert table.principal("") is None


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({}, "expected a mapping"),
        ({sha(ALICE_TOKEN): "alice"}, "not a principal"),
        ({sha(ALICE_TOKEN): "user:local"}, "local operator"),
        ({"short": "user:alice"}, "at least 16"),
        ({"user:bob": {"sha256": "abc"}}, "needs `sha256"),
        ({sha(ALICE_TOKEN): ["user:alice"]}, "maps to a principal"),
    ],
)
def test_malformed_token_files_are_one_line_usage_errors(raw: object, problem: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_tokens(raw, "tokens.yaml")
    assert problem in str(raised.value) and "\n" not in str(raised.value)


def test_an_unreadable_token_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read token file"):
        load_tokens(tmp_path / "missing.yaml")
    (tmp_path / "bad.yaml").write_text("tokens: [", encoding="utf-8")
    with pytest.raises(UsageError, match="not valid YAML"):
        load_tokens(tmp_path / "bad.yaml")


def test_identify_the_caller() -> None:
    empty = TokenTable()
    with pytest.raises(ApiError) as raised:  # no token, no local operator: nobody is served
        identify(empty, None)
    assert raised.value.code == "unauthorized" and "--local-operator" in raised.value.message
    with pytest.raises(ApiError) as raised:
        identify(empty, f"Bearer {ALICE_TOKEN}")
    assert raised.value.code == "unauthorized"
    table = parse_tokens({sha(ALICE_TOKEN): "user:alice"})
    alice = identify(table, f"Bearer {ALICE_TOKEN}")
    assert alice == Caller("user:alice", True, FULL, False) and alice.decider == "user:alice"
    assert identify(table, f"bearer   {ALICE_TOKEN}  ").principal == "user:alice"
    for header in (None, "", "Basic abc", "Bearer ", f"Bearer {BOB_TOKEN}"):
        with pytest.raises(ApiError) as raised:
            identify(table, header)
        assert raised.value.status == 401
        assert ALICE_TOKEN not in raised.value.message and BOB_TOKEN not in raised.value.message


def test_insecure_no_auth_serves_anonymous_callers_never_as_a_local_connection() -> None:
    anonymous = identify(TokenTable(), None, insecure=True)
    assert anonymous == Caller("user:local", False, FULL, False)
    assert anonymous.decider is None and not anonymous.local


def test_token_file_entries_may_name_roles_and_scopes() -> None:
    table = parse_tokens(
        {
            "user:bob": {"sha256": sha(BOB_TOKEN), "roles": ["operator"], "scopes": ["ops"]},
            sha(ALICE_TOKEN): "user:alice",
        }
    )
    bob = identify(table, f"Bearer {BOB_TOKEN}")
    assert bob.grant == Grant.of(["operator"], ["ops"])
    assert identify(table, f"Bearer {ALICE_TOKEN}").grant == FULL  # no roles: as before roles
    with pytest.raises(UsageError, match="unknown role 'boss'"):
        parse_tokens({"user:bob": {"sha256": sha(BOB_TOKEN), "roles": ["boss"]}})
    with pytest.raises(UsageError, match="must be a list"):
        parse_tokens({"user:bob": {"sha256": sha(BOB_TOKEN), "scopes": "ops"}})


def test_the_authority_tokens_count_too() -> None:
    authority = ApprovalAuthority(tokens={sha(BOB_TOKEN): "user:bob"})
    merged = parse_tokens({sha(ALICE_TOKEN): "user:alice"}).merged(authority)
    assert merged.principal(BOB_TOKEN) == "user:bob"
    assert merged.principal(ALICE_TOKEN) == "user:alice"
    bob = merged.lookup(BOB_TOKEN)
    assert bob is not None and bob[1] == Grant.of(["viewer", "approver"], ["*"])
    assert TokenTable().merged(authority).principal(BOB_TOKEN) == "user:bob"


def test_serve_refuses_a_public_address_without_tokens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENSEAL_APPROVAL_AUTHORITY", raising=False)
    code = main(["serve", "--host", "0.0.0.0", "--home", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert "refusing to listen on 0.0.0.0 without tokens" in err and "Traceback" not in err
    assert "--insecure-no-auth" in err
    (tmp_path / "tokens.yaml").write_text("nope: [", encoding="utf-8")
    code = main(["serve", "--tokens", str(tmp_path / "tokens.yaml"), "--home", str(tmp_path)])
    assert code == 2 and "not valid YAML" in capsys.readouterr().err


def test_serve_help_mentions_tls_and_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--tokens" in out and "--workers" in out and "No TLS" in out
