"""``ilplayer solvers``: the registered backends, their distributions, licences and capabilities."""

from __future__ import annotations

import importlib.metadata

__all__ = ["print_table", "solvers_table"]


def _distribution_version(name: str | None) -> str:
    if not name:
        return "-"
    try:
        return f"{name} {importlib.metadata.version(name)}"
    except importlib.metadata.PackageNotFoundError:
        return f"{name} (not installed)"


def solvers_table() -> list[list[str]]:
    """Rows of ``ilplayer solvers``: name, distribution, available, licence, capabilities."""
    from ilplayer.solvers.registry import registered_specs

    rows = [["name", "distribution", "available", "licence", "capabilities"]]
    for name, spec in sorted(registered_specs().items()):
        available = spec.is_available()
        licence, capabilities = "-", "-"
        if available:
            cls = spec.load()
            try:
                licence = cls.license_status().value
            except Exception as exc:  # report, never crash the listing
                licence = f"error: {exc}"
            capabilities = ", ".join(sorted(cap.value for cap in cls.capabilities)) or "-"
        elif spec.missing_requirements():
            licence = f"missing {', '.join(spec.missing_requirements())}"
        names = [name]
        if available and spec.suffix_option:  # a family: its usable members
            names = [f"{name}:{member}" for member in cls.family_members()] or [f"{name}:NAME"]
        rows.extend(
            [
                shown,
                _distribution_version(spec.distribution),
                "yes" if available else "no",
                licence,
                capabilities,
            ]
            for shown in names
        )
    return rows


def print_table(rows: list[list[str]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for index, row in enumerate(rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
        if index == 0:
            print("  ".join("-" * width for width in widths))
