"""Benchmarks import their workload definitions from this directory and keep each benchmark short (the whole
suite runs in a few minutes)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))


def pytest_collection_modifyitems(config, items):
    # pytest-benchmark's defaults keep each benchmark for a second or more; a few hundred ms gives stable medians
    for item in items:
        if "benchmark" in getattr(item, "fixturenames", ()):
            item.add_marker("benchmark")


def pytest_configure(config):
    if config.getoption("benchmark_max_time", None) == 1.0:
        config.option.benchmark_max_time = 0.3
    if config.getoption("benchmark_min_rounds", None) == 5:
        config.option.benchmark_min_rounds = 5
