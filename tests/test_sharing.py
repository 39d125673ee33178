"""A model_dir shared between processes: evaluators beside a trainer, one trainer only."""
import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
from tpu_estimator_compat.export import receivers as tec_export
from tpu_estimator_compat.state import checkpoint_paths
from tpu_estimator_compat.state import checkpoints
from tpu_estimator_compat.state import sharing
from tpu_estimator_compat.state.checkpoints import CheckpointSaver

import train_then_kill

SCRIPT = os.path.join(os.path.dirname(__file__), "train_then_kill.py")
HOLD_LOCK = ("import sys, time; from tpu_estimator_compat.state import sharing; "
             "sharing.TrainerLock(sys.argv[1]).acquire(); print('locked', flush=True); "
             "time.sleep(600)")


def small_variables(value):
    return {"w": tf.Variable(np.full([2], value, np.float32)),
            "global_step": tf.Variable(int(value), dtype=tf.int64)}


def lock_holder(model_dir):
    """A process holding model_dir's lock (it never releases it)."""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(SCRIPT)))
    process = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(model_dir)],
                               stdout=subprocess.PIPE, text=True, env=env)
    assert process.stdout.readline().strip() == "locked"
    return process


@pytest.mark.slow  # trains or evaluates for several seconds
def test_a_live_trainer_on_this_host_keeps_a_second_one_out(tmp_path):
    holder = lock_holder(tmp_path)
    try:
        with pytest.raises(sharing.SecondTrainerError,
                           match=rf"Another trainer \(process {holder.pid} on host .*\) is "
                                 rf"training in model_dir {tmp_path}; nothing was run"):
            sharing.TrainerLock(str(tmp_path)).acquire()
    finally:
        holder.kill()
        holder.wait()
    lock = sharing.TrainerLock(str(tmp_path))  # killed: its lock is stale and taken over
    lock.acquire()
    lock.check()
    lock.release()
    assert not os.path.exists(tmp_path / sharing.LOCK_FILENAME)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_a_killed_trainer_not_yet_reaped_does_not_block_the_next(tmp_path):
    holder = lock_holder(tmp_path)
    holder.send_signal(signal.SIGKILL)
    time.sleep(0.5)  # a zombie until wait(): its pid still answers kill(pid, 0)
    sharing.TrainerLock(str(tmp_path)).acquire()
    holder.wait()


def test_a_trainer_on_another_host_is_taken_over_and_stops_at_its_next_save(tmp_path, caplog):
    first = sharing.TrainerLock(str(tmp_path))
    first.acquire()
    lock_file = tmp_path / sharing.LOCK_FILENAME
    owner = json.loads(lock_file.read_text())
    lock_file.write_text(json.dumps(dict(owner, host="other-host", token="theirs")))
    second = sharing.TrainerLock(str(tmp_path))
    second._me = dict(second._me, pid=owner["pid"] + 1)  # another process
    caplog.set_level("WARNING")
    second.acquire()
    assert f"model_dir {tmp_path} was claimed by a trainer on host other-host" in caplog.text
    with pytest.raises(sharing.SecondTrainerError, match="took over model_dir"):
        first.check()


def test_evaluation_restores_the_newest_checkpoint_when_the_chosen_one_vanishes(
        tmp_path, caplog):
    saver = CheckpointSaver(str(tmp_path), max_to_keep=1)
    saver.save(small_variables(1.0), 1)
    chosen = sharing.choose_checkpoint(None, str(tmp_path))
    saver.save(small_variables(2.0), 2)  # the trainer's retention deletes model.ckpt-1
    restored = small_variables(0.0)
    caplog.set_level("WARNING")
    path = chosen.read(lambda path: checkpoints.restore(restored, path))
    assert path == os.path.join(str(tmp_path), "model.ckpt-2")
    assert restored["w"].numpy().tolist() == [2.0, 2.0]
    assert f"Checkpoint {tmp_path}/model.ckpt-1 was deleted while we read it" in caplog.text


def test_checkpoints_that_keep_vanishing_are_reported_as_deleted_while_read(tmp_path):
    saver = CheckpointSaver(str(tmp_path), max_to_keep=1)
    saver.save(small_variables(1.0), 1)
    chosen = sharing.choose_checkpoint(str(tmp_path), str(tmp_path))
    def restore_while_a_save_deletes_it(path):
        step = int(path.rsplit("-", 1)[1])
        saver.save(small_variables(step + 1.0), step + 1)  # max_to_keep=1: deletes `path`
        checkpoints.restore(small_variables(0.0), path)

    with pytest.raises(sharing.CheckpointDeletedError,
                       match=r"model\.ckpt-1, then .*model\.ckpt-2, then .*model\.ckpt-3 deleted "
                             r"while we read it.*raise the trainer's RunConfig\("
                             r"keep_checkpoint_max"):
        chosen.read(restore_while_a_save_deletes_it)


def test_a_named_checkpoint_that_vanishes_is_reported_as_deleted_while_read(tmp_path):
    saver = CheckpointSaver(str(tmp_path), max_to_keep=1)
    first = saver.save(small_variables(1.0), 1)
    chosen = sharing.choose_checkpoint(first, str(tmp_path))
    saver.save(small_variables(2.0), 2)
    with pytest.raises(sharing.CheckpointDeletedError,
                       match=r"model\.ckpt-1 deleted while we read it.*Pass "
                             r"checkpoint_path=None"):
        chosen.read(lambda path: checkpoints.restore(small_variables(0.0), path))


def test_a_checkpoint_missing_from_the_start_is_not_called_deleted(tmp_path):
    saver = CheckpointSaver(str(tmp_path), max_to_keep=2)
    saver.save(small_variables(1.0), 1)
    latest = saver.save(small_variables(2.0), 2)
    os.remove(latest + ".index")
    chosen = sharing.choose_checkpoint(None, str(tmp_path))
    with pytest.raises(checkpoints.CorruptCheckpointError, match="index file .* is missing"):
        chosen.read(lambda path: checkpoints.restore(small_variables(0.0), path))


def start_trainer(model_dir):
    """train_then_kill.py: a checkpoint every step, keep_checkpoint_max=3, until killed."""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(SCRIPT)))
    process = subprocess.Popen([sys.executable, SCRIPT, str(model_dir)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env=env)
    deadline = time.time() + 120
    while (checkpoint_paths.checkpoint_steps(str(model_dir)) or (0,))[0] < 4:
        if process.poll() is not None or time.time() > deadline:
            process.kill()
            pytest.fail(f"the trainer did not get to step 4:\n{process.stderr.read()}")
        time.sleep(0.2)
    return process


def stop(process):
    process.kill()
    process.wait()


@pytest.mark.slow  # trains or evaluates for several seconds
def test_an_evaluator_beside_a_trainer_evaluates_and_predicts_every_time(tmp_path):
    trainer = start_trainer(tmp_path)
    try:
        evaluator = train_then_kill.make_estimator(tmp_path, use_tpu=False, batch_size=8,
                                                   eval_batch_size=8)
        steps = [evaluator.evaluate(train_then_kill.input_fn, steps=1)["global_step"]
                 for _ in range(8)]
        predictor = train_then_kill.make_estimator(
            tmp_path, model=train_then_kill.w_sum_model_fn, use_tpu=False)
        predictions = [next(predictor.predict(train_then_kill.predict_input_fn))
                       for _ in range(4)]
        assert trainer.poll() is None
    finally:
        stop(trainer)
    assert steps == sorted(steps) and steps[-1] > steps[0] >= 4
    assert len(predictions) == 4


@pytest.mark.slow  # trains or evaluates for several seconds
def test_a_second_trainer_is_stopped_before_it_writes_and_a_killed_one_blocks_nothing(
        tmp_path, eight_devices):
    trainer = start_trainer(tmp_path)
    second = train_then_kill.make_estimator(tmp_path, eight_devices, batch_size=8,
                                            save_checkpoints_steps=1, keep_checkpoint_max=3)
    try:
        with pytest.raises(sharing.SecondTrainerError,
                           match=rf"Another trainer \(process {trainer.pid} on host "):
            second.train(train_then_kill.input_fn, steps=2)
        assert trainer.poll() is None  # the first trainer goes on
        before = checkpoint_paths.checkpoint_steps(str(tmp_path))[0]
        time.sleep(2)
        assert trainer.poll() is None
        assert checkpoint_paths.checkpoint_steps(str(tmp_path))[0] > before
    finally:
        stop(trainer)  # SIGKILL: its lock stays behind, stale
    assert os.path.exists(tmp_path / sharing.LOCK_FILENAME)
    step = int(checkpoints.load_variable(str(tmp_path), "global_step"))
    second.train(train_then_kill.input_fn, steps=2)
    assert int(checkpoints.load_variable(str(tmp_path), "global_step")) == step + 2
    assert not os.path.exists(tmp_path / sharing.LOCK_FILENAME)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_training_already_at_max_steps_skips_without_claiming_model_dir(tmp_path, caplog):
    CheckpointSaver(str(tmp_path)).save(small_variables(4.0), 4)
    holder = lock_holder(tmp_path)  # a trainer is running: claiming would raise
    try:
        estimator = train_then_kill.make_estimator(tmp_path, use_tpu=False, batch_size=8)
        caplog.set_level("INFO")
        assert estimator.train(train_then_kill.input_fn, max_steps=4) is estimator
    finally:
        stop(holder)
    assert "Skipping training since max_steps has already saved." in caplog.text


def retention_on_first_open(monkeypatch, saver, value):
    """Makes a trainer's save (max_to_keep=1: it deletes the latest checkpoint) happen just
    before this process first opens a checkpoint."""
    real_open = checkpoints.open_reader
    saved = []

    def open_after_a_save(path):
        if not saved:  # the trainer runs eagerly, on its own (here: a thread)
            def save():
                variables = value()
                saved.append(saver.save(variables, int(variables["global_step"].numpy())))
            trainer = threading.Thread(target=save)
            trainer.start()
            trainer.join()
        return real_open(path)
    monkeypatch.setattr(checkpoints, "open_reader", open_after_a_save)
    return saved


def test_get_variable_value_beside_retention_reads_the_next_newest(tmp_path, monkeypatch):
    saver = CheckpointSaver(str(tmp_path), max_to_keep=1)
    saver.save(small_variables(1.0), 1)
    estimator = tec.Estimator(train_then_kill.w_sum_model_fn, model_dir=str(tmp_path))
    saved = retention_on_first_open(monkeypatch, saver, lambda: small_variables(2.0))

    assert estimator.get_variable_value("w").tolist() == [2.0, 2.0]
    assert saved == [os.path.join(str(tmp_path), "model.ckpt-2")]


def test_a_checkpoint_deleted_by_retention_is_not_called_corrupt(tmp_path):
    saver = CheckpointSaver(str(tmp_path), max_to_keep=1)
    first = saver.save(small_variables(1.0), 1)
    reader = tf.train.load_checkpoint(first)  # opened before the trainer's next save
    saver.save(small_variables(2.0), 2)
    del reader

    with pytest.raises(sharing.CheckpointDeletedError,
                       match=r"model\.ckpt-1 deleted while we read it: deleted by retention"):
        checkpoints.load_variable(first, "w")
    error = checkpoints.corrupt_error(first, tf.errors.DataLossError(None, None, "truncated"))
    assert isinstance(error, sharing.CheckpointDeletedError)
    assert "deleted by retention" in str(error) and "corrupt" not in str(error)


def linear_w(value):
    return {"linear/w": tf.Variable(np.full([3, 1], value, np.float32)),
            "global_step": tf.Variable(int(value), dtype=tf.int64)}


def test_export_beside_retention_exports_the_next_newest(tmp_path, monkeypatch):
    model_dir = str(tmp_path / "model")
    saver = CheckpointSaver(model_dir, max_to_keep=1)
    saver.save(linear_w(1.0), 1)
    estimator = tec.Estimator(train_then_kill.w_sum_model_fn, model_dir=model_dir)
    saved = retention_on_first_open(monkeypatch, saver, lambda: linear_w(2.0))

    def receiver_fn():
        features = tf.compat.v1.placeholder(tf.float32, [None, 4])
        return tec_export.TensorServingInputReceiver(features, features)

    path = estimator.export_saved_model(str(tmp_path / "exports"), receiver_fn)

    assert saved == [os.path.join(model_dir, "model.ckpt-2")]
    exported = tf.train.load_checkpoint(os.path.join(os.fsdecode(path), "variables",
                                                     "variables"))
    assert exported.get_tensor("linear/w").tolist() == [[2.0], [2.0], [2.0]]


def test_a_failed_lock_release_does_not_hide_why_training_failed(tmp_path, monkeypatch,
                                                                  caplog):
    def read_only(path):
        raise tf.errors.PermissionDeniedError(None, None, f"{path}; Read-only file system")

    with pytest.raises(checkpoints.CheckpointWriteError, match="Could not write the checkpoint "
                                                               "for step 7"):
        with sharing.training_in(str(tmp_path), is_chief=True):
            monkeypatch.setattr(tf.io.gfile, "remove", read_only)  # the disk turns read-only
            raise checkpoints.CheckpointWriteError(str(tmp_path), 7, "Read-only file system")
    assert (f"Could not remove the trainer lock {tmp_path}/.trainer_lock ("
            in caplog.text and "Read-only file system" in caplog.text)
    monkeypatch.undo()
    with sharing.training_in(str(tmp_path), is_chief=True):  # the same process trains again
        pass
    assert not os.path.exists(tmp_path / sharing.LOCK_FILENAME)
