"""A line-by-line check of an MPS file before HiGHS reads it.

HiGHS's reader is lenient: it reads a non-numeric coefficient as 0 and a malformed line as
something else, without a warning. This check names the first line that is not MPS (free or
fixed format), so a corrupt file is an error rather than a different program."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

from ilplayer.errors import UnreadableModelError

__all__ = ["check_mps"]

_SECTIONS = {
    "NAME",
    "OBJSENSE",
    "OBJSENS",
    "OBJNAME",
    "ROWS",
    "USERCUTS",
    "LAZYCONS",
    "COLUMNS",
    "RHS",
    "RANGES",
    "BOUNDS",
    "SOS",
    "QUADOBJ",
    "QMATRIX",
    "QSECTION",
    "QCMATRIX",
    "CSECTION",
    "INDICATORS",
    "ENDATA",
}
_ROW_TYPES = {"N", "E", "L", "G"}
_VALUE_BOUNDS = {"UP", "LO", "FX", "LI", "UI", "SC"}
_FREE_BOUNDS = {"FR", "MI", "PL", "BV"}
# Sections whose lines this check does not read (quadratic terms are refused after the read).
_UNCHECKED = {
    "SOS",
    "QUADOBJ",
    "QMATRIX",
    "QSECTION",
    "QCMATRIX",
    "CSECTION",
    "INDICATORS",
    "USERCUTS",
    "LAZYCONS",
}


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    with opener(path, "rt", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            yield number, line.rstrip("\r\n")


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _fixed(line: str) -> list[str]:
    """The fields of a fixed-format line (columns 2-3, 5-12, 15-22, 25-36, 40-47, 50-61),
    where names may hold spaces."""
    fields = [line[1:3], line[4:12], line[14:22], line[24:36], line[39:47], line[49:61]]
    fields = [field.strip() for field in fields]
    while fields and not fields[-1]:
        fields.pop()
    return fields[1:] if not fields[0] else fields


class _Reader:
    """What the lines declared so far: row names and column names."""

    def __init__(self) -> None:
        self.rows: set[str] = set()
        self.columns: set[str] = set()

    def problem(self, section: str, tokens: list[str]) -> str | None:
        """Why ``tokens`` is not a line of ``section``, or None."""
        if section == "ROWS":
            if len(tokens) != 2 or tokens[0].upper() not in _ROW_TYPES:
                return "a row is a type (N, E, L or G) and a name"
            self.rows.add(tokens[1])
            return None
        if section == "COLUMNS":
            return self._column(tokens)
        if section in ("RHS", "RANGES"):
            pairs = tokens[1:] if len(tokens) % 2 else tokens
            return (
                self._pairs(pairs, f"a {section} line is [set] row value [row value]")
                if pairs
                else f"a {section} line is [set] row value [row value]"
            )
        if section == "BOUNDS":
            return self._bound(tokens)
        return None

    def _pairs(self, pairs: list[str], shape: str) -> str | None:
        if len(pairs) not in (2, 4):
            return shape
        for name, value in zip(pairs[::2], pairs[1::2]):
            if name not in self.rows:
                return f"row {name!r} is not declared in ROWS"
            if not _is_number(value):
                return f"{value!r} is not a number"
        return None

    def _column(self, tokens: list[str]) -> str | None:
        if len(tokens) == 3 and tokens[1].strip("'\"").upper() == "MARKER":
            if tokens[2].strip("'\"").upper() not in ("INTORG", "INTEND"):
                return "a marker is 'INTORG' or 'INTEND'"
            return None
        if len(tokens) not in (3, 5):
            return "a column line is column row value [row value]"
        why = self._pairs(tokens[1:], "a column line is column row value [row value]")
        if (
            why is None
        ):  # declared only by a line that reads (the free and fixed readings are both tried)
            self.columns.add(tokens[0])
        return why

    def _bound(self, tokens: list[str]) -> str | None:
        kind = tokens[0].upper() if tokens else ""
        if kind in _FREE_BOUNDS:
            names = tokens[1:3] if len(tokens) == 4 else tokens[1:]
            if len(tokens) == 4 and not _is_number(tokens[3]):
                return f"{tokens[3]!r} is not a number"
        elif kind in _VALUE_BOUNDS:
            if len(tokens) not in (3, 4):
                return "a bound is type [set] column value"
            if not _is_number(tokens[-1]):
                return f"{tokens[-1]!r} is not a number"
            names = tokens[1:-1]
        else:
            return f"{tokens[0]!r} is not a bound type (UP, LO, FX, FR, MI, PL, BV, LI, UI, SC)"
        if not 1 <= len(names) <= 2 or names[-1] not in self.columns:
            return f"column {names[-1] if names else ''!r} is not declared in COLUMNS"
        return None


def check_mps(path: Path) -> None:
    """Raise `UnreadableModelError` naming the first line of ``path`` that is not MPS."""
    reader, section, ended = _Reader(), None, False
    for number, line in _lines(path):
        if not line.strip() or line.lstrip().startswith("*") or ended:
            continue
        if not line[0].isspace():
            word = line.split()[0].upper()
            if word not in _SECTIONS:
                raise UnreadableModelError(
                    f"path: line {number} of {str(path)!r} starts {word!r}, which is not an "
                    f"MPS section ({', '.join(sorted(_SECTIONS))})"
                )
            section, ended = word, word == "ENDATA"
            continue
        if section is None:
            raise UnreadableModelError(
                f"path: line {number} of {str(path)!r} comes before any MPS section"
            )
        if section in _UNCHECKED or section in ("NAME", "OBJSENSE", "OBJSENS", "OBJNAME"):
            continue
        why = reader.problem(section, line.split())
        if why is not None and reader.problem(section, _fixed(line)) is not None:
            raise UnreadableModelError(
                f"path: line {number} of {str(path)!r} is not MPS: {why} "
                f"(section {section}): {line.strip()!r}"
            )
    if section is None:
        raise UnreadableModelError(f"path: {str(path)!r} has no MPS section")
