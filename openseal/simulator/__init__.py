"""Local stand-ins for the external services the examples talk to (real HTTP, loopback only)."""

from __future__ import annotations

from openseal.simulator.background import SimulatorError
from openseal.simulator.model import ModelSimulator, load_answers
from openseal.simulator.procurement import (
    CATALOGUE,
    VENDORS,
    FaultSettings,
    ProcurementSimulator,
)

__all__ = [
    "CATALOGUE",
    "VENDORS",
    "FaultSettings",
    "ModelSimulator",
    "ProcurementSimulator",
    "SimulatorError",
    "load_answers",
]
