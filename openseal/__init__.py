"""openseal: definitions in HCL or YAML, compiled to versioned state-machine graphs, run durably."""

from __future__ import annotations

__version__ = "0.1.0"

#: where openseal's source lives: the one place to set its address. Empty until the project
#: has a published home, so no guessed address is printed anywhere (SARIF rules then carry no
#: ``helpUri``, and pyproject.toml declares no ``[project.urls]``; a test holds the two equal)
REPOSITORY_URL = ""
#: where its documentation (``docs/`` of the source tree) is published, from the above
DOCS_URL = f"{REPOSITORY_URL}/blob/main/docs" if REPOSITORY_URL else ""

__all__ = ["DOCS_URL", "REPOSITORY_URL", "__version__"]
