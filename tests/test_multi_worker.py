"""Multi-worker training on TensorFlow's distributed runtime (MultiWorkerMirroredStrategy).

The multi-process tests start two workers of `multi_worker_main.py` on 127.0.0.1, each with its
own TF_CONFIG (free ports from binding port 0), and compare them with one process training on
the same global batch. Every wait is bounded and every worker is killed in `finally`.
"""
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
from tpu_estimator_compat.engine import batching
from tpu_estimator_compat.state import checkpoints
from tests import multi_worker_main as worker

pytestmark = pytest.mark.slow  # estimator runs (and processes): seconds each

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER_SCRIPT = os.path.join(REPO_ROOT, "tests", "multi_worker_main.py")
RUN_TIMEOUT_SECS = 240
FAILURE_DETECTION_LIMIT_SECS = 60


# -- helpers --------------------------------------------------------------------------------

def free_port():
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tf_config(cluster, index):
    return json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})


class Workers:
    """Two worker processes of one cluster; logs and results under `out_dir`."""

    def __init__(self, out_dir, run, model_dir, *args):
        self.out_dir = out_dir
        cluster = {"worker": [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]}
        self.procs, self._logs = [], []
        for index in range(2):
            env = dict(os.environ, TF_CONFIG=tf_config(cluster, index), TF_CPP_MIN_LOG_LEVEL="2",
                       TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES="1", PYTHONUNBUFFERED="1")
            log = open(self.log_path(index), "w", encoding="utf-8")  # pylint: disable=consider-using-with
            self._logs.append(log)
            self.procs.append(subprocess.Popen(  # pylint: disable=consider-using-with
                [sys.executable, WORKER_SCRIPT, run, str(model_dir), self.result_path(index),
                 *map(str, args)],
                env=env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO_ROOT))

    def log_path(self, index):
        return os.path.join(self.out_dir, f"worker{index}.log")

    def result_path(self, index):
        return os.path.join(self.out_dir, f"worker{index}.json")

    def log(self, index):
        with open(self.log_path(index), encoding="utf-8") as f:
            return f.read()

    def result(self, index):
        with open(self.result_path(index), encoding="utf-8") as f:
            return json.load(f)

    def wait_all(self, timeout):
        deadline = time.time() + timeout
        codes = []
        for index, proc in enumerate(self.procs):
            try:
                codes.append(proc.wait(timeout=max(1.0, deadline - time.time())))
            except subprocess.TimeoutExpired:
                pytest.fail(f"worker {index} still running after {timeout} s:\n"
                            f"{self.log(index)[-3000:]}")
        return codes

    def kill_all(self):
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)
        for log in self._logs:
            log.close()


@contextlib.contextmanager
def two_workers(out_dir, run, model_dir, *args):
    os.makedirs(out_dir, exist_ok=True)
    workers = Workers(out_dir, run, model_dir, *args)
    try:
        yield workers
    finally:
        workers.kill_all()


def weights(model_dir):
    reader = checkpoints.open_reader(str(model_dir))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def assert_same_weights(actual, expected):
    assert sorted(actual) == sorted(expected)
    for name in expected:
        np.testing.assert_allclose(actual[name], expected[name], atol=1e-5, rtol=0, err_msg=name)


def wait_for(condition, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")
    return None


def latest_step(model_dir):
    try:
        latest = checkpoints.latest_checkpoint(str(model_dir))
    except ValueError:  # the state file is being replaced: read it again
        return None
    return int(latest.rsplit("-", 1)[1]) if latest else None


def writer_pids(directory):
    """The pids in the names of the event files under `directory`
    (events.out.tfevents.<time>.<host>.<pid>.<n>.v2)."""
    pids = set()
    for root, _, files in os.walk(directory):
        for name in files:
            match = re.match(r"events\.out\.tfevents\.\d+\.(.+)\.(\d+)\.\d+\.v2$", name)
            if match:
                pids.add(int(match.group(2)))
    return pids


# -- in-process -----------------------------------------------------------------------------

class _Runtime:
    def __init__(self, num_replicas, num_hosts):
        self.strategy = None
        self.tpu_semantics = True
        self.num_replicas, self.num_hosts = num_replicas, num_hosts
        self.replicas_per_host = num_replicas // num_hosts


@pytest.mark.parametrize("mode, input_mode, ok", [
    (tec.ModeKeys.EVAL, tec.InputPipelineConfig.PER_HOST_V2, True),
    (tec.ModeKeys.EVAL, tec.InputPipelineConfig.BROADCAST, True),
    (tec.ModeKeys.EVAL, tec.InputPipelineConfig.PER_HOST_V1, False),
    (tec.ModeKeys.EVAL, tec.InputPipelineConfig.PER_SHARD_V1, False),
    (tec.ModeKeys.PREDICT, tec.InputPipelineConfig.BROADCAST, True),
    (tec.ModeKeys.PREDICT, tec.InputPipelineConfig.PER_HOST_V2, False),  # 2 replicas
])
def test_multi_host_evaluate_and_predict_need_the_originals_input_modes(mode, input_mode, ok):
    tpu_config = tec.TPUConfig(per_host_input_for_training=input_mode)
    plan = lambda: batching.plan_batches(16, mode, _Runtime(2, 2), tpu_config)  # noqa: E731
    if ok:
        assert plan().model_fn_batch_size == (16 if input_mode == 4 else 8)
    else:
        method = "evaluate" if mode == tec.ModeKeys.EVAL else "predict"
        with pytest.raises(ValueError, match=f"TPUEstimator.{method} is only supported under "
                                             "three conditions: 1. num_hosts=1"):
            plan()
    # One host: every mode is allowed, as in the original.
    batching.plan_batches(16, mode, _Runtime(2, 1), tpu_config)


def test_per_shard_input_fn_calls_are_numbered_across_replicas(tmp_path, eight_devices):
    seen = []

    def input_fn(params):
        context = params["context"]
        seen.append((context.current_host,) + tuple(context.current_input_fn_deployment()[1:]))
        return worker.train_input_fn({"batch_size": params["batch_size"]})

    config = tec.RunConfig(
        model_dir=str(tmp_path), train_distribute=eight_devices,
        tpu_config=tec.TPUConfig(iterations_per_loop=1, per_host_input_for_training=False))
    tec.TPUEstimator(worker.model_fn, config=config, train_batch_size=16).train(input_fn, steps=1)
    assert seen == [(0, index, 8, 1) for index in range(8)]


def test_multi_worker_tf_config_after_tensorflow_started_explains_the_fix(monkeypatch, tmp_path):
    tf.constant(1.0) + 1.0  # this process's TensorFlow has started (as in any test run)
    monkeypatch.setenv("TF_CONFIG", tf_config(
        {"worker": [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]}, 0))
    estimator = tec.TPUEstimator(worker.model_fn, use_tpu=False, train_batch_size=8,
                                 config=tec.RunConfig(model_dir=str(tmp_path)))
    with pytest.raises(RuntimeError, match=r"multi_worker_strategy\(\) at the start"):
        estimator.train(worker.train_input_fn, steps=1)
    assert not os.listdir(tmp_path)


def test_a_non_chief_worker_writes_nothing_into_model_dir(monkeypatch, tmp_path, one_device):
    model_dir = tmp_path / "model"
    worker.make_estimator(str(model_dir), strategy=one_device).train(
        worker.train_input_fn, steps=2)
    before = {path: os.stat(os.path.join(root, path)).st_mtime_ns
              for root, _, files in os.walk(model_dir) for path in files}
    monkeypatch.setenv("TF_CONFIG", tf_config({"worker": ["127.0.0.1:1", "127.0.0.1:2"]}, 1))
    estimator = worker.make_estimator(str(model_dir), strategy=one_device,
                                      params={"with_host_call": True})
    assert not estimator.config.is_chief
    estimator.train(worker.train_input_fn, steps=2)
    estimator.evaluate(worker.eval_input_fn)
    export = estimator.export_saved_model(str(model_dir / "export"),
                                          worker.serving_input_receiver_fn)
    after = {path: os.stat(os.path.join(root, path)).st_mtime_ns
             for root, _, files in os.walk(model_dir) for path in files}
    assert after == before
    assert not os.path.exists(export)  # the temporary export was removed


# -- two worker processes -------------------------------------------------------------------

def test_two_workers_train_evaluate_and_export_like_one_process(tmp_path, one_device):
    model_dir = tmp_path / "model"
    with two_workers(str(tmp_path / "run"), "main", model_dir) as workers:
        codes = workers.wait_all(RUN_TIMEOUT_SECS)
        assert codes == [0, 0], workers.log(0)[-3000:] + workers.log(1)[-3000:]
        chief, other = workers.result(0), workers.result(1)
    assert (chief["is_chief"], other["is_chief"]) == (True, False)

    # Per-host input: one input_fn call per host, per-replica batch, host facts in the context.
    for index, result in enumerate([chief, other]):
        assert result["contexts"] == [{"batch_size": 8, "num_hosts": 2, "num_replicas": 2,
                                       "current_host": index, "deployment": [index, 2, 1]}]
        assert result["input_contexts"] == [[2, index]]  # CPU/GPU semantics: input_context

    # Same weights as one process on the same global batch (TPU and CPU/GPU semantics).
    reference = worker.make_estimator(str(tmp_path / "one"), strategy=one_device)
    reference.train(worker.train_input_fn, steps=worker.MAIN_STEPS)
    assert_same_weights(weights(model_dir), weights(tmp_path / "one"))
    assert not np.allclose(weights(model_dir)["linear/w"], 0.5), "training did not move w"
    cpu_reference = worker.make_estimator(str(tmp_path / "one_cpu"), use_tpu=False, num_workers=1)
    cpu_reference.train(worker.train_input_fn, steps=worker.MAIN_STEPS)
    assert_same_weights(weights(model_dir / "cpu"), weights(tmp_path / "one_cpu"))

    # Evaluation across workers: the same results on both, the metrics of one process.
    assert chief["eval"] == other["eval"]
    expected = reference.evaluate(worker.eval_input_fn)
    for name in ("mae", "mean_label"):
        np.testing.assert_allclose(chief["eval"][name], expected[name], rtol=1e-5, err_msg=name)
    np.testing.assert_allclose(chief["eval"]["mean_label"],
                               worker.TARGETS[:worker.NUM_EVAL_EXAMPLES].mean(), rtol=1e-5)
    assert chief["eval"]["global_step"] == worker.MAIN_STEPS

    # Only the chief wrote into model_dir: its event files (training, host_call, eval), its
    # checkpoints and export; the other worker's export went to a removed temporary directory.
    assert writer_pids(model_dir) == {workers.procs[0].pid}
    for directory in ("", "eval", "host_call", "cpu"):
        assert writer_pids(model_dir / directory) == {workers.procs[0].pid}, directory
    assert os.listdir(model_dir / "export") == [os.path.basename(chief["export"])]
    assert not os.path.exists(other["export"])
    assert not [name for name in os.listdir(model_dir) if "_temp_" in name]
    assert latest_step(model_dir) == worker.MAIN_STEPS


def test_two_workers_sum_gradients_before_an_optimizer_that_assigns(tmp_path):
    """BERT's route on two workers (one replica each): CrossShardOptimizer sums the workers'
    gradients, then the wrapped optimizer's own apply_gradients assigns. TF1's arithmetic:
    each host's batch is 8 rows of its shard (rows h, h+2, ...); d loss / d w is the batch's
    mean row, summed over the hosts, so w = 0.5 - 0.1 * (sum of both hosts' batch means)."""
    model_dir = tmp_path / "model"
    with two_workers(str(tmp_path / "run"), "assigns", model_dir) as workers:
        codes = workers.wait_all(RUN_TIMEOUT_SECS)
        assert codes == [0, 0], workers.log(0)[-3000:] + workers.log(1)[-3000:]
    per_host = worker.GLOBAL_BATCH // 2
    gradient = sum(
        worker.FEATURES[host::2][step * per_host:(step + 1) * per_host].mean(axis=0)
        for host in (0, 1) for step in range(worker.ASSIGNS_STEPS))
    expected = 0.5 - worker.ASSIGNS_LEARNING_RATE * gradient[:, np.newaxis]
    np.testing.assert_allclose(weights(model_dir)["w"], expected, rtol=1e-6, atol=1e-6)
    assert latest_step(model_dir) == worker.ASSIGNS_STEPS


_TWO_REPLICA_EMBEDDINGS = """
import sys
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
sys.path[:0] = [".", "tests"]
from tests import multi_worker_main as worker
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
estimator = worker.make_embedding_estimator(sys.argv[1], strategy)
estimator.train(worker.embedding_input_fn, steps=worker.EMBEDDING_STEPS)
"""


def test_two_workers_train_tpu_embeddings_like_one_process(tmp_path):
    """Each worker's ids give its replica a different number of gradient rows, changing from
    step to step within a loop: TensorFlow's collective all-gather of such rows fails ("Shape
    mismatch in the collective instance"); the table must train as one process's two
    replicas train it."""
    model_dir = tmp_path / "model"
    with two_workers(str(tmp_path / "run"), "embeddings", model_dir) as workers:
        codes = workers.wait_all(RUN_TIMEOUT_SECS)
        assert codes == [0, 0], workers.log(0)[-3000:] + workers.log(1)[-3000:]
    # One process with two replicas: a fresh one (a collective group of two devices cannot
    # join this process's group of eight).
    subprocess.run([sys.executable, "-c", _TWO_REPLICA_EMBEDDINGS, str(tmp_path / "one")],
                   check=True, timeout=RUN_TIMEOUT_SECS, cwd=REPO_ROOT,
                   env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    trained = weights(model_dir)
    assert_same_weights(trained, weights(tmp_path / "one"))
    table = "input_layer/cat_embedding/embedding_weights"
    assert not np.allclose(trained[table], worker._INITIAL_TABLE), "the table did not train"


@pytest.mark.parametrize("victim", [1, 0], ids=["kill_non_chief", "kill_chief"])
def test_a_killed_worker_stops_the_other_and_a_restart_resumes(victim, tmp_path, one_device):
    model_dir = tmp_path / "model"
    with two_workers(str(tmp_path / "first"), "forever", model_dir) as workers:
        wait_for(lambda: (latest_step(model_dir) or 0) >= 4, RUN_TIMEOUT_SECS,
                 "the chief's checkpoint of step 4")
        survivor = 1 - victim
        os.kill(workers.procs[victim].pid, signal.SIGKILL)
        killed_at = time.time()
        try:
            code = workers.procs[survivor].wait(timeout=FAILURE_DETECTION_LIMIT_SECS)
        except subprocess.TimeoutExpired:
            pytest.fail(f"worker {survivor} still running {FAILURE_DETECTION_LIMIT_SECS} s after "
                        f"worker {victim} was killed:\n{workers.log(survivor)[-3000:]}")
        elapsed = time.time() - killed_at
        log = workers.log(survivor)
        print(f"worker {survivor} exited {elapsed:.1f} s after worker {victim} was killed")
    assert code != 0
    assert elapsed < FAILURE_DETECTION_LIMIT_SECS
    assert "WorkerFailureError" in log and "another worker failed" in log, log[-3000:]
    assert "Restart every worker" in log

    # Restart both: they resume from the chief's last checkpoint and train on together.
    last = wait_for(lambda: latest_step(model_dir), 10, "a readable checkpoint state")
    shutil.copytree(model_dir, tmp_path / "reference")
    target = last + 4
    with two_workers(str(tmp_path / "second"), "resume", model_dir, target) as workers:
        codes = workers.wait_all(RUN_TIMEOUT_SECS)
        assert codes == [0, 0], workers.log(0)[-3000:] + workers.log(1)[-3000:]
        results = [workers.result(0), workers.result(1)]
    expected_start = checkpoints.latest_checkpoint(str(tmp_path / "reference"))
    for result in results:
        assert os.path.basename(result["start_checkpoint"]) == os.path.basename(expected_start)
        assert result["final_step"] == target
    reference = worker.make_estimator(str(tmp_path / "reference"), strategy=one_device)
    reference.train(worker.train_input_fn, max_steps=target)
    assert_same_weights(weights(model_dir), weights(tmp_path / "reference"))


def test_sigterm_to_one_worker_stops_both_after_a_checkpoint(tmp_path):
    model_dir = tmp_path / "model"
    with two_workers(str(tmp_path / "run"), "forever", model_dir) as workers:
        wait_for(lambda: (latest_step(model_dir) or 0) >= 4, RUN_TIMEOUT_SECS,
                 "the chief's checkpoint of step 4")
        os.kill(workers.procs[1].pid, signal.SIGTERM)  # e.g. one worker's VM is preempted
        codes = workers.wait_all(FAILURE_DETECTION_LIMIT_SECS)
        logs = [workers.log(0), workers.log(1)]
    assert codes[0] != 0 and codes[1] != 0
    steps = set()
    for log in logs:
        match = re.search(r"TrainingPreemptedError: Training was preempted \(SIGTERM\) and saved "
                          r"a checkpoint at step (\d+)", log)
        assert match, log[-3000:]
        steps.add(int(match.group(1)))
    assert steps == {latest_step(model_dir)}  # both stopped after the same loop, then saved


def test_a_worker_whose_peer_never_starts_names_it_and_stops_after_the_timeout(tmp_path):
    cluster = {"worker": [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]}
    env = dict(os.environ, TF_CONFIG=tf_config(cluster, 0), TF_CPP_MIN_LOG_LEVEL="2",
               TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES="1", PYTHONUNBUFFERED="1",
               TPU_ESTIMATOR_COMPAT_WORKER_START_TIMEOUT_SECS="3")
    ran = subprocess.run(
        [sys.executable, WORKER_SCRIPT, "main", str(tmp_path / "model"), str(tmp_path / "r.json")],
        env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_SECS, cwd=REPO_ROOT)
    assert ran.returncode != 0
    missing = f"worker 1 ({cluster['worker'][1]})"
    assert f"Waiting for {missing} of TF_CONFIG's cluster to start" in ran.stderr
    assert (f"WorkerStartTimeoutError: Multi-worker training did not start: {missing} of "
            "TF_CONFIG's cluster did not start within 3 s") in ran.stderr
    assert checkpoints.latest_checkpoint(str(tmp_path / "model")) is None
