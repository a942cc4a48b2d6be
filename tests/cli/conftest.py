"""The CLI tests' fixtures, from :mod:`tests.cli.support`."""

from tests.cli.support import cli, store  # noqa: F401  (fixtures)
from tests.runtime.conftest import backend, pg_admin  # noqa: F401  (fixtures)
