"""Starting and steering work from the console, in headless Chromium against a real
``openseal serve``: the Ask box (the writer's model on a local OpenAI-compatible server picks
the workflow; nothing starts before "Start", nor when nothing fits), an agent request taken
through every step of its page, and an agent's and a team's page (what each is doing now, the
calls its runs have in flight to capped skills; pause and resume, withheld with the reason from
a token that does not reach every scope)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect

from openseal.cli.output import handle
from openseal.quickstart import REQUEST, WORKFLOW
from openseal.runtime import service
from openseal.runtime.engine.delegation import request_work
from openseal.runtime.store import Store, open_store
from tests.asks.support import FITTING, KEY, KEY_VARIABLE, PROMPT, RELEASE_NOTE, plan, served_by
from tests.console.support import ALICE, Console, serving, sha, sign_in
from tests.console.test_console import serious
from tests.runtime.engine.test_skill_capacity import dies
from tests.runtime.engine.test_skill_capacity import start as start_orders
from tests.runtime.engine_support import DEFS, compile_files, register
from tests.runtime.providers.chat_server import ChatServer

#: a real browser against a served console: run with `make test-slow`
pytestmark = pytest.mark.slow

#: operates in one scope only: it may steer runs there, not pause an agent everywhere
CAROL = "carol-console-token-0123456789abcdef"


@pytest.fixture(scope="module")
def chat() -> Iterator[ChatServer]:
    with ChatServer(require_key=KEY) as running:
        yield running


@pytest.fixture(scope="module")
def writers(tmp_path_factory: pytest.TempPathFactory, chat: ChatServer) -> Iterator[Console]:
    """A console whose store holds the release-note definitions, the writer's model served by
    ``chat``."""
    base = Path(tmp_path_factory.mktemp("ask"))
    shutil.copytree(RELEASE_NOTE, base / "release_note")
    served_by(chat, base / "release_note" / "release_note.hcl", "writer_default")

    def deploy(home: Path) -> None:
        store = open_store(home=home)
        try:
            documents = compile_files(base / "release_note")
            service.register_documents(store, documents, actor="user:local")
        finally:
            store.close()

    with serving(
        base / "home", workers=0, before=deploy,
        credentials={"writer_key": KEY_VARIABLE}, env={KEY_VARIABLE: KEY},
    ) as served:  # fmt: skip
        yield served


def objectives(console: Console) -> list[dict[str, Any]]:
    with console.client(ALICE) as alice:
        return list(alice.get("/objectives").json()["objectives"])


def test_a_prompt_shows_the_plan_and_starts_only_when_confirmed(
    writers: Console, chat: ChatServer, page: Page
) -> None:
    sign_in(page, writers, ALICE, "#/ask")
    expect(page.get_by_label("Ask", exact=True)).to_have_value("agent.release_writer")
    assert serious(Axe().run(page)) == []
    chat.reply(plan("release_note", FITTING, "it asks for a release note"))
    page.get_by_label("Prompt").fill(PROMPT)
    page.get_by_role("button", name="Ask", exact=True).click()
    expect(page.locator("#ask-workflow")).to_have_text("release_note")
    expect(page.locator("#ask-inputs")).to_contain_text("2.4")
    expect(page.locator("#ask-inputs")).to_contain_text("2.3")
    assert serious(Axe().run(page)) == []
    assert objectives(writers) == []  # shown, not started
    page.get_by_role("button", name="Cancel").click()
    expect(page.locator("#ask-message")).to_have_text("Nothing was started.")
    assert objectives(writers) == []
    chat.reply(plan("release_note", FITTING))
    page.get_by_role("button", name="Ask", exact=True).click()
    page.get_by_role("button", name="Start").click()
    expect(page.locator("h1")).to_contain_text("Objective")
    [made] = objectives(writers)
    assert (made["goal"], made["workflow_name"]) == (PROMPT, "release_note")
    expect(page.get_by_text(PROMPT).first).to_be_visible()


def test_a_prompt_that_fits_no_workflow_is_answered_and_starts_nothing(
    writers: Console, chat: ChatServer, page: Page
) -> None:
    before = len(objectives(writers))
    sign_in(page, writers, ALICE, "#/ask")
    chat.reply(plan("none", {}, "nothing here buys laptops"))
    page.get_by_label("Prompt").fill("buy ten laptops")
    page.get_by_role("button", name="Ask", exact=True).click()
    refusal = page.get_by_role("alert")
    expect(refusal).to_contain_text("No workflow fits")
    expect(refusal).to_contain_text("nothing was started")
    expect(page.locator("#ask-workflow")).to_have_count(0)
    expect(page.get_by_role("button", name="Start")).to_have_count(0)
    assert len(objectives(writers)) == before


# -- agent requests and the team that answers them --------------------------------------------


def requested(store: Store, *, review: bool) -> tuple[str, str]:
    """A procurement run that asked team.procurement for work (as a worker's turn does); the
    run's id and the request's."""
    run = store.objectives.create("default", WORKFLOW, REQUEST, actor="user:test").run
    held = store.leases.claim("console-test")
    assert held is not None and held.run_id == run.id
    with store.leases.fenced(held) as tx:
        request = request_work(
            store, tx, "team.procurement", {"goal": "compare two vendors", "review": review}
        )
        waiting = {"kind": "agent", "agent_request_id": request.id, "callee": request.callee}
        tx.update_run(status="waiting_for_agent", waiting=waiting)
    return run.id, request.id


@pytest.fixture(scope="module")
def asked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Console, list[str]]]:
    """A console with no worker over a store holding two agent requests to team.procurement
    (the second asks to review the completion); carol operates in scope ``default`` only."""
    made: list[str] = []

    def fill(home: Path) -> None:
        store = open_store(home=home)
        try:
            made.extend(requested(store, review=review)[1] for review in (False, True))
        finally:
            store.close()
        tokens = home / "tokens.yaml"
        tokens.write_text(
            tokens.read_text(encoding="utf-8")
            + f"  user:carol: {{sha256: {sha(CAROL)}, roles: [operator], scopes: [default]}}\n",
            encoding="utf-8",
        )

    with serving(Path(tmp_path_factory.mktemp("requests")), workers=0, before=fill) as served:
        yield served, made


def request_status(console: Console, request_id: str) -> str:
    with console.client(ALICE) as alice:
        return str(alice.get(f"/agent-requests/{request_id}").json()["agent_request"]["status"])


def step(page: Page, button: str, text: str | None = None) -> None:
    if text is not None:
        page.get_by_label("Text (reason, question, answer or result)").fill(text)
    page.get_by_role("button", name=button, exact=True).click()


def test_an_agent_request_is_accepted_clarified_completed_and_reviewed_on_its_page(
    asked: tuple[Console, list[str]], page: Page
) -> None:
    console, [plain, reviewed] = asked
    sign_in(page, console, ALICE, "#/requests")
    rows = page.locator("#requests tbody tr")
    expect(rows).to_have_count(2)
    page.get_by_role("link", name=handle(reviewed)).click()
    expect(page.locator("#request-status")).to_have_text("requested")
    assert serious(Axe().run(page)) == []
    step(page, "Accept")
    expect(page.locator("#request-status")).to_have_text("accepted")
    step(page, "Ask a question", "Which office?")
    expect(page.locator("#request-status")).to_have_text("clarification_requested")
    step(page, "Answer", "Berlin")
    expect(page.locator("#request-status")).to_have_text("accepted")
    expect(page.get_by_text("asked: Which office?")).to_be_visible()
    step(page, "Complete", '{"vendor": "northwind"}')
    expect(page.locator("#request-status")).to_have_text("completed")
    step(page, "Send back", "the other office")
    expect(page.locator("#request-status")).to_have_text("accepted")
    step(page, "Complete", '{"vendor": "contoso"}')
    step(page, "Accept the result")
    expect(page.locator("#request-status")).to_have_text("completion_reviewed")
    expect(page.get_by_text("Nothing for you to do on this request now.")).to_be_visible()
    assert request_status(console, reviewed) == "completion_reviewed"
    # a decline needs its reason, said on the page before anything is sent
    page.goto(f"{console.url}/#/requests/{handle(plain)}")
    expect(page.locator("#request-status")).to_have_text("requested")
    step(page, "Decline")
    expect(page.locator("#request-message")).to_contain_text("Write a reason first.")
    assert request_status(console, plain) == "requested"
    step(page, "Decline", "no budget this quarter")
    expect(page.locator("#request-status")).to_have_text("declined")
    assert request_status(console, plain) == "declined"


def test_a_team_page_shows_what_it_is_doing_and_pauses_and_resumes_it(
    asked: tuple[Console, list[str]], page: Page
) -> None:
    console, _ = asked
    sign_in(page, console, ALICE, "#/requests")
    page.locator("#requests tbody tr").first.get_by_role("link", name="team.procurement").click()
    expect(page.locator("h1")).to_have_text("Team procurement")
    expect(page.locator("#actor-runs tbody tr")).not_to_have_count(0)
    assert serious(Axe().run(page)) == []
    page.get_by_role("button", name="Pause").click()
    expect(page.get_by_role("button", name="Resume")).to_be_visible()
    expect(page.locator(".fields")).to_contain_text("paused by user:alice")
    with console.client(ALICE) as alice:
        assert alice.get("/teams/procurement").json()["team"]["paused"] is True
    page.get_by_role("button", name="Resume").click()
    expect(page.get_by_role("button", name="Pause")).to_be_visible()
    with console.client(ALICE) as alice:
        assert alice.get("/teams/procurement").json()["team"]["paused"] is False


def test_pausing_is_withheld_from_a_token_that_does_not_reach_every_scope(
    asked: tuple[Console, list[str]], page: Page
) -> None:
    console, _ = asked
    sign_in(page, console, CAROL, "#/teams/procurement")
    expect(page.locator("h1")).to_have_text("Team procurement")
    expect(page.get_by_role("button", name="Pause")).to_have_count(0)
    expect(page.locator("#actor-withheld")).to_contain_text("it needs *")
    # the server refuses what the page does not offer
    with console.client(CAROL) as carol:
        refused = carol.post("/teams/procurement/pause", json={})
        assert refused.status_code == 403, refused.text


@pytest.fixture(scope="module")
def calling(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Console, str]]:
    """A console with no worker over a store where agent clerk's run has a call in flight to
    skill ``submit`` (capped): its worker died right after marking the action dispatched."""
    made: list[str] = []

    def fill(home: Path) -> None:
        store = open_store(home=home)
        try:
            register(store, compile_files(DEFS / "skill_capacity.hcl"))
            run = start_orders(store, "orders", 1)
            dies(store, run)
            made.append(run.id)
        finally:
            store.close()

    with serving(Path(tmp_path_factory.mktemp("calls")), workers=0, before=fill) as served:
        yield served, made[0]


def test_an_agents_page_shows_the_calls_its_runs_have_in_flight(
    calling: tuple[Console, str], page: Page
) -> None:
    console, run_id = calling
    sign_in(page, console, ALICE, "#/agents/clerk")
    expect(page.locator("h1")).to_have_text("Agent clerk")
    rows = page.locator("#actor-calls tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("skill:submit")
    expect(rows.first.get_by_role("link", name=handle(run_id))).to_be_visible()
    assert serious(Axe().run(page)) == []
