"""train_and_evaluate's task roles in a TF_CONFIG cluster: the `evaluator` task evaluates every
new checkpoint (start_delay_secs, throttle_secs, exporters after each evaluation, eval_dir
events) and ends after the final step's; the training tasks only train.

In-process tests drive the evaluator's loop with a stand-in clock whose `sleep` lets the
"chief" (a second estimator on the same model_dir) train on; one test runs a chief and an
evaluator as two processes on 127.0.0.1, as the original ran them.
"""
import json
import os
import subprocess
import sys
import time
import types

import pytest

import tpu_estimator_compat as tec
from tests import event_reader
from tests.test_train_and_evaluate import (
    EvalStepHook, RecordingExporter, eval_input_fn, make_estimator, train_input_fn)
from tpu_estimator_compat import train_and_evaluate_tasks as tae_module
from tpu_estimator_compat.state import sharing

pytestmark = pytest.mark.slow  # estimator runs (and processes): seconds each

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASK_SCRIPT = os.path.join(REPO_ROOT, "tests", "evaluator_task_main.py")
RUN_TIMEOUT_SECS = 240
CLUSTER = {"chief": ["127.0.0.1:2222"]}


def set_task(monkeypatch, task_type, index=0):
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": CLUSTER, "task": {"type": task_type, "index": index}}))


class TrainingClock:
    """`time` for the evaluator loop: `sleep` advances a fake clock and lets the chief train
    to the next step of `schedule` (None: no new checkpoint during that sleep)."""

    def __init__(self, chief, schedule):
        self.now, self.sleeps = 1000.0, []
        self._chief, self._schedule = chief, list(schedule)

    def time(self):
        return self.now

    def sleep(self, secs):
        self.sleeps.append(secs)
        self.now += secs
        step = self._schedule.pop(0) if self._schedule else None
        if step is not None:
            self._chief.train(train_input_fn, max_steps=step)


def test_evaluator_task_evaluates_each_new_checkpoint_until_the_final_one(
        tmp_path, one_device, monkeypatch, caplog):
    caplog.set_level("INFO")  # on failure: which checkpoints were restored, and when
    chief = make_estimator(tmp_path, one_device)  # no TF_CONFIG: built before it is set
    set_task(monkeypatch, "evaluator")
    evaluator = make_estimator(tmp_path, one_device)
    assert (evaluator.config.task_type, evaluator.config.is_chief) == ("evaluator", False)
    clock = TrainingClock(chief, schedule=[4, None, 8, 12])
    monkeypatch.setattr(tae_module, "time", types.SimpleNamespace(time=clock.time,
                                                                  sleep=clock.sleep))
    hook, exporter = EvalStepHook(), RecordingExporter()
    returned = tec.train_and_evaluate(
        evaluator, tec.TrainSpec(train_input_fn, max_steps=12),
        tec.EvalSpec(eval_input_fn, steps=None, hooks=[hook], exporters=exporter,
                     start_delay_secs=30, throttle_secs=10))
    assert returned is None  # as the original's distributed roles
    # start delay; then a throttle wait after each pass but the last (the one of step 12)
    assert clock.sleeps == [30, 10, 10, 10]
    export_path = os.path.join(str(tmp_path), "export", "recording")
    # each new checkpoint once, the unchanged one skipped (the log says what was restored)
    assert (hook.steps, exporter.calls) == ([4, 8, 12], [
        ("model.ckpt-4", False, 4, export_path), ("model.ckpt-8", False, 8, export_path),
        ("model.ckpt-12", True, 12, export_path)]), caplog.text
    scalars = event_reader.read_scalars(evaluator.eval_dir())
    assert [step for step, _ in scalars["mae"]] == [4, 8, 12]


def test_evaluator_task_waits_for_a_first_checkpoint(tmp_path, one_device, monkeypatch):
    chief = make_estimator(tmp_path, one_device)
    set_task(monkeypatch, "evaluator")
    evaluator = make_estimator(tmp_path, one_device)
    clock = TrainingClock(chief, schedule=[None, 12])
    monkeypatch.setattr(tae_module, "time", types.SimpleNamespace(time=clock.time,
                                                                  sleep=clock.sleep))
    exporter = RecordingExporter()
    tec.train_and_evaluate(evaluator, tec.TrainSpec(train_input_fn, max_steps=12),
                           tec.EvalSpec(eval_input_fn, exporters=exporter, start_delay_secs=0,
                                        throttle_secs=5))
    assert clock.sleeps == [5, 5]  # no checkpoint, still none, then the final one
    assert [call[:3] for call in exporter.calls] == [("model.ckpt-12", True, 12)]


def test_chief_in_a_cluster_trains_only(tmp_path, one_device, monkeypatch):
    set_task(monkeypatch, "chief")
    hook, exporter = EvalStepHook(), RecordingExporter()
    estimator = make_estimator(tmp_path, one_device)
    assert tec.train_and_evaluate(
        estimator, tec.TrainSpec(train_input_fn, max_steps=8),
        tec.EvalSpec(eval_input_fn, hooks=[hook], exporters=exporter, throttle_secs=0)) is None
    assert estimator.get_variable_value("global_step") == 8
    assert (hook.steps, exporter.calls) == ([], [])
    assert not os.path.exists(estimator.eval_dir())


def test_master_in_a_cluster_trains_and_evaluates(tmp_path, one_device, monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": {"master": ["127.0.0.1:2222"]}, "task": {"type": "master", "index": 0}}))
    hook = EvalStepHook()
    assert tec.train_and_evaluate(
        make_estimator(tmp_path, one_device), tec.TrainSpec(train_input_fn, max_steps=8),
        tec.EvalSpec(eval_input_fn, hooks=[hook], throttle_secs=0)) is None
    assert hook.steps == [4, 8]


def test_only_one_evaluator_task(tmp_path, monkeypatch):
    set_task(monkeypatch, "evaluator", index=1)
    estimator = tec.Estimator(lambda features: None, model_dir=str(tmp_path))
    with pytest.raises(ValueError, match=r"For distributed training, there can only be one "
                                         r"`evaluator` task \(with task id 0\).  Given task id 1"):
        tec.train_and_evaluate(estimator, tec.TrainSpec(train_input_fn),
                               tec.EvalSpec(eval_input_fn))


def _start(task_type, model_dir, out_dir):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1", TF_CONFIG=json.dumps(
        {"cluster": CLUSTER, "task": {"type": task_type, "index": 0}}))
    env.pop("TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES", None)
    log = open(os.path.join(out_dir, f"{task_type}.log"), "w", encoding="utf-8")  # pylint: disable=consider-using-with
    proc = subprocess.Popen(  # pylint: disable=consider-using-with
        [sys.executable, TASK_SCRIPT, str(model_dir), os.path.join(out_dir, f"{task_type}.json")],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO_ROOT)
    return proc, log


def test_chief_and_evaluator_processes(tmp_path):
    """A chief and an evaluator on 127.0.0.1 (use_tpu=False), as the original runs them."""
    model_dir, out_dir = tmp_path / "model", str(tmp_path)
    started = [_start("evaluator", model_dir, out_dir), _start("chief", model_dir, out_dir)]
    try:
        deadline = time.time() + RUN_TIMEOUT_SECS
        for proc, _ in started:
            assert proc.wait(timeout=max(1.0, deadline - time.time())) == 0, open(
                proc.args[-1].replace(".json", ".log"), encoding="utf-8").read()[-3000:]
    finally:
        for proc, log in started:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
            log.close()
    results = {}
    for task_type in ("chief", "evaluator"):
        with open(os.path.join(out_dir, f"{task_type}.json"), encoding="utf-8") as f:
            results[task_type] = json.load(f)
    assert results["chief"] == {"task": "chief", "returned": "None", "exports": []}
    evaluator = results["evaluator"]
    assert evaluator["returned"] == "None"
    steps = [call[2] for call in evaluator["exports"]]
    # The checkpoints it found new (timing decides which), each once, the final one last.
    assert steps == sorted(set(steps)) and steps[-1] == 8
    assert [call[1] for call in evaluator["exports"]] == [False] * (len(steps) - 1) + [True]
    assert all(call[0] == f"model.ckpt-{call[2]}" for call in evaluator["exports"])
    scalars = event_reader.read_scalars(os.path.join(str(model_dir), "eval"))
    assert [step for step, _ in scalars["mae"]] == steps


def test_evaluator_task_goes_on_when_a_checkpoint_is_deleted_before_it_is_evaluated(
        tmp_path, one_device, monkeypatch, caplog):
    chief = make_estimator(tmp_path, one_device)
    set_task(monkeypatch, "evaluator")
    evaluator = make_estimator(tmp_path, one_device)
    clock = TrainingClock(chief, schedule=[4, 12])
    monkeypatch.setattr(tae_module, "time", types.SimpleNamespace(time=clock.time,
                                                                  sleep=clock.sleep))
    evaluate, deleted = evaluator.evaluate, []

    def deleted_once(*args, checkpoint_path=None, **kwargs):
        if not deleted:  # the trainer's retention removed it while it was read
            deleted.append(checkpoint_path)
            raise sharing.CheckpointDeletedError([checkpoint_path])
        return evaluate(*args, checkpoint_path=checkpoint_path, **kwargs)

    monkeypatch.setattr(evaluator, "evaluate", deleted_once)
    exporter = RecordingExporter()
    caplog.set_level("WARNING")
    tec.train_and_evaluate(evaluator, tec.TrainSpec(train_input_fn, max_steps=12),
                           tec.EvalSpec(eval_input_fn, exporters=exporter, start_delay_secs=0,
                                        throttle_secs=5))
    assert deleted == [os.path.join(str(tmp_path), "model.ckpt-4")]
    assert (f"Checkpoint {deleted[0]} was deleted by the trainer's retention before it could "
            "be evaluated") in caplog.text
    assert [call[:3] for call in exporter.calls] == [("model.ckpt-4", False, 4),
                                                     ("model.ckpt-12", True, 12)]
