"""Parameter-server training (TF_CONFIG with `ps` tasks) on ParameterServerStrategy.

The cluster test starts a chief, 2 workers, 2 parameter servers and an evaluator of
`parameter_server_main.py` on 127.0.0.1 (free ports from binding port 0), every wait
bounded and every process killed in `finally`; the other tests check the cluster rules in
this process.
"""
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
from tpu_estimator_compat.engine import runtime as runtime_lib
from tpu_estimator_compat.state import sharing
from tests import event_reader
from tests import parameter_server_main as program
from tests.test_multi_worker import free_port

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASK_SCRIPT = os.path.join(REPO_ROOT, "tests", "parameter_server_main.py")
RUN_TIMEOUT_SECS = 420
TASKS = [("ps", 0), ("ps", 1), ("worker", 0), ("worker", 1), ("evaluator", 0), ("chief", 0)]


def _config(monkeypatch, tmp_path, cluster, task_type="chief"):
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": cluster, "task": {"type": task_type, "index": 0}}))
    return tec.RunConfig(model_dir=str(tmp_path))


def test_a_parameter_server_cluster_needs_a_chief(monkeypatch, tmp_path):
    config = _config(monkeypatch, tmp_path, {
        "worker": ["127.0.0.1:1", "127.0.0.1:2"], "ps": ["127.0.0.1:3"]}, "worker")
    with pytest.raises(ValueError, match=r"jobs \['ps', 'worker'\]\. Parameter-server training "
                                         r"runs on TensorFlow 2's ParameterServerStrategy, which "
                                         r"needs one 'chief' task"):
        runtime_lib.select_runtime(config, use_tpu=False, distribute=None, training=True)


def test_parameter_servers_train_use_tpu_false_only(monkeypatch, tmp_path):
    config = _config(monkeypatch, tmp_path, {
        "chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"], "ps": ["127.0.0.1:3"]})
    with pytest.raises(ValueError, match=r"train a TPUEstimator only with use_tpu=False"):
        runtime_lib.select_runtime(config, use_tpu=True, distribute=None, training=True)
    assert not runtime_lib.is_multi_worker_cluster(config)  # not the all-reduce runtime


def test_the_chief_evaluates_on_one_device(monkeypatch, tmp_path):
    config = _config(monkeypatch, tmp_path, {
        "chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"], "ps": ["127.0.0.1:3"]})
    runtime = runtime_lib.select_runtime(config, use_tpu=False, distribute=None)
    assert isinstance(runtime.strategy, tf.distribute.OneDeviceStrategy)
    assert runtime.coordinator is None


def _cluster():
    return {"chief": [f"127.0.0.1:{free_port()}"],
            "worker": [f"127.0.0.1:{free_port()}" for _ in range(2)],
            "ps": [f"127.0.0.1:{free_port()}" for _ in range(2)]}


def _wait(started, out_dir, deadline):
    for name, proc, _ in started:
        code = proc.wait(timeout=max(1.0, deadline - time.time()))
        with open(os.path.join(out_dir, f"{name}.log"), encoding="utf-8") as f:
            assert code == 0, f.read()[-3000:]


def _kill_all(started):
    for _, proc, log in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        log.close()


def _start(task_type, index, cluster, model_dir, out_dir, *args, name=None):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1", TF_CONFIG=json.dumps(
        {"cluster": cluster, "task": {"type": task_type, "index": index}}))
    env.pop("TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES", None)
    name = name or f"{task_type}{index}"
    log = open(os.path.join(out_dir, f"{name}.log"), "w", encoding="utf-8")  # pylint: disable=consider-using-with
    proc = subprocess.Popen(  # pylint: disable=consider-using-with
        [sys.executable, TASK_SCRIPT, str(model_dir), os.path.join(out_dir, f"{name}.json"),
         *map(str, args)],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO_ROOT)
    return name, proc, log


def _training_past_step_20(model_dir, out_dir, max_steps):
    """Starts the cluster without its evaluator, training to `max_steps`, and returns once
    the checkpoint of step 20 exists: (cluster, started, estimator, deadline)."""
    cluster = _cluster()
    started = [_start(task_type, index, cluster, model_dir, out_dir, max_steps)
               for task_type, index in TASKS if task_type != "evaluator"]
    estimator = dict(program.estimators(str(model_dir)))["estimator"]
    deadline = time.time() + RUN_TIMEOUT_SECS
    try:
        while (sharing.latest_step(estimator.model_dir) or 0) < 20:
            assert time.time() < deadline and all(p.poll() is None for _, p, _ in started)
            time.sleep(0.2)
    except BaseException:
        _kill_all(started)
        raise
    return cluster, started, estimator, deadline


def _retire(entry, started):
    """Waits for a killed or failed task's process and closes its log."""
    started.remove(entry)
    entry[1].wait(timeout=30)
    entry[2].close()


def _restart_and_wait(tasks, cluster, started, model_dir, out_dir, max_steps, deadline):
    """Starts `tasks` ((type, index) pairs) again with the same TF_CONFIG, logging to
    '<type><index>_restarted.log', and waits for every started task to end."""
    for task_type, index in tasks:
        started.append(_start(task_type, index, cluster, model_dir, out_dir, max_steps,
                              name=f"{task_type}{index}_restarted"))
    _wait(started, out_dir, deadline)


def _assert_the_restarted_chief_resumed(estimator, out_dir, killed_at, max_steps):
    """The restarted chief restored the checkpoint of `killed_at` and trained to max_steps."""
    with open(os.path.join(out_dir, "chief0_restarted.log"), encoding="utf-8") as f:
        assert f"Restoring parameters from {estimator.model_dir}/model.ckpt-{killed_at}" in (
            f.read())
    assert estimator.latest_checkpoint().endswith(f"model.ckpt-{max_steps}")
    assert estimator.get_variable_value("global_step") == max_steps


def _run_cluster(model_dir, out_dir):
    cluster = _cluster()
    started = [_start(task_type, index, cluster, model_dir, out_dir)
               for task_type, index in TASKS]
    try:
        _wait(started, out_dir, time.time() + RUN_TIMEOUT_SECS)
    finally:
        _kill_all(started)
    results = {}
    for name, _, _ in started:
        with open(os.path.join(out_dir, f"{name}.json"), encoding="utf-8") as f:
            results[name] = json.load(f)
    with open(os.path.join(out_dir, "chief0.log"), encoding="utf-8") as f:
        return results, f.read()


def _tf1_restored_table(checkpoint, parts):
    """The embedding table as TF1 code reads it: `get_variable` partitioned into `parts`,
    restored by a `tf.compat.v1.train.Saver`."""
    with tf.Graph().as_default():
        with tf.compat.v1.variable_scope(
                "model", partitioner=tf.compat.v1.fixed_size_partitioner(parts)):
            table = tf.compat.v1.get_variable(
                "embedding", [program.VOCABULARY, program.DIMENSION])
        saver = tf.compat.v1.train.Saver(tf.compat.v1.global_variables())
        with tf.compat.v1.Session() as session:
            saver.restore(session, checkpoint)
            return session.run(tf.concat(list(table), axis=0))


@pytest.mark.slow
def test_chief_workers_parameter_servers_and_evaluator(tmp_path):
    """Both estimators train to max_steps on the cluster, with their embedding table's two
    parts on the two parameter servers and the chief's hooks; the checkpoints have TF1's
    layout and restore in one process; the evaluator evaluated the final step."""
    model_dir, out_dir = tmp_path / "model", str(tmp_path)
    results, chief_log = _run_cluster(model_dir, out_dir)
    for task, result in results.items():
        # The chief's hooks run once per round of log_step_count_steps (5, the smallest
        # interval) steps; the other tasks serve (worker, ps) or evaluate, and call none.
        steps = [5, 10, 15, 20, 25, 30] if task == "chief0" else []
        assert result == {name: {"returned": "None", "hook_steps": steps}
                          for name in ("estimator", "tpu_estimator")}, task
    placement = re.findall(r"Variable model/embedding/part_(\d) is on /job:ps/replica:0/task:(\d)",
                           chief_log)
    assert [part for part, _ in placement] == ["0", "1", "0", "1"]  # one pair per estimator
    for first, second in (placement[:2], placement[2:]):
        assert {first[1], second[1]} == {"0", "1"}  # the table spans both parameter servers
    for name, estimator in program.estimators(str(model_dir)):
        checkpoint = estimator.latest_checkpoint()
        assert checkpoint.endswith(f"model.ckpt-{program.MAX_STEPS}"), name
        state = tf.train.get_checkpoint_state(estimator.model_dir)
        steps = sorted(int(path.rsplit("-", 1)[1]) for path in state.all_model_checkpoint_paths)
        assert steps == [0, 10, 20, 30], name
        # One global step per step a worker ran, and no step past max_steps.
        assert estimator.get_variable_value("steps_run") == program.MAX_STEPS, name
        shapes = dict(tf.train.list_variables(checkpoint))
        assert shapes["model/embedding"] == [program.VOCABULARY, program.DIMENSION], name
        assert not [n for n in shapes if "part_" in n], name
        table = estimator.get_variable_value("model/embedding")
        assert not np.allclose(table, 0.5), name  # trained
        np.testing.assert_array_equal(_tf1_restored_table(checkpoint, 2), table)
        np.testing.assert_array_equal(_tf1_restored_table(checkpoint, 3), table)
        # The evaluator's results for the final step are this checkpoint's, evaluated here.
        scalars = event_reader.read_scalars(estimator.eval_dir())
        final_step, final_loss = scalars["loss"][-1]
        assert final_step == program.MAX_STEPS, name
        here = estimator.evaluate(program.input_fn, steps=2)
        assert here["global_step"] == program.MAX_STEPS
        assert here["loss"] == pytest.approx(final_loss, rel=1e-6), name
        assert final_loss < scalars["loss"][0][1], name  # it learned


@pytest.mark.slow
def test_a_killed_worker_that_returns_loses_no_step(tmp_path):
    """A worker SIGKILLed after the checkpoint of step 20 and restarted: TensorFlow's
    coordinator runs its steps on the other worker, the restarted one rejoins, and training
    ends at max_steps with every task's train_and_evaluate returning."""
    model_dir, out_dir, max_steps = tmp_path / "model", str(tmp_path), 1000
    cluster, started, estimator, deadline = _training_past_step_20(
        model_dir, out_dir, max_steps)
    try:
        victim = next(entry for entry in started if entry[0] == "worker1")
        victim[1].kill()
        _retire(victim, started)
        _restart_and_wait([("worker", 1)], cluster, started, model_dir, out_dir, max_steps,
                          deadline)
    finally:
        _kill_all(started)
    assert estimator.latest_checkpoint().endswith(f"model.ckpt-{max_steps}")
    assert estimator.get_variable_value("global_step") == max_steps
    with open(os.path.join(out_dir, "worker1_restarted.log"), encoding="utf-8") as f:
        assert "Started the worker 1 server of parameter-server training" in f.read()
    assert estimator.evaluate(program.input_fn, steps=2)["global_step"] == max_steps


@pytest.mark.slow
def test_a_killed_parameter_server_then_restarted_with_the_chief_resumes(tmp_path):
    """A parameter server SIGKILLed after the checkpoint of step 20: the chief fails saying
    what to restart; the parameter server and the chief restarted with the same TF_CONFIG
    resume from the last checkpoint to max_steps while the workers kept serving."""
    model_dir, out_dir, max_steps = tmp_path / "model", str(tmp_path), 300
    cluster, started, estimator, deadline = _training_past_step_20(
        model_dir, out_dir, max_steps)
    try:
        ps1, chief = (next(e for e in started if e[0] == name) for name in ("ps1", "chief0"))
        ps1[1].kill()
        assert chief[1].wait(timeout=max(1.0, deadline - time.time())) != 0
        killed_at = sharing.latest_step(estimator.model_dir)
        assert killed_at < max_steps
        for entry in (ps1, chief):
            _retire(entry, started)
        with open(os.path.join(out_dir, "chief0.log"), encoding="utf-8") as f:
            assert ("WorkerFailureError: Training on parameter servers stopped: a parameter "
                    "server (or this chief's connection to the cluster) failed") in f.read()
        _restart_and_wait([("ps", 1), ("chief", 0)], cluster, started, model_dir, out_dir,
                          max_steps, deadline)
    finally:
        _kill_all(started)
    _assert_the_restarted_chief_resumed(estimator, out_dir, killed_at, max_steps)


@pytest.mark.slow
def test_a_killed_chief_restarted_resumes_from_its_last_checkpoint(tmp_path):
    """The chief SIGKILLed after the checkpoint of step 20 and restarted with the same
    TF_CONFIG: the workers and parameter servers kept serving, and the new chief resumes
    from the last checkpoint to max_steps."""
    model_dir, out_dir, max_steps = tmp_path / "model", str(tmp_path), 300
    cluster, started, estimator, deadline = _training_past_step_20(
        model_dir, out_dir, max_steps)
    try:
        chief = next(entry for entry in started if entry[0] == "chief0")
        chief[1].kill()
        _retire(chief, started)
        killed_at = sharing.latest_step(estimator.model_dir)
        assert killed_at < max_steps
        _restart_and_wait([("chief", 0)], cluster, started, model_dir, out_dir, max_steps,
                          deadline)
    finally:
        _kill_all(started)
    _assert_the_restarted_chief_resumed(estimator, out_dir, killed_at, max_steps)
