"""TF1-style programs: `TPUEstimator.train` against a hand-written TF2 loop and the original.

Two workloads, both written as TF1 programs write them (`tf.compat.v1.get_variable`, `tf.nn`
ops, a v1 optimizer):

  compute  the seeds' MNIST CNN (`_tf1_cnn.py`: conv/max_pool/matmul, v1 Adam), in-memory
           data `.repeat().batch().prefetch()`: the step's compute dominates
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

Every repetition line carries the 1-minute load average: on a shared machine the numbers
move with other jobs' load, the interleaved ratios much less. Before each repetition the
process settles (`_common.settle`, untimed): the hand-written loop's iterator outlives its
repetition and refills its autotuned buffers in the background (measured: 0.3-1.2 CPU s,
growing from one repetition to the next); unsettled, that work was timed in ours'
repetition. The refilled buffers still give the hand-written loop a head start that a
`train()` call, which starts its input afresh as the original's did, does not get: read its
ratio with `--steps` large enough to make that small.

    /work/main/.venv/bin/python bench/tf1_program_throughput.py [--workload compute|input]
        [--steps 200] [--iterations_per_loop 50] [--repeats 3] [--replicas 1,8]
        [--original /work/venv215/bin/python]

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
BATCH = {"compute": 128, "input": 32}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=("compute", "input"), default="compute")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch_size", type=int, default=None,
                        help="global batch (default 128 compute, 32 input)")
    parser.add_argument("--iterations_per_loop", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--replicas", default="1,8")
    parser.add_argument("--original", default=None,
                        help="python of a TF 2.15 + tensorflow-estimator venv (adds a column)")
    parser.add_argument("--side", choices=("all", "original"), default="all",
                        help=argparse.SUPPRESS)  # the subprocess of --original
    args = parser.parse_args(argv)
    args.batch_size = args.batch_size or BATCH[args.workload]
    args.replicas = [int(r) for r in args.replicas.split(",") if r]
    # train_throughput.BaselineSide's settings
    args.optimizer = "adam" if args.workload == "compute" else "sgd"
    args.learning_rate = 0.01
    return args


def load():
    return os.getloadavg()[0]


# -- workloads (TensorFlow 2.15 and 2.21 alike) -----------------------------------------------
def make_data(tf, workload):
    import numpy as np  # noqa: PLC0415
    rng = np.random.default_rng(0)
    if workload == "compute":
        import train_throughput  # noqa: PLC0415
        return train_throughput.synthetic_data(1024)
    images = rng.integers(0, 255, (JPEGS, JPEG_SIZE, JPEG_SIZE, 3), dtype=np.uint8)
    jpegs = [tf.io.encode_jpeg(image).numpy() for image in images]
    return np.array(jpegs, dtype=object), rng.integers(0, 10, JPEGS).astype(np.int32)


def make_dataset(tf, workload, data, batch_size):
    if workload == "compute":
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


def make_model_fn(tf, workload, cross_shard_optimizer, spec_class):
    if workload == "compute":
        return _tf1_cnn.make_model_fn(tf, cross_shard_optimizer, spec_class)
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
class OursSide:
    def __init__(self, tf, args, data, strategy, model_dir):
        import tpu_estimator_compat as tec  # noqa: PLC0415
        replicas = strategy.num_replicas_in_sync
        config = tec.RunConfig(
            model_dir=model_dir, save_checkpoints_steps=None, save_checkpoints_secs=None,
            save_summary_steps=0, train_distribute=strategy if replicas > 1 else None,
            tpu_config=tec.TPUConfig(
                iterations_per_loop=args.iterations_per_loop,
                per_host_input_for_training=tec.InputPipelineConfig.PER_HOST_V2))
        self._estimator = tec.TPUEstimator(
            model_fn=make_model_fn(tf, args.workload, tec.CrossShardOptimizer,
                                   tec.TPUEstimatorSpec),
            config=config, use_tpu=replicas > 1, train_batch_size=args.batch_size)
        self._input_fn = lambda params: make_dataset(tf, args.workload, data,
                                                     params["batch_size"])
        self._args = args

    def warm_up(self):
        self._estimator.train(self._input_fn, steps=self._args.iterations_per_loop)

    def run(self):
        self._estimator.train(self._input_fn, steps=self._args.steps)


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


def run_original(args):
    """The subprocess of `--original`: TF 2.15's TPUEstimator, use_tpu=False; prints one
    JSON line of examples/sec per repetition and the load averages."""
    import tensorflow as tf  # noqa: PLC0415
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
    tpu = tf.compat.v1.estimator.tpu
    data = make_data(tf, args.workload)
    with tempfile.TemporaryDirectory(prefix="tf1_program_original_") as model_dir:
        config = tpu.RunConfig(
            model_dir=model_dir, save_checkpoints_steps=None, save_checkpoints_secs=None,
            save_summary_steps=0,
            tpu_config=tpu.TPUConfig(iterations_per_loop=args.iterations_per_loop))
        estimator = tpu.TPUEstimator(
            model_fn=make_model_fn(tf, args.workload, tf.compat.v1.tpu.CrossShardOptimizer,
                                   tpu.TPUEstimatorSpec),
            config=config, use_tpu=False, train_batch_size=args.batch_size)

        def input_fn(params):
            return make_dataset(tf, args.workload, data, params["batch_size"])

        estimator.train(input_fn, steps=args.iterations_per_loop)
        runs, loads = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            estimator.train(input_fn, steps=args.steps)
            runs.append(args.steps * args.batch_size / (time.perf_counter() - start))
            loads.append(load())
    print(json.dumps({"runs": runs, "loads": loads}))


def original_column(args):
    """Runs the original as a subprocess; returns its result dict or None."""
    command = [args.original, os.path.abspath(__file__), "--side", "original",
               "--workload", args.workload, "--steps", str(args.steps),
               "--batch_size", str(args.batch_size),
               "--iterations_per_loop", str(args.iterations_per_loop),
               "--repeats", str(args.repeats)]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode or not lines:
        print(f"  original: failed (exit {result.returncode}): {result.stderr[-1500:]}")
        return None
    return json.loads(lines[-1])


# -- driver ---------------------------------------------------------------------------------------
def bench_configuration(tf, args, data, strategy):
    replicas = strategy.num_replicas_in_sync
    with tempfile.TemporaryDirectory(prefix="tf1_program_") as model_dir:
        ours = OursSide(tf, args, data, strategy, model_dir)
        ours.warm_up()
        baseline = baseline_side(tf, args, data, strategy)
        baseline.warm_up()
        sides = {"ours": ours.run, "baseline": baseline.run}
        runs = {name: [] for name in sides}
        for round_index in range(args.repeats):
            for name in sides if round_index % 2 == 0 else reversed(list(sides)):
                background_cpu = _common.settle()
                start = time.perf_counter()
                sides[name]()
                eps = args.steps * args.batch_size / (time.perf_counter() - start)
                runs[name].append(eps)
                print(f"  [{replicas} replica(s)] {name:8s} {eps:7.0f} ex/s  "
                      f"(load {load():.1f}; settled {background_cpu:.2f} CPU s before)",
                      flush=True)
    result = {"replicas": replicas, "runs": runs,
              **{name: statistics.median(values) for name, values in runs.items()}}
    if args.original and replicas == 1:
        original = original_column(args)
        if original:
            result["original"] = statistics.median(original["runs"])
            print(f"  [1 replica(s)] original " + " ".join(
                f"{eps:.0f} ex/s (load {avg:.1f})"
                for eps, avg in zip(original["runs"], original["loads"])), flush=True)
    return result


def report(results, args):
    print(f"\n{args.workload}-bound TF1 program, global batch {args.batch_size}, {args.steps} "
          f"steps per repetition, iterations_per_loop {args.iterations_per_loop}, "
          f"{args.repeats} interleaved repetitions (median); load now {load():.1f}")
    rows = []
    for r in results:
        original = r.get("original")
        rows.append([f"{r['replicas']} replica(s)", f"{r['ours']:.0f}", f"{r['baseline']:.0f}",
                     f"{r['ours'] / r['baseline']:.3f}",
                     "n/a" if original is None else f"{original:.0f}",
                     "n/a" if original is None else f"{r['ours'] / original:.3f}"])
    print(_common.format_table(["configuration", "ours ex/s", "hand-written ex/s",
                                "ours/hand-written", "original ex/s", "ours/original"], rows))
    for r in results:
        ratio = r["ours"] / r["baseline"]
        print(f"{r['replicas']} replica(s): ratio ours/hand-written = {ratio:.3f} "
              f"(target >= {_common.TARGET_RATIO}): {_common.verdict(ratio)}")


def main(argv=None):
    args = parse_args(argv)
    if args.side == "original":
        run_original(args)
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
