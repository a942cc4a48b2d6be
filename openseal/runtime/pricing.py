"""What model calls cost, by the prices a model profile declares.

A profile's ``price`` gives the currency and the price of a million input and of a million
output tokens. A price per million tokens is a price per token in millionths of the
currency, so a call costs ``input_tokens × input_per_million + output_tokens ×
output_per_million`` millionths, rounded to a whole millionth. Costs are counted in the
run's ``budget_used`` under ``model_cost_micros.<CURRENCY>`` — whole numbers, so adding
thousands of calls loses nothing — together with the tokens, by the same three steps
(reserve, settle, release): a failed call that may have been billed, and a call whose
outcome a crash left unknown, are counted at their estimated tokens like the tokens are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: ``budget_used`` keys of model costs start with this, then the currency
COST_KEY = "model_cost_micros."
_MICROS = 1_000_000


@dataclass(frozen=True)
class Price:
    currency: str
    input_per_million: float
    output_per_million: float

    @classmethod
    def of(cls, profile: Mapping[str, Any]) -> Price | None:
        """The price a compiled model profile declares, or None."""
        price = profile.get("price")
        if not isinstance(price, Mapping):
            return None
        return cls(
            str(price.get("currency") or "USD"),
            float(price.get("input_per_million") or 0),
            float(price.get("output_per_million") or 0),
        )

    def cost(self, input_tokens: int, output_tokens: int) -> dict[str, int]:
        """The ``budget_used`` counter of a call with these token counts (none when free)."""
        micros = round(
            input_tokens * self.input_per_million + output_tokens * self.output_per_million
        )
        return {COST_KEY + self.currency: micros} if micros else {}


def model_cost(budget_used: Mapping[str, Any]) -> dict[str, float]:
    """What a run's model calls cost so far, by currency (from its ``budget_used``)."""
    return {
        key.removeprefix(COST_KEY): int(value) / _MICROS
        for key, value in sorted(budget_used.items())
        if key.startswith(COST_KEY) and isinstance(value, int)
    }


def format_cost(costs: Mapping[str, float]) -> str:
    """``0.004125 USD`` (several currencies joined with ``+``)."""
    return " + ".join(f"{amount:.6f} {currency}" for currency, amount in costs.items())
