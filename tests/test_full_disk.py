"""A full disk: named errors, results logged before the write fails, no leftover files.

The disk is a small tmpfs mounted for the test (root in CI); where mounting is not
permitted the tests skip.
"""
import os
import subprocess

import numpy as np
import pytest
import tensorflow as tf

from tpu_estimator_compat.export import preflight
from tpu_estimator_compat.export import receivers
from tpu_estimator_compat.host import evaluation
from tpu_estimator_compat.state import checkpoints

import train_then_kill
from train_then_kill import make_estimator


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MB tmpfs at tmp_path/disk, unmounted afterwards."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs",
                              str(mount_point)], capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        if subprocess.run(["umount", str(mount_point)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill(disk):
    """Fills the disk to the last byte."""
    descriptor = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        for size in (65536, 4096, 1):
            try:
                while os.write(descriptor, b"\0" * size):
                    pass
            except OSError:
                pass
    finally:
        os.close(descriptor)


def temporaries(directory):
    return [name for root, _, names in os.walk(directory) for name in names
            if "_temp_" in name or name.startswith("temp-")]


def trained(model_dir):
    estimator = make_estimator(model_dir, None, use_tpu=False, batch_size=8,
                               eval_batch_size=8, save_checkpoints_steps=2,
                               keep_checkpoint_max=1, params={"optimizer": "sgd"})
    estimator.train(train_then_kill.input_fn, steps=2)
    return estimator


def test_evaluate_on_a_full_disk_logs_and_keeps_its_results(small_disk, caplog):
    estimator = trained(small_disk / "model")
    fill(small_disk)
    caplog.set_level("INFO")
    with pytest.raises(evaluation.EvalResultsWriteError,
                       match=r"Could not write the evaluation results into .*/model/eval: .*"
                             r"The evaluation itself finished: "
                             r"global_step = 2, loss = .*Free disk space") as raised:
        estimator.evaluate(train_then_kill.input_fn, steps=1)
    assert raised.value.results["global_step"] == 2
    assert np.isfinite(raised.value.results["loss"])
    # logged before the write, as float32 text (the original's "Saving dict" line)
    assert f"loss = {np.float32(raised.value.results['loss'])!s}" in caplog.text


def receiver_fn():
    features = tf.compat.v1.placeholder(tf.float32, [None, 4])
    return receivers.TensorServingInputReceiver(features, {"x": features})


def test_export_into_a_full_disk_is_named_and_leaves_nothing(small_disk):
    trained(small_disk / "model")
    exporter = make_estimator(small_disk / "model", model=train_then_kill.w_sum_model_fn,
                              use_tpu=False)
    (small_disk / "exports").mkdir()
    fill(small_disk)
    with pytest.raises(preflight.ExportWriteError,
                       match=r"Could not write the SavedModel into .*/exports: .*No space "
                             r"left on device.*Nothing was exported"):
        exporter.export_saved_model(str(small_disk / "exports"), receiver_fn)
    assert not temporaries(small_disk)
    assert os.listdir(small_disk / "exports") == []


@pytest.mark.parametrize("disk_fills", ["before the save", "before the state file"])
def test_saving_into_a_full_disk_keeps_the_previous_checkpoint_and_leaves_nothing(
        small_disk, monkeypatch, disk_fills):
    variables = {"w": tf.Variable(np.ones([1000], np.float32)),
                 "global_step": tf.Variable(1, dtype=tf.int64)}
    saver = checkpoints.CheckpointSaver(str(small_disk / "model"), max_to_keep=1)
    saver.save(variables, 1)
    if disk_fills == "before the save":
        fill(small_disk)
    else:  # the checkpoint's files are written, then the state file's temporary is not
        format_state = checkpoints.text_format.MessageToString
        monkeypatch.setattr(checkpoints.text_format, "MessageToString",
                            lambda state: fill(small_disk) or format_state(state))
    with pytest.raises((tf.errors.OpError, OSError), match="No space left"):
        saver.save(variables, 2)
    assert not temporaries(small_disk)
    assert checkpoints.latest_checkpoint(str(small_disk / "model")).endswith("model.ckpt-1")
