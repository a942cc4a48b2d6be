"""openseal: definitions in HCL or YAML, compiled to versioned state-machine graphs, run durably."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
