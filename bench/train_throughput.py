"""Train throughput: `TPUEstimator.train` against a hand-written TF2 loop, same model and data.

The model is the MNIST CNN of the Cloud TPU guides (conv 5x5x32 relu + 2x2 max-pool, conv
5x5x64 relu + pool, dense 1024 relu, dropout 0.4, dense 10; softmax cross-entropy), trained

  ours:      through `TPUEstimator` with TPU semantics on a MirroredStrategy: a v1 model_fn
             (tf_keras legacy `tf.compat.v1.layers`, a v1 optimizer in CrossShardOptimizer),
             PER_HOST_V2 input, `iterations_per_loop` steps per execution, one
             `train(steps=--steps)` call per repetition; checkpoints and summaries off.
  baseline:  a hand-written, Keras-free TF2 loop on the same strategy: variables created once,
             a `tf.function` running `for _ in tf.range(n): strategy.run(step, ...)`, with
             `tf.GradientTape`, the loss scaled by 1/replicas and the gradients summed across
             replicas in a merge call (the mean), applied with the same training kernels as
             the v1 optimizers (ResourceApplyGradientDescent / ResourceApplyAdam), and the
             global step incremented, as v1 `Optimizer.apply_gradients` does.

Both read the same synthetic in-memory data (random 28x28x1 images, 10 classes) through the
same tf.data pipeline (.repeat().batch(per-replica batch, drop_remainder=True).prefetch();
the baseline distributes it with `distribute_datasets_from_function`; ours, on CPU devices,
reads the host dataset's iterator), at the same global batch and the same
steps per execution. After a warm-up of each (tracing, first execution), the repetitions are
interleaved (ABBA...) and the median examples/sec of each is reported with the ratio
ours / baseline (target >= 0.95) and the process's peak RSS. The baseline keeps one iterator
for the whole run; ours makes one per `train()` call, as the API requires, so that cost is in
the measurement. A second table splits ours' calls with a public SessionRunHook (the marks a
user's program can take): the loop-only throughput (the steps after the first loop over the
time from the first loop's `after_run` to the last one's: needs more than one loop per call),
setup (estimated: from the call to the first loop's `after_run`, less the first loop at the
loop-only rate: input_fn, distributed iterator, engine look-up) and teardown (from the hook's
`end()`, after the last loop, to the return of `train()`: mostly destroying the call's
distributed iterator).

    /tmp/venv/bin/python bench/train_throughput.py [--steps 100] [--batch_size 128]
        [--iterations_per_loop 50] [--repeats 3] [--replicas 1,8] [--optimizer sgd|adam]

Exits 0 whatever the ratio: this is a measurement, not a test.
"""
import argparse
import gc
import importlib
import os
import statistics
import sys
import tempfile
import time
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common  # noqa: E402  pylint: disable=wrong-import-position

_common.use_repo_checkout()

NUM_CLASSES = 10
IMAGE_SHAPE = (28, 28, 1)
DROPOUT_RATE = 0.4
DENSE_UNITS = 1024
ADAM = {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8}  # the v1 AdamOptimizer defaults


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100,
                        help="training steps per timed repetition (default 100)")
    parser.add_argument("--batch_size", type=int, default=128,
                        help="global batch size (default 128)")
    parser.add_argument("--iterations_per_loop", type=int, default=50,
                        help="steps per device-loop execution (default 50)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed repetitions of each side (default 3)")
    parser.add_argument("--replicas", default="1,8",
                        help="comma-separated replica counts to run (default 1,8)")
    parser.add_argument("--optimizer", choices=("sgd", "adam"), default="sgd")
    parser.add_argument("--learning_rate", type=float, default=0.01)
    parser.add_argument("--num_examples", type=int, default=1024,
                        help="distinct synthetic examples held in memory (default 1024)")
    args = parser.parse_args(argv)
    args.replicas = list(dict.fromkeys(int(r) for r in args.replicas.split(",") if r))
    for name in ("steps", "batch_size", "iterations_per_loop", "repeats", "num_examples"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    for replicas in args.replicas:
        if replicas < 1 or args.batch_size % replicas:
            parser.error(f"--batch_size {args.batch_size} must be divisible by every "
                         f"--replicas value; got {replicas}")
    return args


def loop_sizes(steps, iterations_per_loop):
    """The steps of each device-loop execution in one repetition (as training.py sizes them)."""
    sizes = [iterations_per_loop] * (steps // iterations_per_loop)
    return sizes + ([steps % iterations_per_loop] if steps % iterations_per_loop else [])


# -- data -------------------------------------------------------------------------------------
def synthetic_data(num_examples):
    import numpy as np  # noqa: PLC0415
    rng = np.random.default_rng(0)
    images = rng.random((num_examples,) + IMAGE_SHAPE, dtype=np.float32)
    labels = rng.integers(0, NUM_CLASSES, num_examples).astype(np.int32)
    return images, labels


def make_dataset(tf, data, batch_size):
    """The pipeline both sides use: in-memory examples, repeated, batched, prefetched."""
    return (tf.data.Dataset.from_tensor_slices(data).repeat()
            .batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE))


# -- ours: TPUEstimator -------------------------------------------------------------------------
def make_model_fn(tf, layers, args):
    """The seeds' v1 model_fn, constant learning rate.

    Dense 1024 as the Cloud TPU mnist_tpu model (the guide excerpt in seeds/000 shows 128).
    """
    import tpu_estimator_compat as tec  # noqa: PLC0415

    def model_fn(features, labels, mode, params):
        del params
        training = mode == tec.ModeKeys.TRAIN
        net = tf.reshape(features, [-1, 28, 28, 1])
        net = layers.conv2d(net, filters=32, kernel_size=[5, 5], padding="same",
                            activation=tf.nn.relu)
        net = layers.max_pooling2d(net, pool_size=[2, 2], strides=2)
        net = layers.conv2d(net, filters=64, kernel_size=[5, 5], padding="same",
                            activation=tf.nn.relu)
        net = layers.max_pooling2d(net, pool_size=[2, 2], strides=2)
        net = tf.reshape(net, [-1, 7 * 7 * 64])
        net = layers.dense(net, units=DENSE_UNITS, activation=tf.nn.relu)
        net = layers.dropout(net, rate=DROPOUT_RATE, training=training)
        logits = layers.dense(net, units=NUM_CLASSES)
        onehot = tf.one_hot(tf.cast(labels, tf.int32), NUM_CLASSES)
        loss = tf.compat.v1.losses.softmax_cross_entropy(onehot_labels=onehot, logits=logits)
        if args.optimizer == "adam":
            optimizer = tf.compat.v1.train.AdamOptimizer(args.learning_rate, **ADAM)
        else:
            optimizer = tf.compat.v1.train.GradientDescentOptimizer(args.learning_rate)
        optimizer = tec.CrossShardOptimizer(optimizer)
        train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
        return tec.TPUEstimatorSpec(mode=mode, loss=loss, train_op=train_op)

    return model_fn


def loop_marks_hook(tf):
    """A SessionRunHook noting when each loop's `after_run` and the call's `end()` came."""

    class LoopMarks(tf.compat.v1.train.SessionRunHook):
        def __init__(self):
            self.after_runs, self.ended = [], None

        def after_run(self, run_context, run_values):
            del run_context, run_values
            self.after_runs.append(time.perf_counter())

        def end(self, session):
            del session
            self.ended = time.perf_counter()

    return LoopMarks()


class EstimatorSide:
    """`TPUEstimator.train(steps=--steps)` per repetition.

    Also splits each call's wall time into setup, the loops and teardown by the marks of a
    public hook (`loop_marks_hook`, see the module docstring).
    """

    def __init__(self, tf, layers, strategy, data, args, model_dir):
        import tpu_estimator_compat as tec  # noqa: PLC0415
        config = tec.RunConfig(
            model_dir=model_dir, save_checkpoints_steps=None, save_checkpoints_secs=None,
            save_summary_steps=0, train_distribute=strategy,
            tpu_config=tec.TPUConfig(
                iterations_per_loop=args.iterations_per_loop,
                per_host_input_for_training=tec.InputPipelineConfig.PER_HOST_V2))
        self._estimator = tec.TPUEstimator(
            model_fn=make_model_fn(tf, layers, args), config=config, use_tpu=True,
            train_batch_size=args.batch_size)
        self._input_fn = lambda params: make_dataset(tf, data, params["batch_size"])
        self._tf = tf
        self._args = args
        self.phases = {"setup": [], "loops": [], "teardown": []}

    def warm_up(self):
        self._estimator.train(self._input_fn, steps=self._args.iterations_per_loop)

    def run(self):
        marks = loop_marks_hook(self._tf)
        start = time.perf_counter()
        self._estimator.train(self._input_fn, steps=self._args.steps, hooks=[marks])
        end = time.perf_counter()
        sizes = loop_sizes(self._args.steps, self._args.iterations_per_loop)
        if len(marks.after_runs) == len(sizes) > 1:  # the loop-only rate needs two loops
            later = marks.after_runs[-1] - marks.after_runs[0]
            first_loop = later * sizes[0] / sum(sizes[1:])
            self.phases["setup"].append(marks.after_runs[0] - start - first_loop)
            self.phases["loops"].append(later + first_loop)
        self.phases["teardown"].append(end - marks.ended)


# -- baseline: a hand-written TF2 loop ------------------------------------------------------------
class BaselineSide:
    """The same network, loss and update written directly against tf.distribute."""

    def __init__(self, tf, strategy, data, args):
        self._tf = tf
        self._strategy = strategy
        self._args = args
        with strategy.scope():
            self._params = self._create_variables()
            self._slots = ([(tf.Variable(tf.zeros_like(v)), tf.Variable(tf.zeros_like(v)))
                            for v in self._params] if args.optimizer == "adam" else None)
            self._beta_powers = (tf.Variable(ADAM["beta1"]), tf.Variable(ADAM["beta2"]))
            self._global_step = tf.Variable(
                0, dtype=tf.int64, trainable=False,
                aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
        global_batch = args.batch_size
        dataset = strategy.distribute_datasets_from_function(
            lambda context: self._make_dataset(data, context.get_per_replica_batch_size(
                global_batch)))
        self._iterator = iter(dataset)
        self._loop = tf.function(self._train_loop)

    def _make_dataset(self, data, batch_size):
        """The per-replica input (a subclass may read other data)."""
        return make_dataset(self._tf, data, batch_size)

    def _create_variables(self):
        tf = self._tf
        seed = iter(range(1, 100))

        def glorot(shape):  # the v1 layers' default kernel initializer
            receptive = 1
            for dim in shape[:-2]:
                receptive *= dim
            fan_in, fan_out = shape[-2] * receptive, shape[-1] * receptive
            limit = (6.0 / (fan_in + fan_out)) ** 0.5
            return tf.Variable(tf.random.uniform(shape, -limit, limit, seed=next(seed)))

        units = getattr(self._args, "dense_units", DENSE_UNITS)
        return [glorot([5, 5, 1, 32]), tf.Variable(tf.zeros([32])),
                glorot([5, 5, 32, 64]), tf.Variable(tf.zeros([64])),
                glorot([7 * 7 * 64, units]), tf.Variable(tf.zeros([units])),
                glorot([units, NUM_CLASSES]), tf.Variable(tf.zeros([NUM_CLASSES]))]

    def _loss(self, images, labels):
        tf = self._tf
        k1, b1, k2, b2, w3, b3, w4, b4 = self._params
        net = tf.reshape(images, [-1, 28, 28, 1])
        net = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(net, k1, 1, "SAME"), b1))
        net = tf.nn.max_pool2d(net, 2, 2, "VALID")
        net = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(net, k2, 1, "SAME"), b2))
        net = tf.nn.max_pool2d(net, 2, 2, "VALID")
        net = tf.reshape(net, [-1, 7 * 7 * 64])
        net = tf.nn.relu(tf.nn.bias_add(tf.matmul(net, w3), b3))
        net = tf.nn.dropout(net, rate=DROPOUT_RATE)
        logits = tf.nn.bias_add(tf.matmul(net, w4), b4)
        onehot = tf.one_hot(labels, NUM_CLASSES)
        return tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(onehot, logits))

    def _replica_step(self, element):
        tf = self._tf
        images, labels = element
        context = tf.distribute.get_replica_context()
        with tf.GradientTape() as tape:
            loss = self._loss(images, labels)
            scaled = loss * (1.0 / context.num_replicas_in_sync)
        grads = tape.gradient(scaled, self._params)
        update = context.merge_call(self._apply, args=(grads,))
        with tf.control_dependencies([update]):
            return tf.identity(loss)

    def _apply(self, strategy, grads):
        """Cross-replica context: sum the (1/replicas-scaled) gradients, update every copy."""
        tf = self._tf
        pairs = list(zip(grads, self._params))
        summed = strategy.extended.batch_reduce_to(tf.distribute.ReduceOp.SUM, pairs)
        lr = self._args.learning_rate
        updates = []
        for index, (grad, var) in enumerate(zip(summed, self._params)):
            if self._slots is None:
                def sgd(v, g):
                    return tf.raw_ops.ResourceApplyGradientDescent(
                        var=v.handle, alpha=tf.constant(lr), delta=g)
                updates.append(strategy.extended.update(var, sgd, args=(grad,)))
            else:
                def adam(v, g, m, s, b1p, b2p):
                    return tf.raw_ops.ResourceApplyAdam(
                        var=v.handle, m=m.handle, v=s.handle, beta1_power=b1p.read_value(),
                        beta2_power=b2p.read_value(), lr=tf.constant(lr),
                        beta1=tf.constant(ADAM["beta1"]), beta2=tf.constant(ADAM["beta2"]),
                        epsilon=tf.constant(ADAM["epsilon"]), grad=g)
                updates.append(strategy.extended.update(
                    var, adam, args=(grad,) + self._slots[index] + self._beta_powers))
        with tf.control_dependencies(updates):
            finish = [strategy.extended.update(self._global_step, lambda v: v.assign_add(1))]
            if self._slots is not None:
                for power, beta in zip(self._beta_powers, (ADAM["beta1"], ADAM["beta2"])):
                    finish.append(strategy.extended.update(
                        power, lambda v, beta=beta: v.assign(v * beta)))
        return tf.group(finish)

    def _train_loop(self, iterator, num_steps):
        tf = self._tf
        loss = tf.constant(0.0)
        for _ in tf.range(num_steps):
            per_replica = self._strategy.run(self._replica_step, args=(next(iterator),))
            loss = self._strategy.experimental_local_results(per_replica)[0]
        return loss

    def _run_loops(self, sizes):
        for size in sizes:
            loss = float(self._loop(self._iterator, self._tf.constant(size)))
            if loss != loss:  # NaN, as training.py checks per loop
                raise RuntimeError("baseline loss is NaN")

    def warm_up(self):
        self._run_loops([self._args.iterations_per_loop])

    def run(self):
        self._run_loops(loop_sizes(self._args.steps, self._args.iterations_per_loop))


# -- driver ---------------------------------------------------------------------------------------
def bench_configuration(tf, layers, strategy, data, args):
    """Warms up both sides, then times interleaved repetitions; returns a result dict."""
    replicas = strategy.num_replicas_in_sync
    with tempfile.TemporaryDirectory(prefix="train_throughput_") as model_dir:
        rss_start = _common.current_rss_mb()
        started = time.perf_counter()
        ours = EstimatorSide(tf, layers, strategy, data, args, model_dir)
        ours.warm_up()
        ours_warm_up = time.perf_counter() - started
        rss_after_ours = _common.current_rss_mb()
        started = time.perf_counter()
        baseline = BaselineSide(tf, strategy, data, args)
        baseline.warm_up()
        baseline_warm_up = time.perf_counter() - started
        rss_after_baseline = _common.current_rss_mb()
        timings = _common.interleaved({"ours": ours.run, "baseline": baseline.run},
                                      args.repeats)
    examples = args.steps * args.batch_size
    phases = {name: statistics.median(values) if values else float("nan")
              for name, values in ours.phases.items()}
    return {
        "ours_loop_eps": examples / phases["loops"],
        "ours_setup_s": phases["setup"],
        "ours_teardown_s": phases["teardown"],
        "ours_teardown_max_s": max(ours.phases["teardown"], default=float("nan")),
        "replicas": replicas,
        "ours_eps": examples / timings.median("ours"),
        "baseline_eps": examples / timings.median("baseline"),
        "ours_runs": [examples / s for s in timings.seconds["ours"]],
        "baseline_runs": [examples / s for s in timings.seconds["baseline"]],
        "ours_warm_up_s": ours_warm_up,
        "baseline_warm_up_s": baseline_warm_up,
        "ours_setup_rss_mb": rss_after_ours - rss_start,
        "baseline_setup_rss_mb": rss_after_baseline - rss_after_ours,
        "ours_rss_growth_mb": timings.rss_growth_mb["ours"],
        "baseline_rss_growth_mb": timings.rss_growth_mb["baseline"],
        "peak_rss_mb": _common.peak_rss_mb(),
    }


def release_garbage():
    """Collects the finished configuration's garbage now; returns the seconds it took.

    Both sides are reference cycles (a `tf.function` of a bound method), so they are freed by
    Python's next full garbage collection, wherever it happens. The baseline's distributed
    iterator has TensorFlow's defaults (autotuning), whose destruction can stall for minutes
    (see `tpu_estimator_compat/engine/inputs.py`); collected inside the next
    configuration, that stall was billed to its first side's warm-up (ours: 47 s vs 9 s).
    """
    started = time.perf_counter()
    gc.collect()
    return time.perf_counter() - started


def report(results, args):
    print(f"\nMNIST CNN, global batch {args.batch_size}, {args.steps} steps per repetition, "
          f"iterations_per_loop {args.iterations_per_loop}, optimizer {args.optimizer}, "
          f"{args.repeats} interleaved repetitions (median)")
    rows = []
    for r in results:
        rows.append([f"{r['replicas']} replica(s)", f"{r['ours_eps']:.0f}",
                     f"{r['baseline_eps']:.0f}", f"{r['ours_eps'] / r['baseline_eps']:.3f}",
                     f"{r['ours_warm_up_s']:.1f} / {r['baseline_warm_up_s']:.1f}",
                     f"{r['ours_setup_rss_mb']:.0f} / {r['baseline_setup_rss_mb']:.0f}",
                     f"{r['ours_rss_growth_mb']:+.0f} / {r['baseline_rss_growth_mb']:+.0f}",
                     f"{r['peak_rss_mb']:.0f}"])
    print(_common.format_table(
        ["configuration", "ours ex/s", "baseline ex/s", "ratio", "warm-up s (o/b)",
         "setup RSS MB (o/b)", "timed RSS MB (o/b)", "peak RSS MB"], rows))
    print("\nWhere ours spends a train() call (median s; a public hook's marks, loop-only = "
          "the loops after the first; nan with one loop a call):")
    rows = [[f"{r['replicas']} replica(s)", f"{r['ours_setup_s']:.2f}",
             f"{r['ours_teardown_s']:.2f} (max {r['ours_teardown_max_s']:.2f})",
             f"{r['ours_loop_eps']:.0f}", f"{r['ours_loop_eps'] / r['baseline_eps']:.3f}"]
            for r in results]
    print(_common.format_table(
        ["configuration", "setup s", "teardown s", "loop-only ex/s", "loop-only ratio"], rows))
    for r in results[:-1]:
        print(f"  {r['replicas']} replica(s): garbage collection before the next configuration "
              f"(not timed: the sides' iterators' destruction) {r['release_s']:.1f} s")
    for r in results:
        print(f"  {r['replicas']} replica(s) per repetition ex/s: ours "
              + " ".join(f"{v:.0f}" for v in r["ours_runs"]) + " | baseline "
              + " ".join(f"{v:.0f}" for v in r["baseline_runs"]))
    for r in results:
        ratio = r["ours_eps"] / r["baseline_eps"]
        print(f"{r['replicas']} replica(s): ratio ours/baseline = {ratio:.3f} "
              f"(target >= {_common.TARGET_RATIO}): {_common.verdict(ratio)}")


def main(argv=None):
    args = parse_args(argv)
    devices = _common.split_cpu(max(args.replicas))
    import tensorflow as tf  # noqa: PLC0415
    from absl import logging  # noqa: PLC0415
    logging.set_verbosity(logging.WARNING)
    warnings.filterwarnings("ignore", category=UserWarning)  # tf.layers deprecation notices
    layers = importlib.import_module("tf_keras.api._v1.keras.__internal__.legacy.layers")
    data = synthetic_data(args.num_examples)
    results = []
    for replicas in args.replicas:
        strategy = tf.distribute.MirroredStrategy(devices[:replicas])  # once per process
        print(f"[{replicas} replica(s)] warming up and timing...", flush=True)
        results.append(bench_configuration(tf, layers, strategy, data, args))
        if replicas != args.replicas[-1]:  # the last one's garbage goes at exit, as before
            results[-1]["release_s"] = release_garbage()
    report(results, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
