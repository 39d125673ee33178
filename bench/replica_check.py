"""The cost of keeping replicas as TF1 kept them: the drift check and the copy of replica 0's
values (engine/replica_sync.py), as a share of a `train()` call.

The model is the seeds' MNIST CNN written the TF1 way (`_tf1_cnn.py`, Adam in
CrossShardOptimizer: 3.3 M weights, each with two Adam slots, all checked), trained with
TPU semantics on 8 simulated TPU cores (a MirroredStrategy over 8 logical CPU devices),
`iterations_per_loop` steps per execution, a checkpoint every `--save_steps` steps and at the
end (each preceded by the check). Every `train(steps=--steps)` call is timed whole, and,
in the same call, the time spent in `ReplicaSync.verify` (the check) and `ReplicaSync.sync`
(replica 0's values copied to every replica, after each loop, for what the step writes
outside CrossShardOptimizer: nothing here, Adam's beta powers are created while it applies
summed gradients, so they are checked), measured by wrapping both methods: internals on
purpose, as the check runs inside `train()` with no public option to turn it off or hook
around it (a SessionRunHook's marks would include the loops and the saves).
Prints each call's seconds, the check's and the copy's seconds and their share of the call
(target: at most 2 %).

    .venv/bin/python bench/replica_check.py [--steps 200] [--iterations_per_loop 50]
        [--save_steps 100] [--batch_size 128] [--repeats 3]

Exits 0 whatever the share: this is a measurement, not a test.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common  # noqa: E402  pylint: disable=wrong-import-position
import _tf1_cnn  # noqa: E402  pylint: disable=wrong-import-position

_common.use_repo_checkout()
REPLICAS = 8
TARGET_SHARE = 0.02


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--iterations_per_loop", type=int, default=50)
    parser.add_argument("--save_steps", type=int, default=100)
    parser.add_argument("--batch_size", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    return parser.parse_args(argv)


class _Timed:
    """Wraps a method of a class, adding each call's wall time to `seconds`."""

    def __init__(self, owner, name):
        self.seconds = 0.0
        original = getattr(owner, name)

        def timed(instance, *args, **kwargs):
            started = time.perf_counter()
            try:
                return original(instance, *args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started
        setattr(owner, name, timed)


def main(argv=None):
    args = parse_args(argv)
    _common.split_cpu(REPLICAS)
    os.environ["TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES"] = str(REPLICAS)
    import numpy as np  # noqa: PLC0415
    import tensorflow as tf  # noqa: PLC0415

    import tpu_estimator_compat as tec  # noqa: PLC0415
    from tpu_estimator_compat.engine import replica_sync  # noqa: PLC0415

    rng = np.random.default_rng(0)
    images = rng.random((4096, 28, 28, 1), dtype=np.float32)
    labels = rng.integers(0, 10, 4096).astype(np.int32)

    def input_fn(params):
        dataset = tf.data.Dataset.from_tensor_slices((images, labels)).repeat()
        return dataset.batch(params["batch_size"], drop_remainder=True).prefetch(2)

    config = tec.RunConfig(
        model_dir=tempfile.mkdtemp(prefix="replica_check_"),
        save_checkpoints_steps=args.save_steps, save_summary_steps=0,
        tpu_config=tec.TPUConfig(iterations_per_loop=args.iterations_per_loop))
    estimator = tec.TPUEstimator(
        _tf1_cnn.make_model_fn(tf, tec.CrossShardOptimizer, tec.TPUEstimatorSpec),
        config=config, use_tpu=True, train_batch_size=args.batch_size)
    estimator.train(input_fn, steps=args.iterations_per_loop)  # warm-up: trace, compile
    verify = _Timed(replica_sync.ReplicaSync, "verify")
    sync = _Timed(replica_sync.ReplicaSync, "sync")
    rows, shares = [], []
    for repeat in range(args.repeats):
        _common.settle()
        verify.seconds = sync.seconds = 0.0
        started = time.perf_counter()
        estimator.train(input_fn, steps=args.steps)
        total = time.perf_counter() - started
        share = (verify.seconds + sync.seconds) / total
        shares.append(share)
        rows.append([str(repeat + 1), f"{total:.2f}", f"{verify.seconds * 1e3:.1f}",
                     f"{sync.seconds * 1e3:.1f}", f"{100 * share:.2f} %"])
    print(f"train(steps={args.steps}) on {REPLICAS} replicas, batch {args.batch_size}, "
          f"iterations_per_loop {args.iterations_per_loop}, a checkpoint every "
          f"{args.save_steps} steps; load average {os.getloadavg()[0]:.2f}")
    print(_common.format_table(["call", "seconds", "check ms", "copy ms", "share"], rows))
    median = statistics.median(shares)
    print(f"median share {100 * median:.2f} % (target <= {100 * TARGET_SHARE:.0f} %): "
          f"{'ok' if median <= TARGET_SHARE else 'over'}")


if __name__ == "__main__":
    main()
