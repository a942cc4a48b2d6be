"""What this process lacks to call a skill, found without calling it.

A definition names a credential, ``config.*`` values and a python entry point; the process
that calls the skill must have them: the runtime context maps the credential, holds the
configuration, and the entry point's module is importable. When one is gone (the context
file edited, a variable unset, a module not installed), calling the skill cannot succeed and
cannot be blamed on the destination: the caller holds the call back and says why, instead of
recording a failure of the skill (``openseal.runtime`` makes such a run wait in
``needs_attention``, docs/runtime.md).

>>> call = SkillCall("order", skill, {"total": 5}, 10.0, credentials=resolver)  # doctest: +SKIP
>>> missing(call)                                                          # doctest: +SKIP
'credential `procurement_api`: environment variable PROCUREMENT_TOKEN is not set'
"""

from __future__ import annotations

import importlib.util
import time

from openseal.compiler import expr
from openseal.skills.base import SkillCall
from openseal.skills.credentials import CredentialError, resolve_credential


def missing(call: SkillCall) -> str | None:
    """What is missing to make ``call`` here, in one line (never a credential's value), or
    None when nothing is: the credential (resolved, and its value dropped at once), every
    ``config.*`` value its HTTP templates use, the module of its python entry point."""
    return _credential(call) or _config(call) or _entry_point(call)


def _credential(call: SkillCall) -> str | None:
    reference = call.spec.credential
    if reference is None:
        return None
    try:
        if call.credentials is not None:
            call.credentials.resolve(reference)
        else:
            resolve_credential(reference, call.config)
    except CredentialError as exc:
        return exc.message
    return None


def _config(call: SkillCall) -> str | None:
    http = call.spec.adapter.http
    if http is None:
        return None
    templates = [http.url, *http.headers.values()]
    if http.body is not None:
        templates.append(http.body)
    wanted = {
        str(ref.path[0])
        for template in templates
        for ref in expr.references(template)
        if ref.root == "config" and ref.path
    }
    absent = sorted(name for name in wanted if name not in call.config)
    if not absent:
        return None
    names = ", ".join(f"`config.{name}`" for name in absent)
    return f"skill `{call.skill}` uses {names}, which the runtime context does not set"


#: seconds a module found importable is taken as still there: looking it up walks the import
#: path (file system calls and a spec object, about 50 µs) on every action, while a module
#: uninstalled under a running worker is rare, and is noticed at most this long later
FOUND_FOR_SECONDS = 1.0
#: module name → when it was last found importable (``time.monotonic``)
_found: dict[str, float] = {}


def _entry_point(call: SkillCall) -> str | None:
    python = call.spec.adapter.python
    if python is None:
        return None
    module = python.entry_point.partition(":")[0]
    now = time.monotonic()
    found_at = _found.get(module)
    if found_at is not None and now - found_at < FOUND_FOR_SECONDS:
        return None
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError) as exc:  # a parent package that is not there
        return f"skill `{call.skill}`: module `{module}` cannot be found ({exc})"
    if found is None:
        return f"skill `{call.skill}`: module `{module}` of `{python.entry_point}` is not installed"
    _found[module] = now
    return None
