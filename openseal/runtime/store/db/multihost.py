"""PostgreSQL URLs naming several servers, as libpq writes them.

libpq takes a list of servers in one URL (``postgresql://u@db1:5432,db2:5432/db``) and,
with ``target_session_attrs=read-write``, connects to the first that accepts writes: after a
failover every new connection finds the new primary by itself. SQLAlchemy's URL has one host
and one port, and spells the list as repeated ``host`` query parameters instead
(``postgresql+psycopg://u@/db?host=db1:5432&host=db2:5432``), which psycopg receives as
libpq's list. :func:`hosts_as_query` turns the first spelling into the second, so either may
be given in ``OPENSEAL_DATABASE_URL``.
"""

from __future__ import annotations


def hosts_as_query(url: str) -> str:
    """``url`` with a comma-separated list of ``host[:port]`` in its authority moved into
    ``host`` query parameters; any other URL unchanged.

    >>> hosts_as_query("postgresql+psycopg://u@db1:5432,db2:5433/app?target_session_attrs=read-write")
    'postgresql+psycopg://u@/app?target_session_attrs=read-write&host=db1:5432&host=db2:5433'
    """
    scheme, separator, rest = url.partition("://")
    if not separator:
        return url
    before_query, has_query, query = rest.partition("?")
    at = before_query.rfind("@")
    userinfo, located = before_query[: at + 1], before_query[at + 1 :]
    hosts, _, database = located.partition("/")
    if "," not in hosts:
        return url
    listed = "&".join(f"host={host}" for host in hosts.split(","))
    query = f"{query}&{listed}" if has_query and query else listed
    return f"{scheme}://{userinfo}/{database}?{query}"
