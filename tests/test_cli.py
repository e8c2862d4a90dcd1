"""The command line: ``ilplayer solvers`` and ``ilplayer demo``."""

from __future__ import annotations

import subprocess
import sys

from ilplayer.cli import main


def test_python_dash_m_ilplayer_solvers_prints_the_backend_table():
    out = subprocess.run([sys.executable, "-m", "ilplayer", "solvers"], capture_output=True,
                         text=True, check=True, timeout=120)
    header, rule, *rows = out.stdout.strip().splitlines()
    assert header.split() == ["name", "distribution", "available", "licence", "capabilities"]
    assert set(rule) <= {"-", " "}
    bruteforce = next(row for row in rows if row.startswith("bruteforce"))
    assert bruteforce.split()[1:] == ["ilplayer", "0.1.0", "yes", "not", "required", "device-tensors"]


def test_demo_learns_reports_accuracy_beside_the_baseline_and_plots(capsys, tmp_path):
    plot = tmp_path / "demo.png"
    assert main(["demo", "--n", "8", "--epochs", "3", "--lr", "5e-3", "--plot", str(plot)]) == 0
    out = capsys.readouterr()
    assert "held-out exact-match accuracy: CombOptNet" in out.out and "box-constrained baseline" in out.out
    assert "3/3" in out.err  # the progress bar
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 10_000
