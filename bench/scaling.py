"""Multi-worker scaling: `TPUEstimator.train` on 1 worker vs 2 workers on this machine.

One invocation runs, one after the other,

  1 worker:   one process, TPU semantics on one replica (the simulated one-core TPU);
  2 workers:  two processes on 127.0.0.1, each with its own TF_CONFIG (free ports), so the
              estimator trains on a MultiWorkerMirroredStrategy (one replica per worker).

Every worker gets the same per-worker batch (weak scaling: the 2-worker global batch is twice
as large). With `--pin_cores` each worker process is pinned to its own CPU core
(`os.sched_setaffinity`, before TensorFlow starts, so its thread pools are sized for one
core); by default the processes share the machine's cores. The model is the MNIST CNN
of `train_throughput.py` (3.3 M parameters, so 13 MB of gradients are all-reduced per step),
on synthetic data, PER_HOST_V2 input sharded by host, checkpoints and summaries off. Each
worker warms up (tracing, first loop), then times `--repeats` calls of `train(steps=--steps)`.

Reported: examples/sec per worker and in total, the step time, and the communication share
of a 2-worker step, measured two ways: (a) the all-reduce alone (the same gradient shapes,
all-reduced across the two workers in a device loop, no compute), and (b) the 2-worker step
time minus the 1-worker step time. On a 2-core machine every worker has one core, the
processes share memory bandwidth and talk over loopback gRPC: this measures the overhead of
the multi-worker runtime, not a speedup.

    /tmp/venv/bin/python bench/scaling.py [--steps 40] [--batch_per_worker 32]
        [--iterations_per_loop 20] [--repeats 3] [--pin_cores]

Exits 0 whatever the numbers: this is a measurement, not a test.
"""
import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common  # noqa: E402  pylint: disable=wrong-import-position

_common.use_repo_checkout()

WORKER_TIMEOUT_SECS = 900


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40,
                        help="training steps per timed repetition (default 40)")
    parser.add_argument("--batch_per_worker", type=int, default=32,
                        help="examples per step on each worker (default 32)")
    parser.add_argument("--iterations_per_loop", type=int, default=20,
                        help="steps per device-loop execution (default 20)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed repetitions per configuration (default 3)")
    parser.add_argument("--num_examples", type=int, default=1024,
                        help="distinct synthetic examples held in memory (default 1024)")
    parser.add_argument("--pin_cores", action="store_true",
                        help="pin worker i to CPU core i (default: share all cores)")
    # Internal: how the parent starts a worker.
    parser.add_argument("--worker_result", help=argparse.SUPPRESS)
    parser.add_argument("--worker_core", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--num_workers", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("steps", "batch_per_worker", "iterations_per_loop", "repeats", "num_examples"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    return args


# -- one worker process -----------------------------------------------------------------------
def run_worker(args):
    """Trains and times in this process (one worker); writes a JSON result file."""
    if args.pin_cores:
        os.sched_setaffinity(0, {args.worker_core % os.cpu_count()})
    os.environ["TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES"] = "1"
    import importlib  # noqa: PLC0415
    import warnings  # noqa: PLC0415
    import numpy as np  # noqa: PLC0415
    import tensorflow as tf  # noqa: PLC0415
    from absl import logging  # noqa: PLC0415
    import tpu_estimator_compat as tec  # noqa: PLC0415
    import train_throughput  # noqa: PLC0415  (the shared model and data)
    if args.num_workers > 1:
        tec.multi_worker_strategy()  # first, before any other TensorFlow operation
    logging.set_verbosity(logging.WARNING)
    warnings.filterwarnings("ignore", category=UserWarning)
    layers = importlib.import_module("tf_keras.api._v1.keras.__internal__.legacy.layers")
    model_args = argparse.Namespace(optimizer="sgd", learning_rate=0.01)
    model_fn = train_throughput.make_model_fn(tf, layers, model_args)
    images, labels = train_throughput.synthetic_data(args.num_examples)

    def input_fn(params):
        context = params["context"]
        dataset = tf.data.Dataset.from_tensor_slices((images, labels))
        dataset = dataset.shard(context.num_hosts, context.current_host)
        return (dataset.repeat().batch(params["batch_size"], drop_remainder=True)
                .prefetch(tf.data.AUTOTUNE))

    with tempfile.TemporaryDirectory(prefix="scaling_") as model_dir:
        config = tec.RunConfig(
            model_dir=model_dir, save_checkpoints_steps=None, save_checkpoints_secs=None,
            save_summary_steps=0, log_step_count_steps=10**9,
            tpu_config=tec.TPUConfig(
                iterations_per_loop=args.iterations_per_loop,
                per_host_input_for_training=tec.InputPipelineConfig.PER_HOST_V2))
        estimator = tec.TPUEstimator(model_fn, config=config,
                                     train_batch_size=args.batch_per_worker * args.num_workers)
        estimator.train(input_fn, steps=args.iterations_per_loop)  # warm-up: trace, first loop
        seconds = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            estimator.train(input_fn, steps=args.steps)
            seconds.append(time.perf_counter() - started)
        allreduce_ms = None
        shapes = gradient_shapes(tf, model_fn, args)
        if args.num_workers > 1:
            allreduce_ms = time_all_reduce(tf, tec.multi_worker_strategy(), shapes, args)
    gradient_bytes = 4 * sum(int(np.prod(shape)) for shape in shapes)
    with open(args.worker_result, "w", encoding="utf-8") as f:
        json.dump({"seconds": seconds, "allreduce_ms": allreduce_ms,
                   "gradient_bytes": gradient_bytes}, f)


def gradient_shapes(tf, model_fn, args):
    """The shapes of the model's trainable variables (built once in a throwaway graph)."""
    import tpu_estimator_compat as tec  # noqa: PLC0415
    with tf.Graph().as_default():
        features = tf.compat.v1.placeholder(tf.float32, [args.batch_per_worker, 28, 28, 1])
        labels = tf.compat.v1.placeholder(tf.int32, [args.batch_per_worker])
        tf.compat.v1.train.get_or_create_global_step()
        model_fn(features, labels, tec.ModeKeys.TRAIN, {})
        return [v.shape.as_list() for v in tf.compat.v1.trainable_variables()]


def time_all_reduce(tf, strategy, shapes, args):
    """Milliseconds per all-reduce of `shapes` across the workers, in a device loop as the
    training steps run (iterations_per_loop all-reduces per execution), no compute."""
    @tf.function(autograph=False)
    def loop(num_steps):
        def body(i, total):
            def replica_fn():
                scale = tf.cast(i, tf.float32)
                tensors = [tf.fill(shape, scale) for shape in shapes]
                reduced = tf.distribute.get_replica_context().all_reduce("SUM", tensors)
                return tf.add_n([tf.reduce_sum(t[..., :1]) for t in reduced])
            per_replica = strategy.run(replica_fn)
            return i + 1, total + strategy.experimental_local_results(per_replica)[0]
        return tf.while_loop(lambda i, _: i < num_steps, body,
                             (tf.constant(0), tf.constant(0.0)))[1]

    steps = tf.constant(args.iterations_per_loop)
    loop(steps).numpy()  # warm-up (trace, group set-up)
    timings = []
    for _ in range(args.repeats):
        started = time.perf_counter()
        loop(steps).numpy()
        timings.append((time.perf_counter() - started) * 1000 / args.iterations_per_loop)
    return statistics.median(timings)


# -- the parent: start the workers, report ----------------------------------------------------
def free_port():
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_configuration(args, num_workers, out_dir):
    """Starts `num_workers` worker processes (one core each) and returns their results."""
    cluster = {"worker": [f"127.0.0.1:{free_port()}" for _ in range(num_workers)]}
    procs = []
    try:
        for index in range(num_workers):
            env = dict(os.environ)
            env.pop("TF_CONFIG", None)
            if num_workers > 1:
                env["TF_CONFIG"] = json.dumps(
                    {"cluster": cluster, "task": {"type": "worker", "index": index}})
            log = open(os.path.join(out_dir, f"{num_workers}w{index}.log"), "w",  # pylint: disable=consider-using-with
                       encoding="utf-8")
            procs.append((subprocess.Popen(  # pylint: disable=consider-using-with
                [sys.executable, os.path.abspath(__file__),
                 "--steps", str(args.steps), "--batch_per_worker", str(args.batch_per_worker),
                 "--iterations_per_loop", str(args.iterations_per_loop),
                 "--repeats", str(args.repeats), "--num_examples", str(args.num_examples),
                 "--worker_result", os.path.join(out_dir, f"{num_workers}w{index}.json"),
                 "--worker_core", str(index), "--num_workers", str(num_workers)]
                + (["--pin_cores"] if args.pin_cores else []),
                env=env, stdout=log, stderr=subprocess.STDOUT), log))
        deadline = time.time() + WORKER_TIMEOUT_SECS
        for index, (proc, _) in enumerate(procs):
            code = proc.wait(timeout=max(1.0, deadline - time.time()))
            if code != 0:
                with open(os.path.join(out_dir, f"{num_workers}w{index}.log"),
                          encoding="utf-8") as f:
                    raise RuntimeError(f"worker {index} of {num_workers} failed (exit {code}):\n"
                                       + f.read()[-3000:])
    finally:
        for proc, log in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)
            log.close()
    results = []
    for index in range(num_workers):
        with open(os.path.join(out_dir, f"{num_workers}w{index}.json"), encoding="utf-8") as f:
            results.append(json.load(f))
    return results


def summarize(args, num_workers, results):
    examples = args.steps * args.batch_per_worker
    per_worker_eps = [examples / statistics.median(r["seconds"]) for r in results]
    slowest = max(statistics.median(r["seconds"]) for r in results)
    allreduce = [r["allreduce_ms"] for r in results if r["allreduce_ms"] is not None]
    return {"workers": num_workers, "per_worker_eps": per_worker_eps,
            "gradient_mb": results[0]["gradient_bytes"] / 2**20,
            "total_eps": examples * num_workers / slowest,
            "step_ms": slowest * 1000 / args.steps,
            "allreduce_ms": statistics.median(allreduce) if allreduce else None}


def report(args, single, pair):
    print(f"\nMNIST CNN ({single['gradient_mb']:.1f} MB of gradients), {args.batch_per_worker} "
          f"examples per worker per step, {args.steps} steps per repetition, "
          f"iterations_per_loop {args.iterations_per_loop}, {args.repeats} repetitions (median); "
          + ("each worker pinned to one core" if args.pin_cores else "workers share the cores"))
    rows = []
    for summary in (single, pair):
        rows.append([f"{summary['workers']} worker(s)",
                     str(args.batch_per_worker * summary["workers"]),
                     f"{summary['step_ms']:.1f}",
                     " / ".join(f"{v:.0f}" for v in summary["per_worker_eps"]),
                     f"{summary['total_eps']:.0f}"])
    print(_common.format_table(
        ["configuration", "global batch", "step ms", "ex/s per worker", "ex/s total"], rows))
    step_ms = pair["step_ms"]
    allreduce_share = pair["allreduce_ms"] / step_ms
    overhead_ms = step_ms - single["step_ms"]
    print(f"communication share of a 2-worker step: all-reduce alone {pair['allreduce_ms']:.1f} "
          f"ms of {step_ms:.1f} ms = {allreduce_share:.0%} "
          f"({pair['gradient_mb'] / (pair['allreduce_ms'] / 1000):.0f} MB/s); step time over "
          f"1 worker {overhead_ms:+.1f} ms = {overhead_ms / step_ms:.0%} of the step")
    print(f"scaling: total ex/s 2 workers / 1 worker = {pair['total_eps'] / single['total_eps']:.2f}"
          f" (ideal 2.00), per worker = "
          f"{statistics.mean(pair['per_worker_eps']) / single['per_worker_eps'][0]:.2f} (ideal 1.00)")
    load = os.getloadavg()[0]
    print(f"NOTE: this machine has {os.cpu_count()} CPU core(s) (1-min load average now "
          f"{load:.1f}); the 2 workers "
          + ("get one core each" if args.pin_cores else "share them")
          + " and talk over loopback gRPC, so these numbers "
          "measure the overhead of multi-worker training (gradient all-reduce, lockstep "
          "steps that wait for the slower worker), not a speedup. Real scaling needs one "
          "machine (or accelerator host) per worker.")


def main(argv=None):
    args = parse_args(argv)
    if args.worker_result:
        run_worker(args)
        return 0
    with tempfile.TemporaryDirectory(prefix="scaling_bench_") as out_dir:
        summaries = {}
        for num_workers in (1, 2):
            print(f"[{num_workers} worker(s)] starting, warming up and timing...", flush=True)
            summaries[num_workers] = summarize(
                args, num_workers, run_configuration(args, num_workers, out_dir))
    report(args, summaries[1], summaries[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
