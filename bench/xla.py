"""XLA on the simulated TPU: what compiling the step costs (first loop) and gains (steps).

train_throughput.py's MNIST CNN (v1 model_fn, CrossShardOptimizer, PER_HOST_V2), on a
simulated TPU of --cores cores (`TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES`), four ways:

  ours xla      TPUEstimator, the step compiled with XLA (the default; engine/xla_step.py)
  ours          TPUEstimator with TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_XLA=0
  baseline jit  train_throughput.py's hand-written TF2 loop on the same strategy, each
                replica's forward and backward pass in a `tf.function(jit_compile=True)` (the
                all-reduce and the update stay outside: XLA on the CPU cannot compile the
                collectives, and the loop cannot be compiled around the iterator)
  baseline      the same loop without XLA

Each side first runs one warm-up call of --iterations_per_loop steps (trace, XLA compilation,
first execution: its "first loop" time), then the sides' timed repetitions of --steps steps
are interleaved (ABBA) and the median examples/sec reported, with the ratios of the same
invocation: XLA / no XLA for ours and for the baseline, ours / baseline with and without XLA.

    /tmp/venv/bin/python bench/xla.py [--cores 8] [--steps 40] [--batch_size 64]
        [--iterations_per_loop 20] [--repeats 2] [--optimizer sgd|adam]

Exits 0 whatever it measures: a measurement, not a test.
"""
import argparse
import os
import sys
import tempfile
import time
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common  # noqa: E402  pylint: disable=wrong-import-position
import train_throughput  # noqa: E402  pylint: disable=wrong-import-position

_common.use_repo_checkout()

CORES_ENV = "TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES"
XLA_ENV = "TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_XLA"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, default=8, help="simulated TPU cores (default 8)")
    parser.add_argument("--steps", type=int, default=40, help="steps per timed repetition")
    parser.add_argument("--batch_size", type=int, default=64, help="global batch size")
    parser.add_argument("--iterations_per_loop", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=2, help="timed repetitions per side")
    parser.add_argument("--optimizer", choices=("sgd", "adam"), default="sgd")
    parser.add_argument("--learning_rate", type=float, default=0.01)
    parser.add_argument("--num_examples", type=int, default=512)
    args = parser.parse_args(argv)
    for name in ("cores", "steps", "batch_size", "iterations_per_loop", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    if args.batch_size % args.cores:
        parser.error(f"--batch_size {args.batch_size} must be divisible by --cores {args.cores}")
    return args


class EstimatorSide:
    """`TPUEstimator.train(steps=...)` on the simulated TPU, with or without XLA."""

    def __init__(self, tf, layers, data, args, model_dir, xla):
        import tpu_estimator_compat as tec  # noqa: PLC0415
        config = tec.RunConfig(
            model_dir=model_dir, save_checkpoints_steps=None, save_checkpoints_secs=None,
            save_summary_steps=0, tpu_config=tec.TPUConfig(
                iterations_per_loop=args.iterations_per_loop,
                per_host_input_for_training=tec.InputPipelineConfig.PER_HOST_V2))
        self._estimator = tec.TPUEstimator(
            model_fn=train_throughput.make_model_fn(tf, layers, args), config=config,
            use_tpu=True, train_batch_size=args.batch_size)
        self._input_fn = lambda params: train_throughput.make_dataset(
            tf, data, params["batch_size"])
        self._args = args
        self._xla = "1" if xla else "0"

    def _train(self, steps):
        os.environ[XLA_ENV] = self._xla  # read when train() picks its runtime
        self._estimator.train(self._input_fn, steps=steps)

    def warm_up(self):
        self._train(self._args.iterations_per_loop)

    def run(self):
        self._train(self._args.steps)


class JitBaselineSide(train_throughput.BaselineSide):
    """The hand-written loop, each replica's loss and gradients compiled with XLA (one
    function per replica: each reads its own device's copy of the variables)."""

    def __init__(self, tf, strategy, data, args):
        self._gradient_fns = {}
        super().__init__(tf, strategy, data, args)

    def _gradients(self, images, labels):
        tf = self._tf
        with tf.GradientTape() as tape:
            loss = self._loss(images, labels)
            scaled = loss * (1.0 / self._strategy.num_replicas_in_sync)
        return loss, tape.gradient(scaled, self._params)

    def _replica_step(self, element):
        tf = self._tf
        context = tf.distribute.get_replica_context()
        replica = context._replica_id_in_sync_group  # pylint: disable=protected-access
        if replica not in self._gradient_fns:
            self._gradient_fns[replica] = tf.function(self._gradients, jit_compile=True,
                                                      autograph=False)
        loss, grads = self._gradient_fns[replica](*element)
        update = context.merge_call(self._apply, args=(grads,))
        with tf.control_dependencies([update]):
            return tf.identity(loss)


def _timed(side_factory):
    started = time.perf_counter()
    side = side_factory()
    side.warm_up()
    return side, time.perf_counter() - started


def main(argv=None):
    args = parse_args(argv)
    os.environ[CORES_ENV] = str(args.cores)
    import tensorflow as tf  # noqa: PLC0415
    import tpu_estimator_compat as tec  # noqa: PLC0415  (splits the CPU)
    from absl import logging  # noqa: PLC0415
    logging.set_verbosity(logging.WARNING)
    warnings.filterwarnings("ignore", category=UserWarning)
    layers = train_throughput.importlib.import_module(
        "tf_keras.api._v1.keras.__internal__.legacy.layers")
    data = train_throughput.synthetic_data(args.num_examples)
    # The baseline's own MirroredStrategy over the simulated cores' devices (the simulated
    # TPU's strategy runs its collectives under keys of its own, engine/runtime.py).
    strategy = tf.distribute.MirroredStrategy(_common.split_cpu(args.cores))
    print(f"[{args.cores} simulated cores, load average {os.getloadavg()[0]:.1f}] warming up "
          "and timing...", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench_xla_") as model_dir:
        sides, first_loop = {}, {}
        factories = {
            "ours xla": lambda: EstimatorSide(tf, layers, data, args,
                                              os.path.join(model_dir, "xla"), xla=True),
            "ours": lambda: EstimatorSide(tf, layers, data, args,
                                          os.path.join(model_dir, "plain"), xla=False),
            "baseline jit": lambda: JitBaselineSide(tf, strategy, data, args),
            "baseline": lambda: train_throughput.BaselineSide(tf, strategy, data, args),
        }
        for name, factory in factories.items():
            sides[name], first_loop[name] = _timed(factory)
        timings = _common.interleaved({name: side.run for name, side in sides.items()},
                                      args.repeats)
    examples = args.steps * args.batch_size
    eps = {name: examples / timings.median(name) for name in sides}
    print(f"\nMNIST CNN, global batch {args.batch_size}, {args.steps} steps per repetition, "
          f"iterations_per_loop {args.iterations_per_loop}, optimizer {args.optimizer}, "
          f"{args.repeats} interleaved repetitions (median); load average now "
          f"{os.getloadavg()[0]:.1f}")
    print(_common.format_table(
        ["side", "first loop s", "ex/s", "per repetition ex/s"],
        [[name, f"{first_loop[name]:.1f}", f"{eps[name]:.0f}",
          " ".join(f"{examples / s:.0f}" for s in timings.seconds[name])] for name in sides]))
    for label, a, b in (("ours: XLA / no XLA", "ours xla", "ours"),
                        ("baseline: jit / no jit", "baseline jit", "baseline"),
                        ("with XLA: ours / baseline", "ours xla", "baseline jit"),
                        ("without XLA: ours / baseline", "ours", "baseline")):
        print(f"{label}: first loop {first_loop[a] / first_loop[b]:.2f}x, "
              f"step throughput {eps[a] / eps[b]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
