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

_BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench",
                      "train_throughput.py")


def test_train_throughput_bench_prints_a_ratio_line():
    env = {key: value for key, value in os.environ.items()
           if key != "TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES"}  # the bench splits the CPU
    result = subprocess.run(
        [sys.executable, _BENCH, "--steps", "4", "--iterations_per_loop", "2", "--repeats", "1",
         "--replicas", "1", "--batch_size", "8"],
        capture_output=True, text=True, timeout=180, check=False,
        env={**env, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert re.search(r"^1 replica\(s\): ratio ours/baseline = \d+\.\d+ \(target >= 0\.95\): "
                     r"(PASS|BELOW TARGET)$", result.stdout, re.MULTILINE), result.stdout


def test_exit_latency_bench_prints_its_verdict_line():
    bench = os.path.join(os.path.dirname(_BENCH), "exit_latency.py")
    env = {key: value for key, value in os.environ.items()
           if key != "TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES"}  # set per child by the bench
    result = subprocess.run(
        [sys.executable, bench, "--cores", "1", "--repeats", "1"],
        capture_output=True, text=True, timeout=300, check=False,
        env={**env, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert re.search(r"^1 core\(s\): max exit \d+\.\d+ s \(target < 5 s\): (PASS|ABOVE TARGET)$",
                     result.stdout, re.MULTILINE), result.stdout


def test_warm_up_bench_prints_its_ratio_line():
    bench = os.path.join(os.path.dirname(_BENCH), "warm_up.py")
    env = {key: value for key, value in os.environ.items()
           if key != "TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES"}  # the bench splits the CPU
    result = subprocess.run(
        [sys.executable, bench, "--replicas", "1", "--repeats", "1", "--batch_size", "8"],
        capture_output=True, text=True, timeout=300, check=False,
        env={**env, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert re.search(r"^1 replica\(s\): warm-up ratio ours/baseline = \d+\.\d+$",
                     result.stdout, re.MULTILINE), result.stdout


@pytest.mark.parametrize("mode", [[], ["--processes"]], ids=["in-process", "processes"])
def test_tf1_program_throughput_bench_prints_a_ratio_line(mode):
    bench = os.path.join(os.path.dirname(_BENCH), "tf1_program_throughput.py")
    env = {key: value for key, value in os.environ.items()
           if key != "TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES"}  # the bench splits the CPU
    result = subprocess.run(
        [sys.executable, bench, "--workload", "input", "--steps", "2",
         "--iterations_per_loop", "1", "--repeats", "1", "--replicas", "1", "--batch_size", "4",
         *mode],
        capture_output=True, text=True, timeout=300, check=False,
        env={**env, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    for side in ("ours", "baseline"):  # every repetition line shows its CPU cost
        assert re.search(rf"^  \[1 replica\(s\)\] {side} +\d+ ex/s  \(\d+\.\d+ CPU ms/ex, ",
                         result.stdout, re.MULTILINE), result.stdout
    assert re.search(r"^1 replica\(s\): ratio ours/hand-written = \d+\.\d+ \(target >= 0\.95\): "
                     r"(PASS|BELOW TARGET)$", result.stdout, re.MULTILINE), result.stdout


def test_xla_bench_prints_its_ratio_lines():
    bench = os.path.join(os.path.dirname(_BENCH), "xla.py")
    env = {key: value for key, value in os.environ.items()
           if key != "TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES"}  # the bench sets it
    result = subprocess.run(
        [sys.executable, bench, "--cores", "2", "--steps", "2", "--iterations_per_loop", "2",
         "--repeats", "1", "--batch_size", "4"],
        capture_output=True, text=True, timeout=600, check=False,
        env={**env, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    for label in ("ours: XLA / no XLA", "baseline: jit / no jit", "with XLA: ours / baseline",
                  "without XLA: ours / baseline"):
        assert re.search(rf"^{re.escape(label)}: first loop \d+\.\d+x, step throughput "
                         r"\d+\.\d+$", result.stdout, re.MULTILINE), result.stdout


_ORIGINAL = "/work/orig/bin/python"  # TF 2.15 + tensorflow-estimator (the original)


@pytest.mark.skipif(not os.path.exists(_ORIGINAL), reason="needs the original's venv")
def test_first_step_bench_prints_its_table_and_sweep():
    bench = os.path.join(os.path.dirname(_BENCH), "first_step.py")
    env = {key: value for key, value in os.environ.items()
           if key != "TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES"}  # set per child by the bench
    result = subprocess.run(
        [sys.executable, bench, "--models", "bert2,bert4", "--repeats", "1", "--steps", "1",
         "--cores", "0", "--original", _ORIGINAL],
        capture_output=True, text=True, timeout=600, check=False,
        env={**env, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert re.search(r"^bert4 +\d+\.\d+ +\d+\.\d+ +\d+\.\d+x ", result.stdout,
                     re.MULTILINE), result.stdout
    assert re.search(r"^4 layers .*CPU \+-?\d+\.\d+/layer\)", result.stdout,
                     re.MULTILINE), result.stdout
