"""Source positions carried by every node from the loaders to the compiled IR."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, order=True)
class Span:
    """A range in one source file. Lines and columns are 1-based; ``end_column`` is exclusive."""

    file: str
    line: int
    column: int
    end_line: int
    end_column: int

    @classmethod
    def point(cls, file: str, line: int = 1, column: int = 1) -> Span:
        """A zero-width span, for diagnostics about a place rather than a range."""
        return cls(file, line, column, line, column)

    @classmethod
    def whole_file(cls, file: str) -> Span:
        return cls.point(file)

    def to_dict(self) -> dict[str, object]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
        }

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"
