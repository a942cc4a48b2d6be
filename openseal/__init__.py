"""openseal: definitions in HCL or YAML, compiled to versioned state-machine graphs, run durably."""

from __future__ import annotations

__version__ = "0.1.0"

#: where openseal's source lives, and where its documentation (``docs/`` of the source tree) is
#: published: pyproject.toml's ``[project.urls]`` declares the same two (a test holds them
#: equal), here as constants so reading them costs nothing at start-up
REPOSITORY_URL = "https://github.com/openseal/openseal"
DOCS_URL = f"{REPOSITORY_URL}/blob/main/docs"

__all__ = ["DOCS_URL", "REPOSITORY_URL", "__version__"]
