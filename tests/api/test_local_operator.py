"""The local operator is a deliberate, local choice (invariant 21): it exists only on a server
started for it, only for this start's secret from a loopback peer addressing a loopback Host,
and a relay or a web page alone never obtains it."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from openseal.api.local import is_loopback_authority
from openseal.cli.main import main
from openseal.local_operator import (
    LocalOperator,
    console_url,
    cookie_name,
    read_secret,
    secret_file,
    write_secret,
)
from tests.api.conftest import ALICE_TOKEN, Serve, sha
from tests.api.support import PLAIN_HTTP, LiveServer, assert_error
from tests.doc_pages import free_port
from tests.faultproxy import TcpProxy
from tests.runtime.support import eventually


def test_without_local_operator_a_tokenless_server_serves_nobody(serve: Serve) -> None:
    server = serve(local_operator=None)
    with server.anonymous() as anonymous:
        for path in ("/me", "/runs", "/approvals"):
            error = assert_error(anonymous.get(path), 401, "unauthorized")
            assert "--local-operator" in error["message"] and "tokens create" in error["message"]


def test_the_secret_makes_the_local_operator_and_nothing_else_does(serve: Serve) -> None:
    server = serve()
    with server.client() as operator:
        me = operator.get("/me").json()
        assert (me["principal"], me["via_token"]) == ("user:local", False)
    with server.anonymous() as anonymous:
        error = assert_error(anonymous.get("/me"), 401, "unauthorized")
        assert f"local-operator-{server.port}.token" in error["message"]
    with server.anonymous(LocalOperator.new().secret) as earlier_start:  # another start's
        assert_error(earlier_start.get("/me"), 401, "unauthorized")


def test_a_same_host_relay_without_forwarding_headers_gets_nothing(serve: Serve) -> None:
    server = serve()
    # what socat or a TCP-mode proxy does: the server sees a loopback peer and no header
    with TcpProxy("127.0.0.1", server.port) as relay:
        through = f"http://127.0.0.1:{relay.port}/api/v1"
        with httpx.Client(base_url=through, verify=PLAIN_HTTP, timeout=30) as remote:
            assert_error(remote.get("/me"), 401, "unauthorized")
            assert_error(remote.get("/runs"), 401, "unauthorized")


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1:8400", True), ("127.0.0.1", True), ("[::1]:8400", True),
        ("localhost:8400", True), ("LOCALHOST", True), ("127.0.0.2:80", True),
        ("evil.example:8400", False), ("127.0.0.1.nip.io:8400", False), ("::1", False),
        ("localhost.", False), ("0.0.0.0:8400", False), ("", False), ("user@127.0.0.1", False),
        ("127.0.0.1:port", False),
    ],
)  # fmt: skip
def test_loopback_authorities(host: str, allowed: bool) -> None:
    assert is_loopback_authority(host) is allowed


def test_a_name_that_leads_here_is_misdirected_even_with_the_secret(serve: Serve) -> None:
    """DNS rebinding: a page at evil.example, whose name now resolves to 127.0.0.1, reaches the
    server with its own name in Host and a matching Origin."""
    server = serve()
    rebound = {
        "Host": f"evil.example:{server.port}",
        "Origin": f"http://evil.example:{server.port}",
    }
    with server.client() as operator:
        error = assert_error(operator.get("/runs", headers=rebound), 421, "misdirected_request")
        assert "evil.example" in error["message"] and "loopback" in error["message"]
        moved = {"Host": f"localhost:{server.port}", "Origin": "http://evil.example"}
        assert_error(operator.get("/runs", headers=moved), 403, "foreign_origin")
        for host in (f"localhost:{server.port}", f"[::1]:{server.port}"):
            assert operator.get("/runs", headers={"Host": host}).status_code == 200
        own = {"Origin": f"http://127.0.0.1:{server.port}"}
        assert operator.get("/runs", headers=own).status_code == 200


def test_forwarding_headers_and_proxies_turn_the_local_operator_off(serve: Serve) -> None:
    server = serve()
    with server.client() as operator:
        refused = operator.get("/me", headers={"X-Forwarded-For": "203.0.113.9"})
        assert_error(refused, 403, "local_operator_refused")
    behind = serve(trusted_proxies=("127.0.0.1",))
    with behind.client() as operator:  # the secret is not even looked at
        assert_error(operator.get("/me"), 401, "unauthorized")


def test_tokens_and_the_local_operator_are_served_side_by_side(serve: Serve) -> None:
    from openseal.api.auth import parse_tokens

    server = serve(tokens=parse_tokens({sha(ALICE_TOKEN): "user:alice"}))
    with server.client() as operator, server.client(ALICE_TOKEN) as alice:
        assert operator.get("/me").json()["principal"] == "user:local"
        assert alice.get("/me").json()["principal"] == "user:alice"
    with server.anonymous() as anonymous:
        assert_error(anonymous.get("/me"), 401, "unauthorized")


def _session(server: LiveServer, secret: str, **headers: str) -> httpx.Response:
    with httpx.Client(base_url=server.url, verify=PLAIN_HTTP, timeout=30) as browser:
        return browser.post("/console/session", json={"secret": secret}, headers=headers)


def test_the_console_exchanges_the_secret_for_a_strict_http_only_cookie(serve: Serve) -> None:
    server = serve()
    assert server.operator is not None
    origin = {"Origin": server.url}
    assert_error(_session(server, "not-the-secret", **origin), 401, "unauthorized")
    rebound = {
        "Host": f"evil.example:{server.port}",
        "Origin": f"http://evil.example:{server.port}",
    }
    assert_error(_session(server, server.operator.secret, **rebound), 421, "misdirected_request")
    opened = _session(server, server.operator.secret, **origin)
    assert opened.status_code == 204, opened.text
    cookie = opened.headers["set-cookie"]
    assert cookie.startswith(f"{cookie_name(server.port)}=")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    jar = {cookie_name(server.port): server.operator.secret}
    with server.anonymous(cookies=jar) as console:
        assert console.get("/me").json()["principal"] == "user:local"
        same_site = {"Sec-Fetch-Site": "same-site"}  # another port of 127.0.0.1, say
        assert_error(console.get("/me", headers=same_site), 403, "cross_site_request")
        assert console.get("/me", headers={"Sec-Fetch-Site": "same-origin"}).status_code == 200
    # a server without a local operator exchanges nothing
    plain = serve(local_operator=None)
    assert_error(_session(plain, "anything", Origin=plain.url), 403, "local_operator_refused")


def test_the_secret_file_is_the_owners_alone(tmp_path: Path) -> None:
    operator = LocalOperator.new()
    path = write_secret(tmp_path / "home", 8400, operator.secret)
    assert path == secret_file(tmp_path / "home", 8400)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_secret(tmp_path / "home", 8400) == operator.secret
    assert read_secret(tmp_path / "home", 8401) is None
    path.chmod(0o644)
    with pytest.raises(Exception, match="readable by others"):
        read_secret(tmp_path / "home", 8400)
    assert operator.secret not in repr(operator)
    url = console_url("127.0.0.1", 8400, operator.secret)
    assert url == f"http://127.0.0.1:8400/#local-operator={operator.secret}"
    assert console_url("::1", 8400, "s") == "http://[::1]:8400/#local-operator=s"


def test_serve_serves_the_local_operator_only_on_loopback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENSEAL_APPROVAL_AUTHORITY", raising=False)
    monkeypatch.delenv("OPENSEAL_DATABASE_URL", raising=False)
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f"tokens:\n  {sha(ALICE_TOKEN)}: user:alice\n")
    for extra in (["--host", "0.0.0.0", "--tokens", str(tokens)], ["--trusted-proxy", "10.0.0.1"]):
        code = main(["serve", "--local-operator", "--home", str(tmp_path), *extra])
        err = capsys.readouterr().err
        assert code == 2 and "--local-operator serves only this machine" in err, err


@pytest.mark.slow
def test_serve_writes_the_secret_prints_the_console_url_and_forgets_it(tmp_path: Path) -> None:
    """`openseal serve --local-operator` as a person runs it; the CLI finds the secret."""
    home, port = tmp_path / "home", free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENSEAL_")}
    program = Path(sys.executable).parent / "openseal"
    assert main(["db", "upgrade", "--home", str(home)]) == 0
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(program), "serve", "--local-operator", "--port", str(port), "--home", str(home)],
            env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        said = eventually(
            lambda: "local operator (user:local)" in log.read_text() and log.read_text(),
            timeout=120,
        )
        secret = read_secret(home, port)
        assert secret is not None
        assert stat.S_IMODE(secret_file(home, port).stat().st_mode) == 0o600
        assert console_url("127.0.0.1", port, secret) in said
        server = f"http://127.0.0.1:{port}"
        listed = subprocess.run(
            [str(program), "runs", "list", "--server", server, "--home", str(home)],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert listed.returncode == 0 and listed.stdout.strip() == "no runs", listed
        elsewhere = subprocess.run(
            [str(program), "runs", "list", "--server", server, "--home", str(tmp_path / "other")],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert elsewhere.returncode == 1 and "local-operator" in elsewhere.stderr, elsewhere
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
    assert not secret_file(home, port).exists()
    # one clean banner: the server library's start and stop chatter is not repeated around it
    said = [line for line in log.read_text().splitlines() if '"GET ' not in line]
    assert said[0] == f"openseal API on http://127.0.0.1:{port}/api/v1 (no TLS)", said
    assert said[1].startswith("local operator (user:local): open "), said
    assert not [line for line in said[2:] if line.startswith("INFO:")], said
