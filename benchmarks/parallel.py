"""Throughput of serial, thread, process and Ray execution for a batch of 256 instances
(binary m=4, dense m=4, set cover; n=16) with 2 workers. Same as ``ilplayer bench parallel``.

    python benchmarks/parallel.py [--solver highs] [--batch 256] [--workers 2] [--repeats 5]
"""

from __future__ import annotations

import sys

from ilplayer.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["bench", "parallel", *sys.argv[1:]]))
