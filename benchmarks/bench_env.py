"""Environment throughput against OpenSpiel's gin_rummy (not a test): ``treppen bench`` as a script.

Usage: ``python benchmarks/bench_env.py [--seconds 5] [--rounds 10] [--players 2 4] [--out PATH]``;
see :mod:`treppen.apps.bench` for what is measured.
"""

import argparse
import sys

from treppen.apps import bench

if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="bench_env", description=bench.__doc__.splitlines()[0])
    bench.add_arguments(parser)
    sys.exit(bench.run(parser.parse_args()))
