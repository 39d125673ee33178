"""Parameter-server training: `TPUEstimator.train` against a hand-written ClusterCoordinator loop.

For N = 1 and N = 2 workers, one invocation starts, one after the other, two local clusters
on 127.0.0.1 (free ports), each a chief, N workers and 2 parameter servers:

  ours         the chief runs `TPUEstimator(use_tpu=False).train` with a TF_CONFIG cluster
               with `ps` tasks, so the estimator trains on ParameterServerStrategy
               (`engine/parameter_servers.py`), `iterations_per_loop` steps per closure;
  hand-written the chief builds the same model with TensorFlow 2's
               `ParameterServerStrategy` + `ClusterCoordinator`: the same variables on the
               same parameter servers, a `tf.function` closure of `--steps_per_closure`
               steps (SGD, sparse updates of the table, the global step +1 per step),
               scheduled on the workers over `create_per_worker_dataset`, then joined.

In both, the workers and parameter servers are `tf.distribute.Server`s (what `train()` starts
in a `worker` or `ps` task). The model looks ids up in an embedding table that
`fixed_size_partitioner(2)` splits over the 2 parameter servers and regresses a target with
one dense unit (the parameter-server tests' model, larger table). The chief warms up (one
call of `--steps_per_closure` steps: tracing, variable creation), then times `--repeats`
calls of `--steps` steps; each `train()` call of ours ends with its checkpoint, as the
original's did (the hand-written loop saves nothing). Examples/sec = steps x batch / seconds
(the batch is each worker's, and each step is one worker's).

    /work/main/.venv/bin/python bench/parameter_servers.py [--steps 200] [--batch 64]
        [--steps_per_closure 10] [--repeats 3] [--workers 1,2] [--timeout 600]

On a 2-core machine the chief, the workers and the parameter servers share the cores and
talk over loopback gRPC: this measures the runtime's overhead, not a speedup. Every process
is killed at the end of its configuration; a configuration that takes longer than
`--timeout` seconds is reported as failed. Exits 0 whatever the numbers.
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

VOCABULARY = 10000
DIMENSION = 32
NUM_EXAMPLES = 4096
LEARNING_RATE = 0.01  # 0.1 diverges with 2 asynchronous workers (ours stops at the NaN)
SIDES = ("ours", "hand-written")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200,
                        help="training steps per timed repetition (default 200)")
    parser.add_argument("--batch", type=int, default=64,
                        help="examples per step (each worker's batch; default 64)")
    parser.add_argument("--steps_per_closure", type=int, default=10,
                        help="steps per scheduled closure (ours: iterations_per_loop; "
                             "default 10)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed repetitions per cluster (default 3)")
    parser.add_argument("--workers", default="1,2",
                        help="comma-separated worker counts (default 1,2)")
    parser.add_argument("--timeout", type=int, default=600,
                        help="seconds one cluster may take, start-up included (default 600)")
    # Internal: how the parent starts a task.
    parser.add_argument("--role", choices=("server", "ours", "hand-written"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("steps", "batch", "steps_per_closure", "repeats", "timeout"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    try:
        args.workers = [int(n) for n in args.workers.split(",")]
    except ValueError:
        parser.error(f"--workers must be comma-separated integers, got {args.workers!r}")
    if any(n < 1 for n in args.workers):
        parser.error(f"--workers must be >= 1 each, got {args.workers}")
    return args


def synthetic_data():
    import numpy as np  # noqa: PLC0415
    rng = np.random.default_rng(0)
    ids = rng.integers(0, VOCABULARY, NUM_EXAMPLES, dtype=np.int64)
    targets = (ids % 10).astype(np.float32).reshape(-1, 1) * 0.1
    return ids, targets


def make_dataset(tf, batch):
    ids, targets = synthetic_data()
    return (tf.data.Dataset.from_tensor_slices(({"ids": ids}, targets)).repeat()
            .batch(batch, drop_remainder=True).prefetch(tf.data.AUTOTUNE))


# -- the tasks ----------------------------------------------------------------------------------
def run_server():
    """A worker or ps task: a `tf.distribute.Server` from TF_CONFIG, serving until killed."""
    import tensorflow as tf  # noqa: PLC0415
    config = json.loads(os.environ["TF_CONFIG"])
    server = tf.distribute.Server(
        tf.train.ClusterSpec(config["cluster"]), job_name=config["task"]["type"],
        task_index=config["task"]["index"], protocol="grpc", start=True)
    server.join()


def time_calls(args, train):
    """Warm-up call, then `--repeats` timed calls of `train(steps)`; the seconds of each."""
    train(args.steps_per_closure)
    seconds = []
    for _ in range(args.repeats):
        started = time.perf_counter()
        train(args.steps)
        seconds.append(time.perf_counter() - started)
    return seconds


def run_ours(args):
    """The chief of ours: `TPUEstimator(use_tpu=False).train` on TF_CONFIG's cluster."""
    import warnings  # noqa: PLC0415
    import tpu_estimator_compat.v1 as tf  # noqa: PLC0415
    warnings.filterwarnings("ignore", category=UserWarning)
    tf.logging.set_verbosity(tf.logging.WARN)

    def input_fn(params):
        del params
        return make_dataset(tf, args.batch)

    def model_fn(features, labels, mode, params):
        del params
        with tf.variable_scope("model", partitioner=tf.fixed_size_partitioner(2)):
            table = tf.get_variable("embedding", [VOCABULARY, DIMENSION],
                                    initializer=tf.constant_initializer(0.5))
        predictions = tf.layers.dense(tf.nn.embedding_lookup(table, features["ids"]), 1,
                                      name="out")
        loss = tf.losses.mean_squared_error(labels, predictions)
        train_op = tf.train.GradientDescentOptimizer(LEARNING_RATE).minimize(
            loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    with tempfile.TemporaryDirectory(prefix="psbench_") as model_dir:
        estimator = tf.estimator.tpu.TPUEstimator(
            model_fn, use_tpu=False, train_batch_size=args.batch,
            config=tf.estimator.tpu.RunConfig(
                model_dir=model_dir, save_checkpoints_steps=None, save_checkpoints_secs=None,
                save_summary_steps=0, log_step_count_steps=10**9,
                tpu_config=tf.estimator.tpu.TPUConfig(
                    iterations_per_loop=args.steps_per_closure)))
        return time_calls(args, lambda steps: estimator.train(input_fn, steps=steps))


def run_hand_written(args):
    """The chief of the hand-written loop: ParameterServerStrategy + ClusterCoordinator."""
    import tensorflow as tf  # noqa: PLC0415
    config = json.loads(os.environ["TF_CONFIG"])
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(config["cluster"]), task_type="chief", task_id=0,
        rpc_layer="grpc")
    strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():  # round robin over the ps tasks: table parts on ps 0 and ps 1
        half = VOCABULARY // 2
        table = [tf.Variable(tf.fill([half, DIMENSION], 0.5), name="embedding/part_0"),
                 tf.Variable(tf.fill([VOCABULARY - half, DIMENSION], 0.5),
                             name="embedding/part_1")]
        kernel = tf.Variable(tf.random.uniform([DIMENSION, 1], -0.4, 0.4), name="out/kernel")
        bias = tf.Variable(tf.zeros([1]), name="out/bias")
        global_step = tf.Variable(0, dtype=tf.int64, name="global_step")
    trainable = table + [kernel, bias]

    def step(features, targets):
        with tf.GradientTape() as tape:
            embedded = tf.nn.embedding_lookup(table, features["ids"])  # "div", as the parts
            loss = tf.reduce_mean(tf.square(targets - (tf.matmul(embedded, kernel) + bias)))
        updates = []
        for variable, grad in zip(trainable, tape.gradient(loss, trainable)):
            if isinstance(grad, tf.IndexedSlices):
                updates.append(variable.scatter_sub(
                    tf.IndexedSlices(LEARNING_RATE * grad.values, grad.indices)))
            else:
                updates.append(variable.assign_sub(LEARNING_RATE * grad))
        with tf.control_dependencies(updates):
            global_step.assign_add(1)
            return tf.identity(loss)

    @tf.function
    def closure(iterator, num_steps):
        loss = tf.constant(0.0)
        for _ in tf.range(num_steps):
            loss = strategy.run(step, args=next(iterator))
        return loss

    dataset = coordinator.create_per_worker_dataset(lambda: make_dataset(tf, args.batch))
    iterator = iter(dataset)

    def train(steps):
        scheduled = []
        remaining = steps
        while remaining > 0:
            size = min(args.steps_per_closure, remaining)
            scheduled.append(coordinator.schedule(closure, args=(iterator, tf.constant(size))))
            remaining -= size
        coordinator.join()
        return scheduled[-1].fetch()

    return time_calls(args, train)


def run_chief(args):
    load_before = os.getloadavg()[0]
    seconds = (run_ours if args.role == "ours" else run_hand_written)(args)
    with open(args.result, "w", encoding="utf-8") as f:
        json.dump({"seconds": seconds, "load": [load_before, os.getloadavg()[0]]}, f)


# -- the parent: start the clusters, report ---------------------------------------------------
def free_port():
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_cluster(args, side, num_workers, out_dir):
    """Starts 2 ps, `num_workers` workers and the chief of `side`; returns the chief's result.
    Every process is killed before returning."""
    cluster = {"chief": [f"127.0.0.1:{free_port()}"],
               "worker": [f"127.0.0.1:{free_port()}" for _ in range(num_workers)],
               "ps": [f"127.0.0.1:{free_port()}" for _ in range(2)]}
    tag = f"{side}_{num_workers}w"
    result = os.path.join(out_dir, f"{tag}.json")
    tasks = [("ps", 0), ("ps", 1)] + [("worker", i) for i in range(num_workers)] + [("chief", 0)]
    procs = []
    try:
        for task_type, index in tasks:
            env = dict(os.environ, PYTHONUNBUFFERED="1", TF_CONFIG=json.dumps(
                {"cluster": cluster, "task": {"type": task_type, "index": index}}))
            env.pop("TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES", None)
            role = side if task_type == "chief" else "server"
            log_path = os.path.join(out_dir, f"{tag}_{task_type}{index}.log")
            log = open(log_path, "w", encoding="utf-8")  # pylint: disable=consider-using-with
            procs.append((subprocess.Popen(  # pylint: disable=consider-using-with
                [sys.executable, os.path.abspath(__file__), "--role", role, "--result", result,
                 "--steps", str(args.steps), "--batch", str(args.batch),
                 "--steps_per_closure", str(args.steps_per_closure),
                 "--repeats", str(args.repeats)],
                env=env, stdout=log, stderr=subprocess.STDOUT), log, log_path))
        chief, _, chief_log = procs[-1]
        try:
            code = chief.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            code = f"timeout after {args.timeout} s"
        if code != 0:
            with open(chief_log, encoding="utf-8") as f:
                print(f"[{tag}] the chief failed ({code}):\n{f.read()[-3000:]}", flush=True)
            return None
    finally:
        for proc, log, _ in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)
            log.close()
    with open(result, encoding="utf-8") as f:
        return json.load(f)


def report(args, results):
    examples = args.steps * args.batch
    print(f"\nembedding table {VOCABULARY}x{DIMENSION} in 2 parts over 2 ps tasks, batch "
          f"{args.batch} per step, {args.steps} steps per repetition, {args.steps_per_closure} "
          f"steps per closure, {args.repeats} repetitions (median); examples/sec")
    rows = []
    for num_workers in args.workers:
        medians = []
        cells = []
        for side in SIDES:
            result = results.get((side, num_workers))
            if result is None:
                cells += ["failed", "", ""]
                continue
            eps = [examples / s for s in result["seconds"]]
            medians.append(statistics.median(eps))
            cells += [f"{medians[-1]:.0f}", " ".join(f"{e:.0f}" for e in eps),
                      "-".join(f"{v:.1f}" for v in result["load"])]
        ratio = f"{medians[0] / medians[1]:.2f}x" if len(medians) == 2 else ""
        rows.append([str(num_workers)] + cells + [ratio])
    print(_common.format_table(
        ["workers", "ours ex/s", "ours reps", "load", "hand-written ex/s", "hand-written reps",
         "load", "ours / hand-written"], rows))
    print(f"load average (1 min) now {os.getloadavg()[0]:.2f} on {os.cpu_count()} core(s); "
          "the load columns are at the chief's start and end. The chief, the workers and "
          "the parameter servers share the cores: this measures overhead, not a speedup.")


def main(argv=None):
    args = parse_args(argv)
    if args.role == "server":
        run_server()
        return 0
    if args.role:
        run_chief(args)
        return 0
    results = {}
    with tempfile.TemporaryDirectory(prefix="psbench_run_") as out_dir:
        for num_workers in args.workers:
            for side in SIDES:
                print(f"[{side}, {num_workers} worker(s)] starting the cluster, warming up, "
                      "timing...", flush=True)
                results[(side, num_workers)] = run_cluster(args, side, num_workers, out_dir)
    report(args, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
