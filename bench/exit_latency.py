"""How long a program waits after its work is done: after `train()`'s device loop, and at exit.

For each simulated TPU size (`--cores`, default 1 and 8), a fresh process runs a small
TPUEstimator program (use_tpu=True, `TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES`):
`train(steps=--steps)` on an autotuned input (`map(AUTOTUNE)`, `prefetch(AUTOTUNE)`),
`evaluate(steps=None)`, `predict()` and a second `train(steps=--steps)`, then returns from
its main (so the exit follows a long call). It reports

- `train return s`: per `train()` call, from the end of its last device loop (its hooks'
  `end()`, after the last loop and its checkpoint) to the return of `train()`;
- `exit s`: from the return of the program's last call to the end of the process, measured
  by this script (interpreter shutdown included), and `exit cpu s`, the CPU time the process
  used in that interval: on a loaded machine a slow exit with as much CPU time is work
  (Python's final garbage collection of the traced graphs) delayed by other jobs, while a
  slow exit with little CPU time is a wait (the stall this bench was written for).

Target: every `exit s` under 5 s, `train return s` well under a second. `--compare` also
runs each size two other ways: `inline` destroys each call's iterator inside the call, as
before `engine/input_release.py` (the call then waits for TensorFlow 2.21's autotuning
thread: seconds, in calls of `--steps 2500`), and `untuned` turns autotuning off in the
input_fn (nothing to wait for, nothing tuned). `inline` replaces the internal
`input_release.CallInput.__exit__` on purpose: that mechanism is what it compares.

  python bench/exit_latency.py [--cores 1,8] [--repeats 2] [--steps 100] [--compare]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXIT_TARGET_S = 5.0


def child(variant, steps):
    """The measured program; prints one JSON line of its timings, last thing before exit."""
    sys.path.insert(0, REPO_ROOT)
    import numpy as np  # noqa: PLC0415
    import tensorflow as tf  # noqa: PLC0415
    import tpu_estimator_compat as tec  # noqa: PLC0415
    import tpu_estimator_compat.v1 as v1  # noqa: PLC0415

    if variant == "inline":  # each call destroys its iterator itself: the mechanism compared
        from tpu_estimator_compat.engine import input_release  # noqa: PLC0415

        def release_inline(call_input, *exc_info):
            del exc_info
            call_input.iterator = None
        input_release.CallInput.__exit__ = release_inline

    loop_ends = []

    class LoopEndHook(tf.compat.v1.train.SessionRunHook):
        """Notes when train()'s loops are done (a public hook: `end()`)."""

        def end(self, session):
            del session
            loop_ends.append(time.time())

    rng = np.random.default_rng(0)
    features = rng.normal(size=(512, 32)).astype(np.float32)
    labels = (features.sum(axis=1) > 0).astype(np.int32)

    def input_fn(params, repeat=True):
        dataset = tf.data.Dataset.from_tensor_slices((features, labels))
        dataset = dataset.shuffle(512).repeat() if repeat else dataset
        dataset = dataset.map(lambda x, y: (x + tf.reduce_mean(tf.random.uniform([3000])), y),
                              num_parallel_calls=tf.data.AUTOTUNE)
        dataset = dataset.batch(params["batch_size"], drop_remainder=repeat)
        if variant == "untuned":
            options = tf.data.Options()
            options.autotune.enabled = False
            dataset = dataset.with_options(options)
        return dataset.prefetch(tf.data.AUTOTUNE)

    def model_fn(features, labels, mode, params):
        del params
        hidden = v1.layers.dense(features, 256, activation=tf.nn.relu)
        logits = v1.layers.dense(hidden, 2)
        if mode == tec.ModeKeys.PREDICT:
            return tec.TPUEstimatorSpec(mode, predictions={"logits": logits})
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
        optimizer = tec.CrossShardOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1))
        train_op = optimizer.minimize(loss, tf.compat.v1.train.get_global_step())
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    import tempfile  # noqa: PLC0415
    config = tec.RunConfig(model_dir=tempfile.mkdtemp(prefix="exit_latency_"),
                           save_checkpoints_steps=steps, save_summary_steps=steps,
                           tpu_config=tec.TPUConfig(iterations_per_loop=25))
    estimator = tec.TPUEstimator(model_fn, config=config, use_tpu=True, train_batch_size=64,
                                 eval_batch_size=64, predict_batch_size=64)
    train_returns = []

    def train():
        estimator.train(input_fn, steps=steps, hooks=[LoopEndHook()])
        train_returns.append(time.time() - loop_ends[-1])
    train()
    estimator.evaluate(lambda params: input_fn(params, repeat=False))
    list(estimator.predict(lambda params: input_fn(params, repeat=False)))
    train()
    times = os.times()
    print(json.dumps({"train_return_s": train_returns, "last_call_end": time.time(),
                      "cpu_s": times.user + times.system}), flush=True)


def measure(cores, variant, steps):
    """(train return seconds, exit seconds, exit CPU seconds) of one child process."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2",
           "TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES": str(cores)}
    args = [sys.executable, os.path.abspath(__file__), "--child", variant, "--steps",
            str(steps)]
    cpu_before = _children_cpu_s()
    process = subprocess.run(args, capture_output=True, text=True, env=env, check=False)
    ended = time.time()
    child_cpu = _children_cpu_s() - cpu_before
    if process.returncode != 0:
        raise RuntimeError(f"child failed ({process.returncode}):\n{process.stderr[-3000:]}")
    report = json.loads(process.stdout.strip().splitlines()[-1])
    return (report["train_return_s"], ended - report["last_call_end"],
            child_cpu - report["cpu_s"])


def _children_cpu_s():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", default="1,8")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--compare", action="store_true")
    parser.add_argument("--child", choices=("ours", "inline", "untuned"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.steps)
        return
    variants = ["ours"] + (["inline", "untuned"] if args.compare else [])
    rows = []
    for cores in [int(c) for c in args.cores.split(",")]:
        for variant in variants:
            train_returns, exits, exit_cpus = [], [], []
            for _ in range(args.repeats):
                returns, exit_s, exit_cpu = measure(cores, variant, args.steps)
                train_returns += returns
                exits.append(exit_s)
                exit_cpus.append(exit_cpu)
            rows.append((cores, variant, train_returns, exits, exit_cpus))
    print(f"{'cores':>5}  {'variant':<12} {'train return s (max)':<22} {'exit s (max)':<15} "
          "per run: exit s / exit cpu s")
    for cores, variant, returns, exits, exit_cpus in rows:
        print(f"{cores:>5}  {variant:<12} {statistics.median(returns):6.2f} ({max(returns):6.2f})"
              f"        {statistics.median(exits):6.2f} ({max(exits):6.2f})  "
              + ", ".join(f"{e:.2f}/{c:.2f}" for e, c in zip(exits, exit_cpus)))
    for cores, variant, _, exits, _ in rows:
        if variant == "ours":
            verdict = "PASS" if max(exits) < EXIT_TARGET_S else "ABOVE TARGET"
            print(f"{cores} core(s): max exit {max(exits):.2f} s (target < {EXIT_TARGET_S:.0f} s): "
                  f"{verdict}")


if __name__ == "__main__":
    main()
