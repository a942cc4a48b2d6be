"""The console's local-operator session: the secret of the URL ``openseal serve`` printed,
exchanged for a cookie.

The console URL carries this start's secret in its fragment (``/#local-operator=<secret>``),
which a browser never sends; the console's script removes it from the address bar and posts it
to ``POST /console/session``. When it is this start's secret and the request passes the local
operator's checks (:func:`openseal.api.local.refuse_unless_local`), the answer sets a cookie
holding it: ``HttpOnly`` (no script reads it back), ``SameSite=Strict`` (no other site's page
sends it), for this server's port only by its name. ``DELETE /console/session`` forgets it.
Not part of the API's document: it is the console's, outside ``/api/v1``.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from openseal.api.auth import server_port
from openseal.api.errors import ApiError
from openseal.api.local import refuse_unless_local
from openseal.api.state import state_of
from openseal.local_operator import cookie_name

router = APIRouter(include_in_schema=False)
PATH = "/console/session"


class Exchange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    secret: str = Field(min_length=1, max_length=200)


@router.post(PATH, status_code=204)
def open_session(body: Exchange, request: Request, response: Response) -> None:
    settings = state_of(request).settings
    operator = settings.local_operator
    if operator is None or not settings.local:
        raise ApiError(
            403,
            "local_operator_refused",
            "this server serves no local operator (start it with --local-operator on a "
            "loopback address); sign in with a token",
        )
    if not operator.matches(body.secret):
        raise ApiError(
            401,
            "unauthorized",
            "not this server's local-operator secret: it changes at every start; open the URL "
            "`openseal serve` printed this time",
        )
    refuse_unless_local(request, settings.trusted_proxies, by_cookie=True)
    response.set_cookie(
        cookie_name(server_port(request)),
        operator.secret,
        httponly=True,
        samesite="strict",
        path="/",
    )


@router.delete(PATH, status_code=204)
def end_session(request: Request, response: Response) -> None:
    response.delete_cookie(
        cookie_name(server_port(request)), httponly=True, samesite="strict", path="/"
    )
