"""MPS and LP files, read by HiGHS (``highspy``): the formats every modelling tool writes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ilplayer.core.silence import quiet_stdout
from ilplayer.errors import UnreadableModelError
from ilplayer.readers.mps import check_mps
from ilplayer.readers.rows import program_fields

__all__ = ["FORMATS", "read_file"]

FORMATS = (".mps", ".lp", ".mps.gz", ".lp.gz")


def read_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The fields of a ``Program`` from an MPS or LP file (also gzipped)."""
    path = Path(path)
    if not any(path.name.lower().endswith(suffix) for suffix in FORMATS):
        raise UnreadableModelError(
            f"path: {str(path)!r} is not a model file ilplayer reads; the formats are "
            f"{', '.join(FORMATS)} (HiGHS's reader)"
        )
    if not path.is_file():
        raise FileNotFoundError(f"path: no file at {str(path)!r}")
    if ".mps" in path.name.lower():
        check_mps(path)
    try:
        import highspy
    except ImportError as error:
        raise ImportError(
            "Program.from_file reads through HiGHS: pip install 'ilplayer[files]' (highspy>=1.16)"
        ) from error
    with quiet_stdout():
        highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    if highs.readModel(str(path)) != highspy.HighsStatus.kOk:
        raise UnreadableModelError(f"path: HiGHS could not read {str(path)!r} as {_format(path)}")
    if highs.getModel().hessian_.dim_ > 0:
        raise UnreadableModelError(
            f"path: {str(path)!r} has a quadratic objective; ilplayer solves linear ones"
        )
    lp = highs.getLp()
    n = lp.num_col_
    names = list(lp.col_names_) if len(lp.col_names_) == n and n else None
    kinds = np.array([int(kind) for kind in lp.integrality_] or [0] * n, dtype=np.int64)
    odd = np.flatnonzero(kinds > 1)  # 2: semi-continuous, 3: semi-integer
    if odd.size:
        j = int(odd[0])
        raise UnreadableModelError(
            f"path: variable {names[j] if names else j!r} of {str(path)!r} is "
            "semi-continuous or semi-integer, which a linear program cannot hold"
        )
    return program_fields(
        A=_matrix(lp.a_matrix_, lp.num_row_, n),
        lower=lp.row_lower_,
        upper=lp.row_upper_,
        lb=lp.col_lower_,
        ub=lp.col_upper_,
        integer=kinds == 1,
        c=lp.col_cost_,
        sense="max" if lp.sense_ == highspy.ObjSense.kMaximize else "min",
        names=names,
    )


def _format(path: Path) -> str:
    return "an LP file" if ".lp" in path.name.lower() else "an MPS file"


def _matrix(matrix: Any, m: int, n: int) -> Any:
    """HiGHS's constraint matrix (by columns or by rows) as a scipy CSR array."""
    import highspy
    import scipy.sparse as sparse

    parts = (
        np.asarray(matrix.value_, dtype=np.float64),
        np.asarray(matrix.index_, dtype=np.int64),
        np.asarray(matrix.start_, dtype=np.int64),
    )
    if matrix.format_ == highspy.MatrixFormat.kColwise:
        return sparse.csc_array(parts, shape=(m, n)).tocsr()
    return sparse.csr_array(parts, shape=(m, n))
