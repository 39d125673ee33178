"""Checkpoint I/O: our `CheckpointSaver.save`/`restore` against `tf.train.Checkpoint.write/read`.

Saves and restores the same ~100 MB of variables (25 float32 variables of 1M elements) with
both, interleaving the repetitions so that both see the same machine load and page cache, and
prints the median times, the on-disk sizes and the ratios ours / tf.train.Checkpoint
(target: <= 1.2).
It calls the package's internal `state.checkpoints` on purpose: the saver itself is what is
measured, without a training call around it.

    /tmp/venv/bin/python bench/checkpoint_io.py [--repetitions 7] [--variables 25]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tpu_estimator_compat.state import checkpoints  # noqa: E402  pylint: disable=wrong-import-position


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def disk_bytes(prefix):
    directory, base = os.path.split(prefix)
    return sum(os.path.getsize(os.path.join(directory, f)) for f in os.listdir(directory)
               if f.startswith(base + "."))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=7)
    parser.add_argument("--variables", type=int, default=25)
    parser.add_argument("--elements", type=int, default=1 << 20)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    named = {f"layer_{i}/kernel": tf.Variable(rng.standard_normal(args.elements, np.float32))
             for i in range(args.variables)}
    total_mb = args.variables * args.elements * 4 / 1e6
    print(f"{args.variables} float32 variables x {args.elements} elements = {total_mb:.0f} MB, "
          f"{args.repetitions} interleaved repetitions (after one warm-up)")

    with tempfile.TemporaryDirectory() as root:
        saver = checkpoints.CheckpointSaver(os.path.join(root, "ours"), max_to_keep=1)
        tf_checkpoint = tf.train.Checkpoint(**{f"v{i}": v for i, v in enumerate(named.values())})
        tf_prefix = os.path.join(root, "tf", "ckpt")
        times = {key: [] for key in ("ours_save", "tf_save", "ours_restore", "tf_restore")}
        for rep in range(args.repetitions + 1):
            paths = []
            ours_save = timed(lambda: paths.append(saver.save(named, rep)))
            tf_save = timed(lambda: tf_checkpoint.write(tf_prefix))
            ours_restore = timed(lambda: checkpoints.restore(named, paths[0]))
            tf_restore = timed(lambda: tf_checkpoint.read(tf_prefix).assert_consumed())
            if rep:  # the first repetition traces/warms both paths
                for key, value in zip(times, (ours_save, tf_save, ours_restore, tf_restore)):
                    times[key].append(value)
        ours_bytes, tf_bytes = disk_bytes(paths[0]), disk_bytes(tf_prefix)

    median = {key: statistics.median(values) for key, values in times.items()}
    print(f"{'':10}{'ours':>12}{'tf.train.Checkpoint':>22}{'ratio':>9}")
    for label, ours, theirs in [("save s", median["ours_save"], median["tf_save"]),
                                ("restore s", median["ours_restore"], median["tf_restore"])]:
        print(f"{label:10}{ours:12.3f}{theirs:22.3f}{ours / theirs:9.2f}")
    print(f"{'disk MB':10}{ours_bytes / 1e6:12.2f}{tf_bytes / 1e6:22.2f}"
          f"{ours_bytes / tf_bytes:9.3f}")
    for key, values in times.items():
        print(f"  {key:13} " + " ".join(f"{v:.3f}" for v in values))


if __name__ == "__main__":
    main()
