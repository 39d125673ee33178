"""TF1-style programs: `TPUEstimator.train` against a hand-written TF2 loop and the original.

Three workloads, written as TF1 programs write them (`tf.compat.v1.get_variable`, `tf.nn`
ops, a v1 optimizer):

  compute  the seeds' MNIST CNN (`_tf1_cnn.py`: conv/max_pool/matmul, v1 Adam), in-memory
           data `.repeat().batch().prefetch()`: the step's compute dominates
  wide     the same CNN with a dense layer of 8000 units (`--dense_units`): 25 M parameters,
           v1 Adam; run it with `--processes` to read each side's peak RSS
  input    64 JPEGs of 256x256 decoded, randomly cropped to 224, flipped and resized to 128
           in `map(num_parallel_calls=AUTOTUNE)`, `batch`, `prefetch(AUTOTUNE)`, and a tiny
           linear model (v1 SGD): the input pipeline dominates

Sides, timed in one process, interleaved (ABBA...), each repetition one `train(steps=--steps)`
call (ours) or the same number of steps in `iterations_per_loop` device loops (baseline):

  ours       TPUEstimator: 1 replica with use_tpu=False (one device); N replicas with
             use_tpu=True on a MirroredStrategy over N logical CPU devices (the simulated TPU)
  baseline   a hand-written TF2 loop (train_throughput.BaselineSide: `tf.function` over
             `tf.range(n)` of `strategy.run`, GradientTape, the v1 optimizers' kernels)
  original   with `--original PYTHON` (a TF 2.15 + tensorflow-estimator venv): the same
             model_fn and input_fn on TF 2.15's TPUEstimator (use_tpu=False, graph mode), run
             as a subprocess after the in-process repetitions (1 replica only: the original
             runs one device with use_tpu=False); its own median is compared with the
             in-process baseline's, so read its column with the load averages printed

`--processes`: every side runs in fresh processes instead (one per repetition, alternating
ours, baseline, original...), each warmed up, then timed once with its CPU ms/ex and its own
peak RSS (`ru_maxrss`): issue 24's method, where the original is interleaved with the other
sides (not run after them) and no side inherits another's state or a refilled iterator.
`--alternate N`: each repetition is N cycles of `train(steps=--steps)` then
`evaluate(steps=--eval_steps)` (a checkpoint per train call, as train_and_evaluate
alternates), ours against the original only (1 replica).

Every repetition line carries the 1-minute load average: on a shared machine the numbers
move with other jobs' load, the interleaved ratios much less. Before each repetition the
process settles (`_common.settle`, untimed): the hand-written loop's iterator outlives its
repetition and refills its autotuned buffers in the background (measured: 0.3-1.2 CPU s,
growing from one repetition to the next); unsettled, that work was timed in ours'
repetition. The refilled buffers still give the hand-written loop a head start that a
`train()` call, which starts its input afresh as the original's did, does not get: read its
ratio with `--steps` large enough to make that small. With `--original` the hand-written
loop also runs on the original's TensorFlow (after the original): ours / original is ours /
hand-written times that TensorFlow-version ratio, which no code of ours can change. Each repetition also prints the CPU
time it used per example (this process's user + system): when other jobs take cores, ex/s
falls with them while CPU ms/ex shows what each side costs (the hand-written loop's refill
after its repetition is not in its number).

    /work/main/.venv/bin/python bench/tf1_program_throughput.py
        [--workload compute|input|wide] [--steps 200] [--iterations_per_loop 50]
        [--repeats 3] [--replicas 1,8] [--original /work/venv215/bin/python] [--processes]
        [--alternate N --eval_steps 10]

Exits 0 whatever the ratio: this is a measurement, not a test.
"""
import argparse
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
import _tf1_cnn  # noqa: E402  pylint: disable=wrong-import-position

JPEGS = 64
JPEG_SIZE = 256
CROP = 224
RESIZED = 128
BATCH = {"compute": 128, "wide": 128, "input": 32}
WIDE_UNITS = 8000  # 3136 x 8000 dense kernel: 25.2 M parameters in all


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=("compute", "input", "wide"), default="compute")
    parser.add_argument("--dense_units", type=int, default=None,
                        help=f"compute/wide: hidden dense units (default 1024 / {WIDE_UNITS})")
    parser.add_argument("--processes", action="store_true",
                        help="each side in fresh processes (own peak RSS)")
    parser.add_argument("--alternate", type=int, default=0,
                        help="cycles of train + evaluate per repetition (ours vs original)")
    parser.add_argument("--eval_steps", type=int, default=10)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch_size", type=int, default=None,
                        help="global batch (default 128 compute, 32 input)")
    parser.add_argument("--iterations_per_loop", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--replicas", default="1,8")
    parser.add_argument("--original", default=None,
                        help="python of a TF 2.15 + tensorflow-estimator venv (adds a column)")
    parser.add_argument("--side", choices=("all", "original", "ours", "baseline"),
                        default="all", help=argparse.SUPPRESS)  # a side's subprocess
    args = parser.parse_args(argv)
    args.batch_size = args.batch_size or BATCH[args.workload]
    args.replicas = [int(r) for r in args.replicas.split(",") if r]
    # train_throughput.BaselineSide's settings
    args.optimizer = "sgd" if args.workload == "input" else "adam"
    args.dense_units = args.dense_units or (
        WIDE_UNITS if args.workload == "wide" else _tf1_cnn.DENSE_UNITS)
    args.learning_rate = 0.01
    return args


def load():
    return os.getloadavg()[0]


# -- workloads (TensorFlow 2.15 and 2.21 alike) -----------------------------------------------
def make_data(tf, workload):
    import numpy as np  # noqa: PLC0415
    rng = np.random.default_rng(0)
    if workload != "input":
        import train_throughput  # noqa: PLC0415
        return train_throughput.synthetic_data(1024)
    images = rng.integers(0, 255, (JPEGS, JPEG_SIZE, JPEG_SIZE, 3), dtype=np.uint8)
    jpegs = [tf.io.encode_jpeg(image).numpy() for image in images]
    return np.array(jpegs, dtype=object), rng.integers(0, 10, JPEGS).astype(np.int32)


def make_dataset(tf, workload, data, batch_size):
    if workload != "input":
        return (tf.data.Dataset.from_tensor_slices(data).repeat()
                .batch(batch_size, drop_remainder=True).prefetch(4))

    def preprocess(jpeg, label):
        image = tf.io.decode_jpeg(jpeg, channels=3)
        image = tf.image.random_crop(image, [CROP, CROP, 3])
        image = tf.image.random_flip_left_right(image)
        return tf.image.resize(image, [RESIZED, RESIZED]) / 255.0, label

    return (tf.data.Dataset.from_tensor_slices(data).repeat()
            .map(preprocess, num_parallel_calls=tf.data.AUTOTUNE)
            .batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE))


def make_model_fn(tf, args, cross_shard_optimizer, spec_class):
    if args.workload != "input":
        return _tf1_cnn.make_model_fn(tf, cross_shard_optimizer, spec_class,
                                      dense_units=args.dense_units)
    v1 = tf.compat.v1

    def model_fn(features, labels, mode, params):
        net = tf.reshape(features, [-1, RESIZED * RESIZED * 3])
        weights = v1.get_variable("linear/kernel", [RESIZED * RESIZED * 3, 10],
                                  initializer=v1.zeros_initializer())
        bias = v1.get_variable("linear/bias", [10], initializer=v1.zeros_initializer())
        logits = tf.nn.bias_add(tf.matmul(net, weights), bias)
        loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
        optimizer = v1.train.GradientDescentOptimizer(0.01)
        if params.get("use_tpu"):
            optimizer = cross_shard_optimizer(optimizer)
        train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
        return spec_class(mode=mode, loss=loss, train_op=train_op)

    return model_fn


# -- the sides ----------------------------------------------------------------------------------
def checkpoint_settings(args):
    """RunConfig's checkpoint arguments: a checkpoint per train() call when alternating
    (evaluate restores it), none otherwise."""
    return {"save_checkpoints_steps": args.steps if args.alternate else None,
            "save_checkpoints_secs": None}


class EstimatorRuns:
    """Repetitions on a TPUEstimator, ours or the original (same API): one
    `train(steps=--steps)`, or with `--alternate N` N cycles of train + evaluate."""

    def __init__(self, estimator, input_fn, args):
        self._estimator, self._input_fn, self._args = estimator, input_fn, args

    def warm_up(self):
        self._estimator.train(self._input_fn, steps=self._args.iterations_per_loop)
        if self._args.alternate:
            self._estimator.evaluate(self._input_fn, steps=self._args.eval_steps)

    def run(self):
        for _ in range(max(self._args.alternate, 1)):
            self._estimator.train(self._input_fn, steps=self._args.steps)
            if self._args.alternate:
                self._estimator.evaluate(self._input_fn, steps=self._args.eval_steps)


def examples_per_run(args):
    steps = args.steps + (args.eval_steps if args.alternate else 0)
    return steps * args.batch_size * max(args.alternate, 1)


def ours_side(tf, args, data, strategy, model_dir):
    """TPUEstimator: use_tpu=False on one device, use_tpu=True on N replicas of `strategy`."""
    import tpu_estimator_compat as tec  # noqa: PLC0415
    replicas = strategy.num_replicas_in_sync
    config = tec.RunConfig(
        model_dir=model_dir, save_summary_steps=0, **checkpoint_settings(args),
        train_distribute=strategy if replicas > 1 else None,
        tpu_config=tec.TPUConfig(
            iterations_per_loop=args.iterations_per_loop,
            per_host_input_for_training=tec.InputPipelineConfig.PER_HOST_V2))
    estimator = tec.TPUEstimator(
        model_fn=make_model_fn(tf, args, tec.CrossShardOptimizer, tec.TPUEstimatorSpec),
        config=config, use_tpu=replicas > 1, train_batch_size=args.batch_size,
        eval_batch_size=args.batch_size)
    return EstimatorRuns(
        estimator, lambda params: make_dataset(tf, args.workload, data, params["batch_size"]),
        args)


def baseline_side(tf, args, data, strategy):
    import train_throughput  # noqa: PLC0415

    class Baseline(train_throughput.BaselineSide):
        def _make_dataset(self, data, batch_size):
            return make_dataset(tf, args.workload, data, batch_size)

        if args.workload == "input":
            def _create_variables(self):
                return [tf.Variable(tf.zeros([RESIZED * RESIZED * 3, 10])),
                        tf.Variable(tf.zeros([10]))]

            def _loss(self, images, labels):
                weights, bias = self._params
                net = tf.reshape(images, [-1, RESIZED * RESIZED * 3])
                logits = tf.nn.bias_add(tf.matmul(net, weights), bias)
                return tf.reduce_mean(
                    tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))

    return Baseline(tf, strategy, data, args)


def original_side(tf, args, data, model_dir):
    """TF 2.15's TPUEstimator (the original), use_tpu=False, graph mode."""
    tpu = tf.compat.v1.estimator.tpu
    config = tpu.RunConfig(
        model_dir=model_dir, save_summary_steps=0, **checkpoint_settings(args),
        tpu_config=tpu.TPUConfig(iterations_per_loop=args.iterations_per_loop))
    estimator = tpu.TPUEstimator(
        model_fn=make_model_fn(tf, args, tf.compat.v1.tpu.CrossShardOptimizer,
                               tpu.TPUEstimatorSpec),
        config=config, use_tpu=False, train_batch_size=args.batch_size,
        eval_batch_size=args.batch_size)
    return EstimatorRuns(
        estimator, lambda params: make_dataset(tf, args.workload, data, params["batch_size"]),
        args)


def run_side(args):
    """A side's subprocess (`--side`): warm-up, then `--repeats` settled repetitions; prints
    one JSON line: examples/sec and load average per repetition, and the peak RSS."""
    if args.side != "original":
        _common.use_repo_checkout()
        devices = _common.split_cpu(args.replicas[0])
    import tensorflow as tf  # noqa: PLC0415
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    data = make_data(tf, args.workload)
    with tempfile.TemporaryDirectory(prefix=f"tf1_program_{args.side}_") as model_dir:
        if args.side == "original":
            side = original_side(tf, args, data, model_dir)
        else:
            strategy = tf.distribute.MirroredStrategy(devices)
            side = (ours_side(tf, args, data, strategy, model_dir) if args.side == "ours"
                    else baseline_side(tf, args, data, strategy))
        side.warm_up()
        runs, loads, cpu_ms = [], [], []
        for _ in range(args.repeats):
            _common.settle()
            start, start_cpu = time.perf_counter(), _common.cpu_seconds()
            side.run()
            runs.append(examples_per_run(args) / (time.perf_counter() - start))
            cpu_ms.append(1000 * (_common.cpu_seconds() - start_cpu) / examples_per_run(args))
            loads.append(load())
    print(json.dumps({"runs": runs, "loads": loads, "cpu_ms": cpu_ms,
                      "peak_rss_mb": _common.peak_rss_mb()}))


def side_process(args, side, replicas, repeats, python=None):
    """Runs one side in a fresh process (with `python`, default the original's for the
    original, this one's otherwise); returns its result dict or None."""
    python = python or (args.original if side == "original" else sys.executable)
    command = [python, os.path.abspath(__file__), "--side", side,
               "--workload", args.workload, "--steps", str(args.steps),
               "--batch_size", str(args.batch_size), "--dense_units", str(args.dense_units),
               "--iterations_per_loop", str(args.iterations_per_loop),
               "--repeats", str(repeats), "--replicas", str(replicas),
               "--alternate", str(args.alternate), "--eval_steps", str(args.eval_steps)]
    env = dict(os.environ)
    if python == args.original:
        env = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode or not lines:
        print(f"  {side}: failed (exit {result.returncode}): {result.stderr[-1500:]}")
        return None
    return json.loads(lines[-1])


def original_columns(args):
    """The original's repetitions and the hand-written loop's on the original's TensorFlow,
    each in one subprocess after the in-process ones: ours / original is ours / hand-written
    (this package) times hand-written on TF 2.21 / on the original's TF (TensorFlow's own)."""
    return (side_process(args, "original", 1, args.repeats),
            None if args.alternate else side_process(args, "baseline", 1, args.repeats,
                                                     python=args.original))


# -- driver ---------------------------------------------------------------------------------------
def timed_rounds(sides, args, replicas):
    """Interleaved (ABBA...) settled repetitions of `sides` ({name: fn() -> result dict of
    one repetition}); returns {name: [result, ...]}."""
    results = {name: [] for name in sides}
    for round_index in range(args.repeats):
        for name in sides if round_index % 2 == 0 else reversed(list(sides)):
            result = sides[name]()
            if result is None:
                continue
            results[name].append(result)
            rss = f"; peak RSS {result['rss']:.0f} MB" if result.get("rss") else ""
            cpu = f"{result['cpu_ms']:.3f} CPU ms/ex, " if result.get("cpu_ms") else ""
            print(f"  [{replicas} replica(s)] {name:8s} {result['eps']:7.0f} ex/s  "
                  f"({cpu}load {result['load']:.1f}; settled {result['settled']:.2f} CPU s "
                  f"before{rss})", flush=True)
    return results


def in_process_sides(tf, args, data, strategy, model_dir):
    ours = ours_side(tf, args, data, strategy, model_dir)
    ours.warm_up()
    sides = {"ours": ours.run}
    if not args.alternate:
        baseline = baseline_side(tf, args, data, strategy)
        baseline.warm_up()
        sides["baseline"] = baseline.run

    def timed(run):
        def repetition():
            settled = _common.settle()
            start, start_cpu = time.perf_counter(), _common.cpu_seconds()
            run()
            elapsed, cpu = time.perf_counter() - start, _common.cpu_seconds() - start_cpu
            return {"eps": examples_per_run(args) / elapsed, "load": load(),
                    "settled": settled, "cpu_ms": 1000 * cpu / examples_per_run(args)}
        return repetition
    return {name: timed(run) for name, run in sides.items()}


def process_sides(args, replicas):
    names = ["ours"] + ([] if args.alternate else ["baseline"])
    if args.original and replicas == 1:
        names.append("original")

    def timed(name):
        def repetition():
            result = side_process(args, name, replicas, repeats=1)
            return result and {"eps": result["runs"][0], "load": result["loads"][0],
                               "cpu_ms": result["cpu_ms"][0], "settled": 0.0,
                               "rss": result["peak_rss_mb"]}
        return repetition
    return {name: timed(name) for name in names}


def bench_configuration(tf, args, data, strategy):
    replicas = strategy.num_replicas_in_sync
    with tempfile.TemporaryDirectory(prefix="tf1_program_") as model_dir:
        sides = (process_sides(args, replicas) if args.processes
                 else in_process_sides(tf, args, data, strategy, model_dir))
        results = timed_rounds(sides, args, replicas)
    summary = {"replicas": replicas}
    for name, runs in results.items():
        if runs:
            summary[name] = statistics.median(r["eps"] for r in runs)
            summary[name + "_rss"] = max((r.get("rss") or 0) for r in runs) or None
    if args.original and replicas == 1 and not args.processes:
        for name, result in zip(("original", "baseline_on_original_tf"),
                                original_columns(args)):
            if result:
                summary[name] = statistics.median(result["runs"])
                summary[name + "_rss"] = result["peak_rss_mb"]
                print(f"  [1 replica(s)] {name} " + " ".join(
                    f"{eps:.0f} ex/s ({cpu:.3f} CPU ms/ex, load {avg:.1f})" for eps, cpu, avg
                    in zip(result["runs"], result["cpu_ms"], result["loads"])), flush=True)
    return summary


def report(results, args):
    what = (f"{args.alternate} cycles of train({args.steps} steps) + "
            f"evaluate({args.eval_steps} steps)" if args.alternate
            else f"{args.steps} steps")
    title = {"compute": "compute-bound", "input": "input-bound",
             "wide": f"wide ({args.dense_units} dense units)"}[args.workload]
    print(f"\n{title} TF1 program, global batch {args.batch_size}, {what} per "
          f"repetition, iterations_per_loop {args.iterations_per_loop}, {args.repeats} "
          f"interleaved repetitions (median){' in fresh processes' if args.processes else ''};"
          f" load now {load():.1f}")

    def cell(r, name, ratio_to=None, rss=False):
        value = r.get(name + "_rss" if rss else name)
        if value is None:
            return "n/a"
        return f"{value:.0f}" if ratio_to is None else f"{r['ours'] / value:.3f}"

    rows = [[f"{r['replicas']} replica(s)", cell(r, "ours"), cell(r, "baseline"),
             cell(r, "baseline", ratio_to=True), cell(r, "original"),
             cell(r, "original", ratio_to=True), cell(r, "ours", rss=True),
             cell(r, "baseline", rss=True), cell(r, "original", rss=True)] for r in results]
    print(_common.format_table(
        ["configuration", "ours ex/s", "hand-written ex/s", "ours/hand-written",
         "original ex/s", "ours/original", "ours peak RSS MB", "hand-written peak RSS MB",
         "original peak RSS MB"], rows))
    for r in results:
        for name, label in (("baseline", "hand-written"), ("original", "original")):
            if r.get(name):
                ratio = r["ours"] / r[name]
                target = _common.TARGET_RATIO if name == "baseline" else 1.0
                print(f"{r['replicas']} replica(s): ratio ours/{label} = {ratio:.3f} "
                      f"(target >= {target}): {_common.verdict(ratio, target)}")
        if r.get("baseline") and r.get("baseline_on_original_tf"):
            print(f"{r['replicas']} replica(s): the hand-written loop on this TensorFlow / on "
                  f"the original's = {r['baseline'] / r['baseline_on_original_tf']:.3f} "
                  "(TensorFlow's own difference, no target)")


def main(argv=None):
    args = parse_args(argv)
    if args.side != "all":
        run_side(args)
        return 0
    _common.use_repo_checkout()
    devices = _common.split_cpu(max(args.replicas))
    import tensorflow as tf  # noqa: PLC0415
    from absl import logging  # noqa: PLC0415
    logging.set_verbosity(logging.WARNING)
    data = make_data(tf, args.workload)
    results = []
    for replicas in args.replicas:
        strategy = tf.distribute.MirroredStrategy(devices[:replicas])
        print(f"[{replicas} replica(s)] warming up and timing...", flush=True)
        results.append(bench_configuration(tf, args, data, strategy))
    report(results, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
