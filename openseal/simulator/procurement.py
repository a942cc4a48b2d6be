"""A small procurement service over real HTTP, for the quickstart, the examples and the tests.

It plays the destination of the running example: a catalogue of three approved
vendors, and an order endpoint that honours ``Idempotency-Key`` the way a
careful real service does (same key and body → the same order; same key,
different body → 409). Fault switches reproduce the failures the runtime must
survive, above all the *lost response*: the order is created, then the
connection closes without a reply, so the caller cannot know what happened.

>>> with ProcurementSimulator() as sim:                                # doctest: +SKIP
...     sim.set_fault(drop_response_after_create=1)
...     # POST f"{sim.url}/orders" now creates an order and drops the reply
"""

from __future__ import annotations

import hmac
import json
import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Literal
from urllib.parse import parse_qs, unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from openseal.simulator.background import Background, SimulatorError

CURRENCY = "EUR"
MAX_BODY = 64 * 1024


@dataclass(frozen=True, slots=True)
class Vendor:
    id: str
    name: str
    lead_time_days: int


VENDORS: dict[str, Vendor] = {
    v.id: v
    for v in (
        Vendor("northwind", "Northwind Supplies", 5),
        Vendor("contoso", "Contoso Hardware", 2),
        Vendor("fabrikam", "Fabrikam Direct", 9),
    )
}

#: item → vendor → (unit price in EUR, units in stock). The cheapest laptop
#: vendor cannot deliver ten, so a correct comparison has to look at stock too.
CATALOGUE: dict[str, dict[str, tuple[float, int]]] = {
    "laptop": {"northwind": (1149.0, 40), "contoso": (1099.0, 8), "fabrikam": (1185.0, 120)},
    "monitor": {"northwind": (239.0, 60), "contoso": (255.0, 15), "fabrikam": (229.0, 200)},
    "keyboard": {"northwind": (49.9, 300), "contoso": (45.5, 25), "fabrikam": (52.0, 500)},
    "docking_station": {"northwind": (189.0, 12), "contoso": (179.0, 30), "fabrikam": (199.0, 0)},
}


class OrderRequest(BaseModel):
    """The body of ``POST /orders``; strict so that a sloppy caller is told, not guessed at."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    vendor: str = Field(min_length=1, max_length=100)
    quantity: int = Field(gt=0, le=100_000)
    total: float = Field(gt=0, allow_inf_nan=False)
    currency: str = Field(pattern=r"^[A-Z]{3}$")
    destination: str = Field(min_length=1, max_length=200)
    item: str | None = Field(default=None, min_length=1, max_length=100)


class FaultSettings(BaseModel):
    """Fault switches; only the fields given change (``reset`` first restores the defaults)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    #: create the next N orders, then close the connection without replying
    drop_response_after_create: int = Field(default=0, ge=0)
    #: answer with this status before doing anything (``None`` turns it off)
    fail_with_status: int | None = Field(default=None, ge=400, le=599)
    #: how many requests fail; ``None`` means until switched off
    fail_times: int | None = Field(default=None, ge=1)
    #: ``create``: only ``POST /orders`` fails; ``all``: every service endpoint
    fail_scope: Literal["create", "all"] = "create"
    #: wait this long before replying (after the work is done, so a timed-out
    #: create has still created its order)
    delay_seconds: float = Field(default=0.0, ge=0, le=600, allow_inf_nan=False)
    #: keep a new order's key in flight this long before creating the order; a request with
    #: the same key meanwhile is answered 409 ``idempotency_key_in_flight``, and a lookup
    #: finds nothing yet (a slow destination)
    hold_create_seconds: float = Field(default=0.0, ge=0, le=600, allow_inf_nan=False)
    #: the bearer token every service request must carry (``None``: no check)
    require_credential: str | None = Field(default=None, min_length=1)
    #: create the order but answer 201 with a debugging echo of the request — its
    #: ``Authorization`` header included — instead of the order (a reply that does
    #: not fit the order skill's output type and carries the caller's credential)
    echo_credential: bool = False
    reset: bool = False

    @field_validator("drop_response_after_create", mode="before")
    @classmethod
    def _once(cls, value: object) -> object:
        # ``true`` reads naturally as "once"
        return int(value) if isinstance(value, bool) else value


def parse_faults(changes: object) -> FaultSettings:
    """Validate fault changes; :class:`SimulatorError` with every problem on one line."""
    try:
        return FaultSettings.model_validate(changes)
    except ValidationError as exc:
        raise SimulatorError(f"invalid fault settings: {_problems(exc)}") from None


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors())


@dataclass(slots=True)
class _Faults:
    drop_remaining: int = 0
    fail_status: int | None = None
    fail_remaining: int | None = None
    fail_scope: str = "create"
    delay: float = 0.0
    hold: float = 0.0
    credential: str | None = None
    echo: bool = False


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: object
    headers: tuple[tuple[str, str], ...] = ()
    #: close the connection without sending anything (the lost response)
    drop: bool = False


def error(status: int, code: str, message: str, **extra: object) -> Reply:
    return Reply(status, {"error": code, "message": message, **extra})


class Service:
    """The simulator's state and behaviour, independent of HTTP; every method is thread-safe."""

    def __init__(self, credential: str | None = None) -> None:
        self._lock = threading.Lock()
        self._initial_credential = credential
        self.stopping = threading.Event()
        self._clear()

    def _clear(self) -> None:
        self._orders: list[dict[str, object]] = []
        self._by_key: dict[str, tuple[OrderRequest, dict[str, object]]] = {}
        self._in_flight: set[str] = set()
        self._faults = _Faults(credential=self._initial_credential)
        self._requests: Counter[str] = Counter()
        self._outcomes: Counter[str] = Counter()

    # -- inspection -------------------------------------------------------

    def orders(self) -> list[dict[str, object]]:
        with self._lock:
            return [dict(order) for order in self._orders]

    def order_for_key(self, key: str) -> dict[str, object] | None:
        with self._lock:
            found = self._by_key.get(key)
            return dict(found[1]) if found else None

    def stats(self) -> dict[str, object]:
        with self._lock:
            return {
                "orders": len(self._orders),
                "in_flight": len(self._in_flight),
                "requests": dict(sorted(self._requests.items())),
                "outcomes": dict(sorted(self._outcomes.items())),
            }

    def fault_summary(self) -> dict[str, object]:
        with self._lock:
            f = self._faults
            return {
                "drop_response_after_create": f.drop_remaining,
                "fail_with_status": f.fail_status,
                "fail_times": f.fail_remaining,
                "fail_scope": f.fail_scope,
                "delay_seconds": f.delay,
                "hold_create_seconds": f.hold,
                # whether a token is required, never which one
                "require_credential": f.credential is not None,
                "echo_credential": f.echo,
            }

    # -- control ----------------------------------------------------------

    def apply(self, settings: FaultSettings) -> None:
        with self._lock:
            if settings.reset:
                self._clear()
            f = self._faults
            given = settings.model_fields_set
            if "drop_response_after_create" in given:
                f.drop_remaining = settings.drop_response_after_create
            if "fail_with_status" in given:
                f.fail_status = settings.fail_with_status
                f.fail_remaining = settings.fail_times
            elif "fail_times" in given:
                f.fail_remaining = settings.fail_times
            if "fail_scope" in given:
                f.fail_scope = settings.fail_scope
            if "delay_seconds" in given:
                f.delay = settings.delay_seconds
            if "hold_create_seconds" in given:
                f.hold = settings.hold_create_seconds
            if "require_credential" in given:
                f.credential = settings.require_credential
            if "echo_credential" in given:
                f.echo = settings.echo_credential

    # -- the request pipeline ---------------------------------------------

    def count(self, route: str) -> None:
        with self._lock:
            self._requests[route] += 1

    def authorized(self, header: str | None) -> bool:
        with self._lock:
            expected = self._faults.credential
        if expected is None:
            return True
        scheme, _, token = (header or "").partition(" ")
        if scheme.lower() != "bearer":
            return False
        # constant-time comparison: the token is a secret even in a simulator
        return hmac.compare_digest(token.strip().encode(), expected.encode())

    def injected_failure(self, route: str) -> Reply | None:
        with self._lock:
            f = self._faults
            if f.fail_status is None or (f.fail_scope == "create" and route != "POST /orders"):
                return None
            status = f.fail_status
            if f.fail_remaining is not None:
                f.fail_remaining -= 1
                if f.fail_remaining <= 0:
                    f.fail_status, f.fail_remaining = None, None
            self._outcomes["failed"] += 1
        return error(status, "injected_failure", f"the simulator was told to answer {status}")

    def delay(self) -> float:
        with self._lock:
            return self._faults.delay

    def note(self, outcome: str) -> None:
        with self._lock:
            self._outcomes[outcome] += 1

    # -- endpoints --------------------------------------------------------

    def search(self, query: dict[str, list[str]]) -> Reply:
        item = _normalise_item(query.get("item", [""])[0])
        raw_quantity = query.get("quantity", ["1"])[0]
        quantity = int(raw_quantity) if re.fullmatch(r"[0-9]{1,6}", raw_quantity) else 0
        if not 0 < quantity <= 100_000:
            return error(422, "invalid_query", "quantity must be a whole number from 1 to 100000")
        offers = [
            {
                "vendor": vendor_id,
                "name": VENDORS[vendor_id].name,
                "unit_price": price,
                "currency": CURRENCY,
                "in_stock": stock >= quantity,
                "lead_time_days": VENDORS[vendor_id].lead_time_days,
            }
            for vendor_id, (price, stock) in CATALOGUE.get(item, {}).items()
        ]
        return Reply(200, {"item": item, "quantity": quantity, "offers": offers})

    def create(self, key: str | None, body: object, authorization: str | None = None) -> Reply:
        if not key or len(key) > 255 or not key.isprintable():
            return error(400, "idempotency_key_required", "send an Idempotency-Key header")
        try:
            request = OrderRequest.model_validate(body)
        except ValidationError as exc:
            return error(422, "invalid_order", _problems(exc))
        problem = _check_order(request)
        if problem is not None:
            return problem
        with self._lock:
            existing = self._by_key.get(key)
            if existing is not None:
                return self._replay(key, request, *existing)
            if key in self._in_flight:
                self._outcomes["in_flight"] += 1
                return error(
                    409, "idempotency_key_in_flight",
                    f"a request with idempotency key `{key}` is still being processed",
                )  # fmt: skip
            hold = self._faults.hold
            if hold:
                self._in_flight.add(key)
        if hold:
            self.stopping.wait(hold)
        with self._lock:
            self._in_flight.discard(key)
            order = self._record(key, request)
            drop = self._faults.drop_remaining > 0
            if drop:
                self._faults.drop_remaining -= 1
            self._outcomes["dropped" if drop else "created"] += 1
            echo = self._faults.echo
        if echo:
            received = {"authorization": authorization, "idempotency-key": key}
            return Reply(201, {"status": "received", "request": {"headers": received}}, drop=drop)
        return Reply(201, order, drop=drop)

    def _replay(
        self, key: str, request: OrderRequest, first: OrderRequest, order: dict[str, object]
    ) -> Reply:
        if request != first:
            self._outcomes["conflicts"] += 1
            return error(
                409,
                "idempotency_conflict",
                f"idempotency key `{key}` was already used for a different order",
                order_id=order["order_id"],
            )
        self._outcomes["replayed"] += 1
        return Reply(200, dict(order), (("Idempotent-Replayed", "true"),))

    def _record(self, key: str, request: OrderRequest) -> dict[str, object]:
        order: dict[str, object] = {
            "order_id": f"PO-{len(self._orders) + 1:06d}",
            "status": "confirmed",
            "vendor": request.vendor,
            "vendor_name": VENDORS[request.vendor].name,
            "item": request.item,
            "quantity": request.quantity,
            "total": request.total,
            "currency": request.currency,
            "destination": request.destination,
            "idempotency_key": key,
        }
        self._orders.append(order)
        self._by_key[key] = (request, order)
        return dict(order)

    def lookup(self, key: str) -> Reply:
        order = self.order_for_key(key)
        if order is None:
            return error(404, "not_found", f"no order for idempotency key `{key}`")
        return Reply(200, order)


def _normalise_item(raw: str) -> str:
    item = raw.strip().lower().replace("-", "_").replace(" ", "_")
    if item not in CATALOGUE and item.endswith("s") and item[:-1] in CATALOGUE:
        return item[:-1]
    return item


def _check_order(request: OrderRequest) -> Reply | None:
    if request.vendor not in VENDORS:
        approved = ", ".join(VENDORS)
        return error(
            422, "unknown_vendor", f"`{request.vendor}` is not an approved vendor ({approved})"
        )
    if request.currency != CURRENCY:
        return error(422, "wrong_currency", f"`{request.vendor}` invoices in {CURRENCY}")
    return None


# -- HTTP ------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], service: Service, log: Callable[[str], None] | None
    ) -> None:
        self.service = service
        self.log = log
        super().__init__(address, _Handler)

    def handle_error(self, request: object, client_address: object) -> None:
        # a client that went away mid-reply is normal here; never print a traceback
        if self.log is not None:
            self.log("a request ended with an error (the client probably disconnected)")


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "openseal-procurement-simulator"

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def log_message(self, format: str, *args: object) -> None:
        # the request line and status only; headers (and so tokens) are never logged
        if self.server.log is not None:
            self.server.log(format % args)

    def _dispatch(self, method: str) -> None:
        service = self.server.service
        parts = urlsplit(self.path)
        route, arg = _route(method, parts.path)
        if route not in ("GET /stats", "POST /_control"):
            service.count(route)
        reply = self._reply(service, route, arg, parts.query)
        if reply.drop:
            self.close_connection = True
            self.log_message('"%s" dropped the response', self.requestline)
            return
        self._send(reply)

    def _reply(self, service: Service, route: str, arg: str, query: str) -> Reply:
        if route == "GET /stats":
            return Reply(200, service.stats())
        if route == "POST /_control":
            return self._control(service)
        if route.startswith("unknown"):
            return error(405 if route == "unknown method" else 404, "not_found", "no such endpoint")
        if not service.authorized(self.headers.get("Authorization")):
            service.note("unauthorized")
            reply = error(401, "unauthorized", "a valid bearer token is required")
            return Reply(reply.status, reply.body, (("WWW-Authenticate", "Bearer"),))
        failure = service.injected_failure(route)
        if failure is not None:
            return failure
        reply = self._serve(service, route, arg, query)
        delay = service.delay()
        if delay:
            service.stopping.wait(delay)
        return reply

    def _serve(self, service: Service, route: str, arg: str, query: str) -> Reply:
        if route == "GET /vendors":
            return service.search(parse_qs(query))
        if route == "GET /orders":
            return Reply(200, {"orders": service.orders()})
        if route == "GET /orders/by-key":
            return service.lookup(arg)
        body, problem = self._json_body()
        if problem is not None:
            return problem
        return service.create(
            self.headers.get("Idempotency-Key"), body, self.headers.get("Authorization")
        )

    def _control(self, service: Service) -> Reply:
        body, problem = self._json_body()
        if problem is not None:
            return problem
        try:
            service.apply(parse_faults(body))
        except SimulatorError as exc:
            return error(422, "invalid_control", exc.message)
        return Reply(200, {"faults": service.fault_summary()})

    def _json_body(self) -> tuple[object, Reply | None]:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length <= 0:
            return None, error(400, "body_required", "send a JSON body with a Content-Length")
        if length > MAX_BODY:
            return None, error(413, "body_too_large", f"bodies are limited to {MAX_BODY} bytes")
        raw = self.rfile.read(length)
        try:
            return json.loads(raw, parse_constant=_no_constant), None
        except (ValueError, UnicodeDecodeError):
            return None, error(400, "invalid_json", "the body is not valid JSON")

    def _send(self, reply: Reply) -> None:
        data = json.dumps(reply.body, separators=(",", ":")).encode()
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in reply.headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the caller gave up (a client timeout during delay_seconds)


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _route(method: str, path: str) -> tuple[str, str]:
    """The route name (``"POST /orders"``) and its path argument (the key for lookups)."""
    path = path.rstrip("/") or "/"
    if path.startswith("/orders/by-key/"):
        key = unquote(path[len("/orders/by-key/") :])
        return ("GET /orders/by-key", key) if method == "GET" else ("unknown method", "")
    allowed = {"/vendors": "GET", "/orders": "GET POST", "/stats": "GET", "/_control": "POST"}
    if path not in allowed:
        return "unknown path", ""
    if method not in allowed[path].split():
        return "unknown method", ""
    return f"{method} {path}", ""


class ProcurementSimulator:
    """The simulator on a background thread; a context manager that starts and stops it."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        credential: str | None = None,
        *,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self._log = log
        self._service = Service(credential)
        self._background = Background(
            "procurement simulator", (host, port), lambda a: _Server(a, self._service, log)
        )

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``; the port is known once started."""
        host, port = self._background.address
        return f"http://{host}:{port}"

    def start(self) -> ProcurementSimulator:
        if not self._background.running:
            self._service.stopping.clear()
            self._background.start()
        return self

    def stop(self) -> None:
        if self._background.running:
            self._service.stopping.set()  # wakes requests sleeping in delay_seconds
            self._background.stop()

    def __enter__(self) -> ProcurementSimulator:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def orders(self) -> list[dict[str, object]]:
        """Every order created so far, oldest first (copies)."""
        return self._service.orders()

    def order_count(self) -> int:
        return len(self._service.orders())

    def order_for_key(self, key: str) -> dict[str, object] | None:
        return self._service.order_for_key(key)

    def stats(self) -> dict[str, object]:
        """What ``GET /stats`` returns: order count, requests per route, outcomes."""
        return self._service.stats()

    def set_fault(self, **changes: object) -> None:
        """Change fault switches, e.g. ``set_fault(drop_response_after_create=1)``.

        Accepts the fields of :class:`FaultSettings`; unknown names or bad values
        raise :class:`SimulatorError`.
        """
        self._service.apply(parse_faults(changes))

    def reset(self) -> None:
        """Forget orders, counters and faults (the constructor's credential stays)."""
        self._service.apply(FaultSettings(reset=True))
