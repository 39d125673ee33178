"""Smoke tests: the benches (`bench/train_throughput.py`, `exit_latency.py`, `warm_up.py`,
`tf1_program_throughput.py`, `xla.py`, `first_step.py`) still run end to end and print
their result lines.

Each runs in a subprocess (it splits the CPU into logical devices at start-up, which this
test process has already done) with the smallest flags: it checks that the script works, not
what it measures.
"""
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # each test runs a benchmark in its own process

_BENCH_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")


def _run_bench(script, args, timeout):
    """Runs `bench/<script> <args>` in a fresh process and returns its stdout, once it exited
    0. Without TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES: each bench splits the CPU itself or
    sets it per child process."""
    env = {key: value for key, value in os.environ.items()
           if key != "TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES"}
    result = subprocess.run(
        [sys.executable, os.path.join(_BENCH_DIR, script), *args],
        capture_output=True, text=True, timeout=timeout, check=False,
        env={**env, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_train_throughput_bench_prints_a_ratio_line():
    stdout = _run_bench("train_throughput.py", [
        "--steps", "4", "--iterations_per_loop", "2", "--repeats", "1", "--replicas", "1",
        "--batch_size", "8"], timeout=180)
    assert re.search(r"^1 replica\(s\): ratio ours/baseline = \d+\.\d+ \(target >= 0\.95\): "
                     r"(PASS|BELOW TARGET)$", stdout, re.MULTILINE), stdout


def test_exit_latency_bench_prints_its_verdict_line():
    stdout = _run_bench("exit_latency.py", ["--cores", "1", "--repeats", "1"], timeout=300)
    assert re.search(r"^1 core\(s\): max exit \d+\.\d+ s \(target < 5 s\): (PASS|ABOVE TARGET)$",
                     stdout, re.MULTILINE), stdout


def test_warm_up_bench_prints_its_ratio_line():
    stdout = _run_bench("warm_up.py", ["--replicas", "1", "--repeats", "1", "--batch_size", "8"],
                        timeout=300)
    assert re.search(r"^1 replica\(s\): warm-up ratio ours/baseline = \d+\.\d+$",
                     stdout, re.MULTILINE), stdout


@pytest.mark.parametrize("mode", [[], ["--processes"]], ids=["in-process", "processes"])
def test_tf1_program_throughput_bench_prints_a_ratio_line(mode):
    stdout = _run_bench("tf1_program_throughput.py", [
        "--workload", "input", "--steps", "2", "--iterations_per_loop", "1", "--repeats", "1",
        "--replicas", "1", "--batch_size", "4", *mode], timeout=300)
    for side in ("ours", "baseline"):  # every repetition line shows its CPU cost
        assert re.search(rf"^  \[1 replica\(s\)\] {side} +\d+ ex/s  \(\d+\.\d+ CPU ms/ex, ",
                         stdout, re.MULTILINE), stdout
    assert re.search(r"^1 replica\(s\): ratio ours/hand-written = \d+\.\d+ \(target >= 0\.95\): "
                     r"(PASS|BELOW TARGET)$", stdout, re.MULTILINE), stdout


def test_xla_bench_prints_its_ratio_lines():
    stdout = _run_bench("xla.py", ["--cores", "2", "--steps", "2", "--iterations_per_loop", "2",
                                   "--repeats", "1", "--batch_size", "4"], timeout=600)
    for label in ("ours: XLA / no XLA", "baseline: jit / no jit", "with XLA: ours / baseline",
                  "without XLA: ours / baseline"):
        assert re.search(rf"^{re.escape(label)}: first loop \d+\.\d+x, step throughput "
                         r"\d+\.\d+$", stdout, re.MULTILINE), stdout


_ORIGINAL = "/work/orig/bin/python"  # TF 2.15 + tensorflow-estimator (the original)


@pytest.mark.skipif(not os.path.exists(_ORIGINAL), reason="needs the original's venv")
def test_first_step_bench_prints_its_table_and_sweep():
    stdout = _run_bench("first_step.py", [
        "--models", "bert2,bert4", "--repeats", "1", "--steps", "1", "--cores", "0",
        "--original", _ORIGINAL], timeout=600)
    assert re.search(r"^bert4 +\d+\.\d+ +\d+\.\d+ +\d+\.\d+x ", stdout,
                     re.MULTILINE), stdout
    assert re.search(r"^4 layers .*CPU \+-?\d+\.\d+/layer\)", stdout,
                     re.MULTILINE), stdout
