"""Preemption, NaN losses, damaged checkpoints and unwritable model_dirs."""
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback

import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
from tpu_estimator_compat.engine import worker_start
from tpu_estimator_compat.export import receivers
from tpu_estimator_compat.state import checkpoints
from tpu_estimator_compat.host.nan_loss import NanLossDuringTrainingError

import train_then_kill
from train_then_kill import make_estimator
import helpers

v1 = tf.compat.v1
SCRIPT = os.path.join(os.path.dirname(__file__), "train_then_kill.py")


def checkpoint_step(model_dir):
    return int(checkpoints.load_variable(checkpoints.latest_checkpoint(str(model_dir)),
                                         "global_step"))


def wait_for_checkpoint(model_dir, process, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if process.poll() is not None:
            pytest.fail(f"trainer exited early:\n{process.stderr.read()}")
        try:
            if checkpoints.latest_checkpoint(str(model_dir)) and checkpoint_step(model_dir) >= 4:
                return
        except (tf.errors.OpError, ValueError):
            pass
        time.sleep(0.2)
    pytest.fail("no checkpoint within the time limit")


@pytest.mark.slow  # starts processes
def test_sigterm_saves_at_the_current_step_exits_nonzero_and_resumes(tmp_path, eight_devices):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(SCRIPT)))
    process = subprocess.Popen([sys.executable, SCRIPT, str(tmp_path)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env)
    try:
        wait_for_checkpoint(tmp_path, process)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode != 0
    assert "TrainingPreemptedError" in stderr and "Run the program again" in stderr, stderr
    saved = checkpoint_step(tmp_path)
    assert f"saved a checkpoint at step {saved}" in stderr
    estimator = make_estimator(tmp_path, eight_devices, batch_size=train_then_kill.BATCH_SIZE)
    estimator.train(train_then_kill.input_fn, steps=2)
    assert checkpoint_step(tmp_path) == saved + 2


def nan_at_step(nan_step):
    def model_fn(features, labels, mode, params):
        step_started_at = tf.identity(v1.train.get_global_step())  # read before minimize()
        spec = train_then_kill.model_fn(features, labels, mode, dict(params, optimizer="sgd"))
        loss = tf.where(step_started_at >= nan_step, tf.constant(np.nan), spec.loss)
        return spec._replace(loss=loss)
    return model_fn


@pytest.mark.slow  # trains or evaluates for several seconds
def test_nan_loss_raises_at_its_loop_and_keeps_the_last_good_checkpoint(tmp_path,
                                                                         eight_devices):
    estimator = make_estimator(tmp_path, eight_devices, model=nan_at_step(5), batch_size=8,
                               save_checkpoints_steps=2)
    with pytest.raises(NanLossDuringTrainingError, match=r"global steps 4\.\.6"):
        estimator.train(train_then_kill.input_fn, steps=20)
    assert checkpoint_step(tmp_path) == 4
    values = {name: checkpoints.load_variable(str(tmp_path), name)
              for name in checkpoints.list_variable_names(str(tmp_path))}
    assert all(np.all(np.isfinite(value)) for value in values.values())


def nan_gradient_at_step(nan_step):
    """A linear model whose loss stays finite but whose gradient is NaN from `nan_step` on."""
    def model_fn(features, labels, mode, params):
        step_started_at = tf.identity(v1.train.get_global_step())
        weights = v1.get_variable("w", [4, 1], initializer=v1.constant_initializer(0.1))

        @tf.custom_gradient
        def poisoned(x):
            def grad(dy):
                return tf.where(step_started_at >= nan_step, dy * np.nan, dy)
            return tf.identity(x), grad

        loss = v1.losses.mean_squared_error(labels, tf.matmul(features, poisoned(weights)))
        return helpers.sgd_spec(mode, loss, 0.01)
    return model_fn


def all_finite(model_dir):
    return all(np.all(np.isfinite(checkpoints.load_variable(str(model_dir), name)))
               for name in checkpoints.list_variable_names(str(model_dir)))


@pytest.mark.slow  # trains or evaluates for several seconds
def test_nan_gradient_on_a_loops_last_step_is_not_saved_and_the_message_is_true(
        tmp_path, eight_devices):
    # Steps 4 and 5 form a loop; step 5's gradient is NaN while every loss is finite, and a
    # checkpoint is due at step 6.
    estimator = make_estimator(tmp_path, eight_devices, model=nan_gradient_at_step(5),
                               batch_size=8, save_checkpoints_steps=2)
    with pytest.raises(NanLossDuringTrainingError) as raised:
        estimator.train(train_then_kill.input_fn, steps=20)
    message = str(raised.value)
    assert re.search(r"Every replica's loss was finite, but at global step 6 1 variable\(s\) "
                     r"hold NaN/Inf \(w\).*checkpoint for step 6 was not written.*latest one, "
                     rf"{re.escape(str(tmp_path))}/model\.ckpt-4, is the last good one",
                     message), message
    assert checkpoint_step(tmp_path) == 4 and all_finite(tmp_path)
    assert not os.path.exists(os.path.join(str(tmp_path), "model.ckpt-6.index"))


@pytest.mark.slow  # trains or evaluates for several seconds
def test_nan_gradient_mid_loop_is_reported_for_its_loop(tmp_path, eight_devices):
    estimator = make_estimator(tmp_path, eight_devices, model=nan_gradient_at_step(4),
                               batch_size=8, save_checkpoints_steps=2)
    with pytest.raises(NanLossDuringTrainingError,
                       match=r"not finite during the loop of global steps 4\.\.6.*"
                             r"model\.ckpt-4, is the last good one"):
        estimator.train(train_then_kill.input_fn, steps=20)
    assert checkpoint_step(tmp_path) == 4 and all_finite(tmp_path)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_bad_rows_on_replica_3_of_8_are_caught_at_their_loop(tmp_path, eight_devices):
    # One row per replica per step: row 3 of step 5's batch (replica 3) is NaN, on the last
    # step of the loop 4..6; replica 0's loss stays finite. Checkpoints fall on steps 0, 4,
    # 8: only the check of every replica's loss can stop training at that loop.
    features = train_then_kill.FEATURES.copy()
    features[5 * 8 + 3] = np.nan

    def input_fn(params):
        dataset = tf.data.Dataset.from_tensor_slices((features, train_then_kill.TARGETS))
        return dataset.repeat().batch(params["batch_size"], drop_remainder=True)

    estimator = make_estimator(tmp_path, eight_devices, batch_size=8, save_checkpoints_steps=4)
    with pytest.raises(NanLossDuringTrainingError,
                       match=r"at least one replica was not finite during the loop of global "
                             r"steps 4\.\.6.*model\.ckpt-4, is the last good one"):
        estimator.train(input_fn, steps=20)
    assert checkpoint_step(tmp_path) == 4 and all_finite(tmp_path)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_truncated_newest_checkpoint_is_named_with_the_fallback(tmp_path, eight_devices):
    estimator = make_estimator(tmp_path, eight_devices, batch_size=8, save_checkpoints_steps=2)
    estimator.train(train_then_kill.input_fn, steps=4)
    data_file = os.path.join(str(tmp_path), "model.ckpt-4.data-00000-of-00001")
    with open(data_file, "r+b") as handle:
        handle.truncate(os.path.getsize(data_file) // 2)
    rerun = make_estimator(tmp_path, eight_devices, batch_size=8, save_checkpoints_steps=2)
    with pytest.raises(checkpoints.CorruptCheckpointError,
                       match=r"model\.ckpt-4.*model\.ckpt-2"):
        rerun.train(train_then_kill.input_fn, steps=2)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_model_dir_that_cannot_be_written_fails_before_training(tmp_path, eight_devices):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    model_dir = blocker / "model"
    estimator = make_estimator(model_dir, eight_devices, batch_size=8)
    with pytest.raises(checkpoints.CheckpointWriteError) as raised:
        estimator.train(train_then_kill.input_fn, steps=2)
    assert str(raised.value) == (
        f"Could not write files (checked before training started) into {model_dir}: "
        f"{blocker} is a file, not a directory, so model_dir cannot be created there. Choose "
        "another model_dir, or move that file away.")  # not "Free disk space"
    # The message names the cause: no chained TensorFlow traceback below it.
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


@pytest.mark.slow  # trains or evaluates for several seconds
def test_failed_save_keeps_the_previous_checkpoint(tmp_path, eight_devices, monkeypatch):
    estimator = make_estimator(tmp_path, eight_devices, batch_size=8, save_checkpoints_steps=2)
    estimator.train(train_then_kill.input_fn, steps=2)

    def disk_full(*args, **kwargs):
        raise tf.errors.ResourceExhaustedError(None, None, "No space left on device")

    monkeypatch.setattr(tf.raw_ops, "SaveV2", disk_full)
    with pytest.raises(checkpoints.CheckpointWriteError,
                       match=r"step 4 .*No space left.*model\.ckpt-2, is intact.*Free disk "
                             r"space") as raised:
        estimator.train(train_then_kill.input_fn, steps=2)
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    frames = traceback.extract_tb(raised.tb)  # the package's frames only, none of TensorFlow's
    assert len(frames) < 14 and not any("/tensorflow/" in frame.filename for frame in frames), [
        f"{frame.filename}:{frame.lineno}" for frame in frames]
    monkeypatch.undo()
    assert checkpoint_step(tmp_path) == 2
    assert not [f for f in os.listdir(tmp_path) if "_temp_" in f]


def trained_with_checkpoints_0_2_4(model_dir, strategy):
    estimator = make_estimator(model_dir, strategy, batch_size=8, eval_batch_size=8,
                               save_checkpoints_steps=2)
    estimator.train(train_then_kill.input_fn, steps=4)
    return estimator


def damage_state_file(model_dir, damage):
    state_file = os.path.join(str(model_dir), "checkpoint")
    with open(state_file, "rb") as handle:
        content = handle.read()
    damaged = {"torn": content[:len(content) // 3], "empty": b"",
               "garbled": bytes(range(200, 256)) * 3}[damage]
    with open(state_file, "wb") as handle:
        handle.write(damaged)


@pytest.mark.slow  # trains or evaluates for several seconds
@pytest.mark.parametrize("damage", ["torn", "garbled", "empty"])
def test_damaged_state_file_resumes_from_the_newest_readable_checkpoint(tmp_path, eight_devices,
                                                                       damage, caplog):
    estimator = trained_with_checkpoints_0_2_4(tmp_path, eight_devices)
    damage_state_file(tmp_path, damage)
    caplog.set_level("WARNING")
    estimator.train(train_then_kill.input_fn, steps=2)
    assert (f"Recovered: {tmp_path}/model.ckpt-4 is the newest readable checkpoint"
            in caplog.text)
    assert checkpoint_step(tmp_path) == 6  # from 4, not from 0: model.ckpt-0 is not rewritten
    assert checkpoints.previous_checkpoints(str(tmp_path))[:2] == [
        f"{tmp_path}/model.ckpt-4", f"{tmp_path}/model.ckpt-2"]
    damage_state_file(tmp_path, damage)
    assert estimator.evaluate(train_then_kill.input_fn, steps=1)["global_step"] == 6


@pytest.mark.slow  # trains or evaluates for several seconds
def test_damaged_state_file_and_newest_checkpoint_fall_back_to_the_readable_one(
        tmp_path, eight_devices):
    estimator = trained_with_checkpoints_0_2_4(tmp_path, eight_devices)
    damage_state_file(tmp_path, "torn")
    data_file = os.path.join(str(tmp_path), "model.ckpt-4.data-00000-of-00001")
    with open(data_file, "r+b") as handle:
        handle.truncate(os.path.getsize(data_file) // 2)
    assert checkpoints.latest_checkpoint(str(tmp_path)) == f"{tmp_path}/model.ckpt-2"
    estimator.train(train_then_kill.input_fn, steps=1)
    assert checkpoint_step(tmp_path) == 3


@pytest.mark.slow  # trains or evaluates for several seconds
def test_damaged_state_file_without_a_readable_checkpoint_raises_and_changes_nothing(
        tmp_path, eight_devices):
    estimator = trained_with_checkpoints_0_2_4(tmp_path, eight_devices)
    damage_state_file(tmp_path, "garbled")
    for name in os.listdir(tmp_path):
        if name.startswith("model.ckpt-") and name.endswith(".index"):
            os.remove(os.path.join(str(tmp_path), name))
    files_before = sorted(os.listdir(tmp_path))
    message = (rf"checkpoint state file {re.escape(str(tmp_path))}/checkpoint is damaged \(it "
               r"cannot be parsed.*no readable model\.ckpt-<step> checkpoint.*delete "
               rf"{re.escape(str(tmp_path))}/checkpoint")
    with pytest.raises(checkpoints.CorruptCheckpointStateError, match=message):
        estimator.train(train_then_kill.input_fn, steps=2)
    with pytest.raises(checkpoints.CorruptCheckpointStateError, match=message):
        estimator.evaluate(train_then_kill.input_fn, steps=1)
    assert sorted(os.listdir(tmp_path)) == files_before


@pytest.mark.slow  # trains or evaluates for several seconds
def test_deleted_state_file_goes_on_from_the_newest_checkpoint_with_a_warning(
        tmp_path, eight_devices, caplog):
    trained_with_checkpoints_0_2_4(tmp_path, eight_devices)
    state_file = os.path.join(str(tmp_path), "checkpoint")
    w_sum_at_4 = checkpoints.load_variable(str(tmp_path), "linear/w").sum()
    caplog.set_level("WARNING")
    recovered = (f"checkpoint state file {state_file} is missing. Recovered: "
                 f"{tmp_path}/model.ckpt-4 is the newest readable checkpoint")

    os.remove(state_file)
    evaluator = make_estimator(tmp_path, eight_devices, batch_size=8, eval_batch_size=8)
    assert evaluator.evaluate(train_then_kill.input_fn, steps=1)["global_step"] == 4
    assert recovered in caplog.text  # once per process and state of model_dir
    predictor = make_estimator(tmp_path, model=train_then_kill.w_sum_model_fn, use_tpu=False)
    predicted = next(predictor.predict(train_then_kill.predict_input_fn))
    assert predicted == pytest.approx(w_sum_at_4)
    mtime_of_2 = os.path.getmtime(os.path.join(str(tmp_path), "model.ckpt-2.index"))
    trainer = make_estimator(tmp_path, eight_devices, batch_size=8, save_checkpoints_steps=2)
    trainer.train(train_then_kill.input_fn, steps=2)
    assert checkpoint_step(tmp_path) == 6  # from 4: model.ckpt-2 is not overwritten
    assert os.path.getmtime(os.path.join(str(tmp_path), "model.ckpt-2.index")) == mtime_of_2


@pytest.mark.slow  # trains or evaluates for several seconds
def test_deleted_state_file_and_no_readable_checkpoint_raise(tmp_path, eight_devices):
    trained_with_checkpoints_0_2_4(tmp_path, eight_devices)
    os.remove(os.path.join(str(tmp_path), "checkpoint"))
    for name in os.listdir(tmp_path):
        if name.startswith("model.ckpt-") and ".data-" in name:
            os.remove(os.path.join(str(tmp_path), name))
    with pytest.raises(checkpoints.CorruptCheckpointStateError,
                       match=r"checkpoint is missing and its directory holds no readable "
                             r"model\.ckpt-<step>.*delete the model\.ckpt-\* files of "):
        checkpoints.latest_checkpoint(str(tmp_path))


def test_relative_model_dir_resumes_its_own_run_not_one_in_the_working_directory(
        tmp_path, monkeypatch):
    # A first run with model_dir="." leaves ./model.ckpt-6; a second run in "runB" must
    # resume from runB/model.ckpt-2, as tf.train.latest_checkpoint("runB") says.
    monkeypatch.chdir(tmp_path)
    make_estimator(".", use_tpu=False, batch_size=8, save_checkpoints_steps=2).train(
        train_then_kill.input_fn, steps=6)
    second = make_estimator("runB", use_tpu=False, batch_size=8, save_checkpoints_steps=1,
                            keep_checkpoint_max=3)
    second.train(train_then_kill.input_fn, steps=2)
    assert tf.train.latest_checkpoint("runB") == os.path.join("runB", "model.ckpt-2")
    second.train(train_then_kill.input_fn, steps=1)
    assert int(checkpoints.load_variable("runB", "global_step")) == 3
    assert tf.train.latest_checkpoint("runB") == os.path.join("runB", "model.ckpt-3")


def _worker_tf_config(addresses, index):
    return {"cluster": {"worker": addresses}, "task": {"type": "worker", "index": index}}


def _free_address():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


def test_a_peer_that_never_starts_is_named_at_every_interval_and_then_raises(caplog):
    addresses = [_free_address(), _free_address()]
    caplog.set_level(logging.INFO)
    with pytest.raises(worker_start.WorkerStartTimeoutError,
                       match=rf"worker 1 \({addresses[1]}\) of TF_CONFIG's cluster did not "
                             r"start within 0\.6 s \(nothing was run or written\).*"
                             "TPU_ESTIMATOR_COMPAT_WORKER_START_TIMEOUT_SECS"):
        worker_start.wait_for_peers(_worker_tf_config(addresses, 0), 0.6, log_every_secs=0.1)
    waits = [r.getMessage() for r in caplog.records if "Waiting for" in r.getMessage()]
    assert len(waits) >= 2
    assert all(m.startswith(f"Waiting for worker 1 ({addresses[1]}) of TF_CONFIG's cluster "
                            "to start (") and m.endswith("; giving up after 0.6 s).")
               for m in waits)


def test_workers_waiting_for_each_other_all_start():
    # Each worker then starts its server on its port, as creating the strategy does.
    addresses = [_free_address(), _free_address(), _free_address()]
    errors, servers = [], []

    def worker(index):
        try:
            worker_start.wait_for_peers(_worker_tf_config(addresses, index), 30)
        except Exception as error:  # pylint: disable=broad-except
            errors.append(error)
            return
        server = socket.socket()
        server.bind(("127.0.0.1", int(addresses[index].rsplit(":", 1)[1])))
        server.listen(8)
        servers.append(server)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for server in servers:
        server.close()
    assert errors == [] and len(servers) == 3


def test_the_worker_start_timeout_is_read_from_the_environment():
    env = worker_start.START_TIMEOUT_ENV
    assert worker_start.start_timeout_secs({}) == 900.0
    assert worker_start.start_timeout_secs({env: "30"}) == 30.0
    assert worker_start.start_timeout_secs({env: "0"}) is None
    with pytest.raises(ValueError, match=f"{env}='soon' must be a number of seconds >= 0"):
        worker_start.start_timeout_secs({env: "soon"})


def test_train_evaluate_predict_and_export_in_a_model_dir_with_glob_characters(tmp_path):
    model_dir = tmp_path / "sweep" / "run[1]"
    estimator = helpers.make_estimator(model_dir, use_tpu=False)
    estimator.train(helpers.input_fn, max_steps=2)
    estimator.train(helpers.input_fn, max_steps=4)  # resumes from model.ckpt-2

    assert estimator.get_variable_value("global_step") == 4
    assert estimator.evaluate(helpers.input_fn, steps=1)["global_step"] == 4
    w_sum = train_then_kill.w_sum_model_fn
    reader = helpers.make_estimator(model_dir, model=w_sum, use_tpu=False)
    prediction = next(reader.predict(train_then_kill.predict_input_fn))
    assert prediction == pytest.approx(float(np.sum(estimator.get_variable_value("linear/w"))))

    def receiver_fn():
        features = v1.placeholder(tf.float32, [None, 4])
        return receivers.TensorServingInputReceiver(features, features)
    export_dir = reader.export_saved_model(str(tmp_path / "exports[1]"), receiver_fn)
    np.testing.assert_array_equal(
        checkpoints.load_variable(os.path.join(os.fsdecode(export_dir), "variables",
                                               "variables"), "linear/w"),
        estimator.get_variable_value("linear/w"))


def _write_records(path, count=64):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for row in range(count):
            writer.write(tf.train.Example(features=tf.train.Features(feature={
                "x": tf.train.Feature(float_list=tf.train.FloatList(
                    value=helpers.FEATURES[row].tolist())),
                "y": tf.train.Feature(float_list=tf.train.FloatList(
                    value=helpers.TARGETS[row].tolist()))})).SerializeToString())
    return path.read_bytes()


def _records_input_fn(files, label_key="y"):
    spec = {"x": tf.io.FixedLenFeature([4], tf.float32),
            label_key: tf.io.FixedLenFeature([1], tf.float32)}

    def input_fn(params):
        dataset = tf.data.TFRecordDataset([str(f) for f in files]).map(
            lambda record: tf.io.parse_single_example(record, spec))
        return dataset.map(lambda f: (f["x"], f[label_key])).repeat().batch(
            params["batch_size"], drop_remainder=True)
    return input_fn


@pytest.mark.parametrize("damage, expected", [
    ("corrupt", r"\(corrupted record at byte offset 1920\)"),
    ("truncate", r"\(truncated record at byte offset 2520\)")])
def test_a_damaged_tfrecord_is_named_with_the_step_and_the_last_checkpoint(
        tmp_path, damage, expected):

    good, bad = tmp_path / "a.tfrecord", tmp_path / "b.tfrecord"
    _write_records(good, count=8)  # shorter than the offset: not the damaged one
    data = _write_records(bad)
    if damage == "corrupt":
        data = data[:len(data) // 2] + bytes([data[len(data) // 2] ^ 0xFF]) + data[
            len(data) // 2 + 1:]
    else:
        data = data[:len(data) * 2 // 3]
    bad.write_bytes(data)
    model_dir = tmp_path / "model"
    estimator = helpers.make_estimator(model_dir, use_tpu=False, save_checkpoints_steps=2)

    with pytest.raises(tf.errors.DataLossError,
                       match=rf"A record of input_fn's data is corrupt or truncated {expected} "
                             rf"in {bad}\. Training stopped at global step \d+; the last intact "
                             rf"checkpoint is {model_dir}/model\.ckpt-4 \(a rerun resumes from "
                             r"it\)\. Re-create or remove that file"):
        estimator.train(_records_input_fn([bad, good]), max_steps=20)


def test_a_parse_spec_naming_an_absent_feature_names_the_files_and_the_feature(tmp_path):

    records = tmp_path / "train.tfrecord"
    _write_records(records)
    estimator = helpers.make_estimator(tmp_path / "model", use_tpu=False)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=rf"input_fn's dataset failed on the records of {records}: Feature: "
                             r"z \(data type: float\) is required but could not be found\. "
                             r"Training stopped at global step 0;"):
        estimator.train(_records_input_fn([records], label_key="z"), max_steps=4)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=rf"failed on the records of {records}: Feature: z .*Evaluation of "
                             rf"{tmp_path}/model/model\.ckpt-0 stopped\."):
        estimator.evaluate(_records_input_fn([records], label_key="z"), steps=2)


def test_inf_in_a_non_trainable_variable_is_not_blamed_on_a_gradient(tmp_path):
    def model_fn(features, labels, mode, params):
        loss = v1.losses.mean_squared_error(labels, tf.matmul(features, v1.get_variable(
            "w", [4, 1], initializer=v1.constant_initializer(0.1))))
        moving = v1.get_variable("moving", [], trainable=False,
                                 initializer=v1.zeros_initializer())
        step = v1.train.get_global_step()
        update = moving.assign(tf.where(step >= 3, np.inf, 0.0))
        train_op = v1.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=step)
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=tf.group(train_op, update))

    estimator = helpers.make_estimator(tmp_path, model=model_fn, use_tpu=False,
                                       save_checkpoints_steps=2)
    with pytest.raises(NanLossDuringTrainingError) as raised:
        estimator.train(helpers.input_fn, max_steps=10)
    message = str(raised.value)
    assert ("at global step 4 1 variable(s) hold NaN/Inf (moving: not trainable, so no "
            "gradient put it there but an update of model_fn") in message, message
    assert "a gradient was not finite" not in message
    assert checkpoint_step(tmp_path) == 2
