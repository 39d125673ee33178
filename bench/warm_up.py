"""Warm-up: the first `TPUEstimator.train` call against a hand-written TF2 loop's first call.

Same model, data and strategy as `train_throughput.py` (its `EstimatorSide` and
`BaselineSide`), but each side runs in a FRESH process, so that neither inherits the other's
one-time costs (TensorFlow's kernel and oneDNN primitive caches, the first collective's set-up,
thread pools); the processes alternate ABBA... to share the machine's load. Each process
times, for one step per call:

  ours:      construction (estimator) | trace (the engine's step trace: model_fn on every
             replica, variable creation) | loop trace (the loop's tf.function: the pruned
             copy of the step) | first loop execution | the rest of the first train() call
             | a second train(steps=1) call (the steady-state cost of a call)
  baseline:  construction (variables, distributed iterator) | loop trace | first loop
             execution | a second 1-step loop call

warm-up = construction + first call; one-time = warm-up - the second call. The headline is
the ratio of the median warm-ups, ours / baseline. Ours' trace, loop trace and first loop
execution happen inside one `train()` call with no public mark between them: they are timed
by wrapping the engine (`_common.time_engine_phases`, as `first_step.py`).

    /tmp/venv/bin/python bench/warm_up.py [--replicas 8] [--repeats 2] [--batch_size 128]
        [--optimizer sgd|adam]

Exits 0 whatever it finds: this is a measurement, not a test.
"""
import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common  # noqa: E402  pylint: disable=wrong-import-position

_common.use_repo_checkout()

OURS_PHASES = ("construction", "trace", "loop_trace", "first_execution", "rest", "second_call")
BASELINE_PHASES = ("construction", "loop_trace", "first_execution", "second_call")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=2,
                        help="fresh processes per side (default 2)")
    parser.add_argument("--batch_size", type=int, default=128)
    parser.add_argument("--optimizer", choices=("sgd", "adam"), default="sgd")
    parser.add_argument("--side", choices=("ours", "baseline"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.replicas < 1 or args.repeats < 1 or args.batch_size % args.replicas:
        parser.error("--replicas and --repeats must be >= 1 and --batch_size divisible by "
                     f"--replicas; got {args.replicas}, {args.repeats}, {args.batch_size}")
    return args


def _sides_args(args):
    """train_throughput's arguments for one-step calls (a loop of one step)."""
    import train_throughput  # noqa: PLC0415
    return train_throughput, train_throughput.parse_args(
        ["--steps", "1", "--iterations_per_loop", "1", "--batch_size", str(args.batch_size),
         "--replicas", str(args.replicas), "--optimizer", args.optimizer])


def measure_ours(args):
    """One process's phases of ours' first train() call (seconds)."""
    bench, side_args = _sides_args(args)
    devices = _common.split_cpu(args.replicas)
    import tensorflow as tf  # noqa: PLC0415
    layers = importlib.import_module("tf_keras.api._v1.keras.__internal__.legacy.layers")
    engine_phases = _common.time_engine_phases()
    phases = {}
    strategy = tf.distribute.MirroredStrategy(devices)
    data = bench.synthetic_data(side_args.num_examples)
    with tempfile.TemporaryDirectory(prefix="warm_up_") as model_dir:
        start = time.perf_counter()
        ours = bench.EstimatorSide(tf, layers, strategy, data, side_args, model_dir)
        phases["construction"] = time.perf_counter() - start
        start = time.perf_counter()
        ours.warm_up()
        first_call = time.perf_counter() - start
        phases["trace"] = engine_phases["trace_train"]
        phases["loop_trace"] = engine_phases["loop_trace"]
        phases["first_execution"] = engine_phases["first_run"]
        phases["rest"] = first_call - phases["trace"] - phases["loop_trace"] - phases[
            "first_execution"]
        start = time.perf_counter()
        ours.warm_up()
        phases["second_call"] = time.perf_counter() - start
    return phases


def measure_baseline(args):
    """One process's phases of the baseline's first loop call (seconds)."""
    bench, side_args = _sides_args(args)
    devices = _common.split_cpu(args.replicas)
    import tensorflow as tf  # noqa: PLC0415
    strategy = tf.distribute.MirroredStrategy(devices)
    data = bench.synthetic_data(side_args.num_examples)
    phases = {}
    start = time.perf_counter()
    baseline = bench.BaselineSide(tf, strategy, data, side_args)
    phases["construction"] = time.perf_counter() - start
    iterator, one = baseline._iterator, tf.constant(1)  # pylint: disable=protected-access
    start = time.perf_counter()
    baseline._loop.get_concrete_function(iterator, one)  # pylint: disable=protected-access
    phases["loop_trace"] = time.perf_counter() - start
    start = time.perf_counter()
    baseline.warm_up()
    phases["first_execution"] = time.perf_counter() - start
    start = time.perf_counter()
    baseline.warm_up()
    phases["second_call"] = time.perf_counter() - start
    return phases


def run_side(side, args):
    """Runs one side in a fresh process; returns its phases."""
    command = [sys.executable, os.path.abspath(__file__), "--side", side,
               "--replicas", str(args.replicas), "--batch_size", str(args.batch_size),
               "--optimizer", args.optimizer]
    result = subprocess.run(command, check=False, capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"the {side} process failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def warm_up_seconds(phases):
    return sum(v for k, v in phases.items() if k != "second_call")


def report(runs, args):
    print(f"\nWarm-up (construction + first 1-step call), {args.replicas} replica(s), global "
          f"batch {args.batch_size}, optimizer {args.optimizer}, one fresh process per run, "
          f"{args.repeats} run(s) per side (median s)")
    rows = []
    for side, names in (("ours", OURS_PHASES), ("baseline", BASELINE_PHASES)):
        medians = {n: statistics.median(r[n] for r in runs[side]) for n in names}
        warm = statistics.median(warm_up_seconds(r) for r in runs[side])
        one_time = statistics.median(warm_up_seconds(r) - r["second_call"] for r in runs[side])
        rows.append([side] + [f"{medians[n]:.2f}" if n in medians else "-"
                              for n in OURS_PHASES] + [f"{warm:.2f}", f"{one_time:.2f}"])
    print(_common.format_table(["side"] + list(OURS_PHASES) + ["warm-up", "one-time"], rows))
    for side in runs:
        print(f"  {side} warm-up per run: "
              + " ".join(f"{warm_up_seconds(r):.1f}" for r in runs[side]))
    ratio = (statistics.median(warm_up_seconds(r) for r in runs["ours"])
             / statistics.median(warm_up_seconds(r) for r in runs["baseline"]))
    print(f"{args.replicas} replica(s): warm-up ratio ours/baseline = {ratio:.2f}")


def main(argv=None):
    args = parse_args(argv)
    if args.side:
        measure = measure_ours if args.side == "ours" else measure_baseline
        print(json.dumps(measure(args)), flush=True)
        os._exit(0)  # pylint: disable=protected-access  (skip the exit's garbage collection)
    runs = {"ours": [], "baseline": []}
    for index in range(args.repeats):
        for side in ("ours", "baseline") if index % 2 == 0 else ("baseline", "ours"):
            print(f"[{side} run {index + 1}]", flush=True)
            runs[side].append(run_side(side, args))
    report(runs, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
