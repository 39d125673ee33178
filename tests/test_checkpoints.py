"""Tests for tpu_estimator_compat.state.checkpoints: TF1-layout name-based checkpoints."""
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from tpu_estimator_compat.state import checkpoints
from tpu_estimator_compat.state.checkpoints import CheckpointSaver

import tf1_reference_model

DATA_DIR = os.path.join(os.path.dirname(__file__), "data")
FIXTURE_DIR = os.path.join(DATA_DIR, "tf1_reference_ckpt")
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = ".data-00000-of-00001"


def make_variables(offset=0.0):
    """A small TF1-named model: trainables, an Adam slot, beta1_power and global_step."""
    return {
        "dense/kernel": tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3) + offset),
        "dense/bias": tf.Variable(np.ones(3, np.float32) + offset),
        "dense/kernel/Adam": tf.Variable(np.full((2, 3), 0.5 + offset, np.float32)),
        "beta1_power": tf.Variable(0.9 + offset),
        "global_step": tf.Variable(7, dtype=tf.int64),
    }


def values_of(named_variables):
    return {name: v.numpy() for name, v in named_variables.items()}


def fill(named_variables, value):
    for v in named_variables.values():
        v.assign(tf.cast(tf.fill(v.shape, value), v.dtype))


def assert_same_values(actual, expected):
    assert sorted(actual) == sorted(expected)
    for name in expected:
        np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)


def test_save_writes_tf1_layout_keyed_by_tf1_names(tmp_path):
    variables = make_variables()
    path = CheckpointSaver(str(tmp_path)).save(variables, 7)

    assert path == os.path.join(str(tmp_path), "model.ckpt-7")
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model.ckpt-7" + DATA,
                                           "model.ckpt-7.index"]
    reader = tf.train.load_checkpoint(path)
    assert reader.get_variable_to_shape_map() == {
        "dense/kernel": [2, 3], "dense/bias": [3], "dense/kernel/Adam": [2, 3],
        "beta1_power": [], "global_step": []}
    assert reader.get_variable_to_dtype_map()["global_step"] == tf.int64
    state_lines = (tmp_path / "checkpoint").read_text().splitlines()
    assert state_lines[:2] == ['model_checkpoint_path: "model.ckpt-7"',
                               'all_model_checkpoint_paths: "model.ckpt-7"']
    assert [line.split(":")[0] for line in state_lines[2:]] == [
        "all_model_checkpoint_timestamps", "last_preserved_timestamp"]
    assert tf.train.latest_checkpoint(str(tmp_path)) == path
    assert checkpoints.latest_checkpoint(str(tmp_path)) == path


def test_round_trip_plain_variables(tmp_path):
    saved = make_variables()
    expected = values_of(saved)
    path = CheckpointSaver(str(tmp_path)).save(saved, 7)
    fresh = make_variables(offset=100.0)
    fresh["global_step"].assign(0)

    checkpoints.restore(fresh, path)

    assert_same_values(values_of(fresh), expected)


def test_restore_accepts_a_model_dir(tmp_path):
    saver = CheckpointSaver(str(tmp_path))
    variables = make_variables()
    saver.save(variables, 1)
    fill(variables, 5)
    path = saver.save(variables, 2)
    fill(variables, 0)

    checkpoints.restore(variables, str(tmp_path))

    assert variables["dense/bias"].numpy().tolist() == [5.0, 5.0, 5.0]
    assert checkpoints.latest_checkpoint(str(tmp_path)) == path


def test_max_to_keep_two_after_three_saves(tmp_path):
    saver = CheckpointSaver(str(tmp_path), max_to_keep=2)
    variables = make_variables()
    paths = [saver.save(variables, step) for step in (10, 20, 30)]

    assert sorted(os.listdir(tmp_path)) == [
        "checkpoint", "model.ckpt-20" + DATA, "model.ckpt-20.index",
        "model.ckpt-30" + DATA, "model.ckpt-30.index"]
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == paths[2]
    assert list(state.all_model_checkpoint_paths) == paths[1:]
    assert saver.last_checkpoints == paths[1:]
    assert checkpoints.previous_checkpoints(str(tmp_path)) == [paths[1]]


def test_a_meta_graph_written_after_the_save_joins_its_checkpoint_only(tmp_path):
    saver = CheckpointSaver(str(tmp_path), max_to_keep=1)
    variables = make_variables()
    first = saver.save(variables, 0)
    saver.write_meta_graph(first, b"graph of step 0")
    assert sorted(os.listdir(tmp_path)) == [
        "checkpoint", "model.ckpt-0" + DATA, "model.ckpt-0.index", "model.ckpt-0.meta"]
    with open(first + ".meta", "rb") as f:
        assert f.read() == b"graph of step 0"
    saver.save(variables, 5)  # retention deletes step 0 with its .meta
    saver.write_meta_graph(first, b"too late")  # its checkpoint is gone: nothing written
    assert sorted(os.listdir(tmp_path)) == [
        "checkpoint", "model.ckpt-5" + DATA, "model.ckpt-5.index"]


@pytest.mark.parametrize("max_to_keep", [0, None])
def test_max_to_keep_zero_or_none_keeps_and_lists_all(tmp_path, max_to_keep):
    saver = CheckpointSaver(str(tmp_path), max_to_keep=max_to_keep)
    paths = [saver.save(make_variables(), step) for step in (1, 2, 3)]

    assert len([f for f in os.listdir(tmp_path) if f.endswith(".index")]) == 3
    assert list(tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths) == paths


def test_keep_checkpoint_every_n_hours_preserves_old_checkpoints(tmp_path):
    # One checkpoint per 0.5 s is kept for good; max_to_keep=1 deletes everything else.
    saver = CheckpointSaver(str(tmp_path), max_to_keep=1,
                            keep_checkpoint_every_n_hours=0.5 / 3600)
    variables = make_variables()
    time.sleep(0.7)
    saver.save(variables, 1)  # > 0.5 s after the saver was created: preserved when dropped
    saver.save(variables, 2)  # within 0.5 s of checkpoint 1: deleted when dropped
    saver.save(variables, 3)

    assert sorted(f for f in os.listdir(tmp_path) if f.endswith(".index")) == [
        "model.ckpt-1.index", "model.ckpt-3.index"]
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert list(state.all_model_checkpoint_paths) == [os.path.join(str(tmp_path), "model.ckpt-3")]


def test_a_new_saver_adopts_the_checkpoints_of_the_state_file(tmp_path):
    first = CheckpointSaver(str(tmp_path), max_to_keep=2)
    variables = make_variables()
    paths = [first.save(variables, step) for step in (1, 2)]

    second = CheckpointSaver(str(tmp_path), max_to_keep=2)
    assert second.last_checkpoints == paths
    second.save(variables, 3)

    assert sorted(f for f in os.listdir(tmp_path) if f.endswith(".index")) == [
        "model.ckpt-2.index", "model.ckpt-3.index"]


def test_saving_the_same_step_again_replaces_it(tmp_path):
    saver = CheckpointSaver(str(tmp_path))
    variables = make_variables()
    saver.save(variables, 4)
    fill(variables, 1)
    saver.save(variables, 5)
    fill(variables, 2)
    path = saver.save(variables, 5)

    assert saver.last_checkpoints == [os.path.join(str(tmp_path), "model.ckpt-4"), path]
    assert checkpoints.load_variable(path, "dense/bias").tolist() == [2.0, 2.0, 2.0]
    assert len(os.listdir(tmp_path)) == 5


def test_a_new_saver_removes_leftovers_of_interrupted_saves(tmp_path):
    saver = CheckpointSaver(str(tmp_path))
    saver.save(make_variables(), 1)
    leftovers = ["model.ckpt-2_temp_0123abcd.index", "model.ckpt-2_temp_0123abcd" + DATA,
                 "checkpoint_temp_0123abcd"]
    for name in leftovers:
        (tmp_path / name).write_bytes(b"partial")
    (tmp_path / "notes_temp_keep.txt").write_text("user file")

    CheckpointSaver(str(tmp_path))

    assert sorted(os.listdir(tmp_path)) == [
        "checkpoint", "model.ckpt-1" + DATA, "model.ckpt-1.index", "notes_temp_keep.txt"]


def test_saver_rejects_bad_retention_arguments(tmp_path):
    with pytest.raises(ValueError, match=r"`max_to_keep` \(-1\) must be a non-negative int"):
        CheckpointSaver(str(tmp_path), max_to_keep=-1)
    with pytest.raises(ValueError, match=r"`keep_checkpoint_every_n_hours` \(0\) must be"):
        CheckpointSaver(str(tmp_path), keep_checkpoint_every_n_hours=0)
    with pytest.raises(ValueError, match="`named_variables` is empty"):
        CheckpointSaver(str(tmp_path)).save({}, 1)


def make_mirrored_variables(strategy, offset):
    with strategy.scope():
        return {
            "dense/kernel": tf.Variable(np.full((2, 3), 1.0 + offset, np.float32)),
            "global_step": tf.Variable(
                3 + int(offset), dtype=tf.int64,
                aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA),
            "batch_normalization/moving_mean": tf.Variable(
                np.full(4, offset, np.float32),
                synchronization=tf.VariableSynchronization.ON_READ,
                aggregation=tf.VariableAggregation.MEAN),
        }


def test_round_trip_distributed_variables(tmp_path, eight_devices):
    saved = make_mirrored_variables(eight_devices, offset=0.0)
    moving_mean = saved["batch_normalization/moving_mean"]
    assert type(saved["dense/kernel"]).__name__ == "MirroredVariable"
    assert type(moving_mean).__name__ == "SyncOnReadVariable"

    @tf.function
    def set_replica_local_means():
        def replica_fn():
            replica_id = tf.distribute.get_replica_context().replica_id_in_sync_group
            moving_mean.assign(tf.fill([4], tf.cast(replica_id, tf.float32)))
        eight_devices.run(replica_fn)

    set_replica_local_means()  # replica copies hold 0..7; the cross-replica MEAN is 3.5
    path = CheckpointSaver(str(tmp_path)).save(saved, 3)

    assert checkpoints.load_variable(path, "batch_normalization/moving_mean").tolist() == [3.5] * 4
    assert checkpoints.list_variable_names(path) == [
        "batch_normalization/moving_mean", "dense/kernel", "global_step"]
    fresh = make_mirrored_variables(eight_devices, offset=9.0)
    checkpoints.restore(fresh, path)
    for name, expected in [("dense/kernel", np.ones((2, 3))), ("global_step", 3),
                           ("batch_normalization/moving_mean", np.full(4, 3.5))]:
        replica_values = [component.numpy() for component in fresh[name].values]
        assert len(replica_values) == 8
        for value in replica_values:
            np.testing.assert_array_equal(value, expected, err_msg=name)


def test_plain_checkpoint_restores_into_distributed_variables(tmp_path, eight_devices):
    plain = {"dense/kernel": tf.Variable(np.full((2, 3), 4.0, np.float32)),
             "global_step": tf.Variable(11, dtype=tf.int64),
             "batch_normalization/moving_mean": tf.Variable(np.full(4, 2.0, np.float32))}
    path = CheckpointSaver(str(tmp_path)).save(plain, 11)
    mirrored = make_mirrored_variables(eight_devices, offset=0.0)

    checkpoints.restore(mirrored, path)

    assert_same_values(values_of(mirrored), values_of(plain))
    assert [c.numpy() for c in mirrored["global_step"].values] == [11] * 8


def build_tf1_graph_variables():
    """TF1 graph variables with the names and shapes of `make_variables`."""
    return {
        "dense/kernel": tf.compat.v1.get_variable("dense/kernel", [2, 3]),
        "dense/bias": tf.compat.v1.get_variable("dense/bias", [3]),
        "dense/kernel/Adam": tf.compat.v1.get_variable("dense/kernel/Adam", [2, 3]),
        "beta1_power": tf.compat.v1.get_variable("beta1_power", []),
        "global_step": tf.compat.v1.train.get_or_create_global_step(),
    }


def test_tf1_graph_saver_reads_our_checkpoint(tmp_path):
    ours = make_variables()
    CheckpointSaver(str(tmp_path)).save(ours, 7)

    with tf.Graph().as_default():
        graph_variables = build_tf1_graph_variables()
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as sess:
            saver.restore(sess, tf.compat.v1.train.latest_checkpoint(str(tmp_path)))
            restored = sess.run(graph_variables)

    assert_same_values(restored, values_of(ours))


def test_checkpoint_from_tf1_graph_saver_restores(tmp_path):
    with tf.Graph().as_default():
        graph_variables = build_tf1_graph_variables()
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(graph_variables["global_step"].assign(42))
            written = sess.run(graph_variables)
            saver.save(sess, os.path.join(str(tmp_path), "model.ckpt"), global_step=42)

    assert checkpoints.latest_checkpoint(str(tmp_path)) == os.path.join(
        str(tmp_path), "model.ckpt-42")
    ours = make_variables(offset=50.0)
    checkpoints.restore(ours, str(tmp_path))
    assert_same_values(values_of(ours), written)


def test_tf1_reference_fixture_restores():
    spec = json.loads(open(os.path.join(DATA_DIR, "tf1_reference_names.json")).read())
    variables = {name: tf.Variable(tf.zeros(s["shape"], s["dtype"]))
                 for name, s in spec["variables"].items()}

    checkpoints.restore(variables, FIXTURE_DIR)

    assert variables["global_step"].numpy() == spec["global_step"] == 3
    reader = tf.train.load_checkpoint(os.path.join(FIXTURE_DIR, "model.ckpt-3"))
    for name, variable in variables.items():
        np.testing.assert_array_equal(variable.numpy(), reader.get_tensor(name), err_msg=name)
    assert np.abs(variables["dense/kernel"].numpy()).sum() > 0
    assert checkpoints.list_variable_names(FIXTURE_DIR) == sorted(spec["variables"])


def test_tf1_reference_model_builds_the_fixture_names():
    spec = json.loads(open(os.path.join(DATA_DIR, "tf1_reference_names.json")).read())
    with tf.Graph().as_default():
        tf1_reference_model.build_reference_graph(
            {"x": tf.zeros([2, tf1_reference_model.NUM_FEATURES])}, tf.zeros([2], tf.int32))
        built = {v.op.name: {"shape": v.shape.as_list(), "dtype": v.dtype.base_dtype.name}
                 for v in tf.compat.v1.global_variables()}
    assert built == spec["variables"]
    fixture_bytes = sum(os.path.getsize(os.path.join(FIXTURE_DIR, f))
                        for f in os.listdir(FIXTURE_DIR))
    assert fixture_bytes < 50_000


def test_restore_lists_every_mismatch_and_assigns_nothing(tmp_path):
    path = CheckpointSaver(str(tmp_path)).save({
        "a": tf.Variable([1.0, 2.0]), "c": tf.Variable(tf.zeros([3, 3])),
        "i": tf.Variable(1, dtype=tf.int64), "z": tf.Variable(0.0)}, 1)
    model = {"a": tf.Variable([0.0, 0.0]), "b": tf.Variable(tf.zeros([3])),
             "c": tf.Variable(tf.zeros([2, 2])), "d": tf.Variable(0.0),
             "i": tf.Variable(0.0)}

    with pytest.raises(ValueError) as error:
        checkpoints.restore(model, path)

    assert str(error.value) == (
        f"Checkpoint {path} does not match the model's variables:\n"
        "  missing from the checkpoint (2): ['b', 'd']\n"
        "  shape mismatches (1): c: model (2, 2) vs checkpoint (3, 3)\n"
        "  dtype mismatches (1): i: model float32 vs checkpoint int64\n"
        "To load only the matching variables, train in a fresh model_dir with "
        "`warm_start_from=WarmStartSettings(ckpt_to_initialize_from=..., vars_to_warm_start=...)` "
        "or call `tf.compat.v1.train.init_from_checkpoint(ckpt, assignment_map)` in scaffold_fn; "
        "to train this model from scratch, use a new model_dir.")
    assert model["a"].numpy().tolist() == [0.0, 0.0]


def test_restore_casts_between_integer_dtypes(tmp_path):
    path = CheckpointSaver(str(tmp_path)).save({"global_step": tf.Variable(9, tf.int64)}, 9)
    step32 = tf.Variable(0, dtype=tf.int32)

    checkpoints.restore({"global_step": step32}, path)

    assert step32.numpy() == 9


def save_three(model_dir):
    saver = CheckpointSaver(model_dir)
    variables = make_variables()
    paths = []
    for step in (1, 2, 3):
        fill(variables, step)
        paths.append(saver.save(variables, step))
    return paths


def test_truncated_newest_checkpoint_names_the_file_and_the_fallback(tmp_path):
    paths = save_three(str(tmp_path))
    data_file = paths[2] + DATA
    with open(data_file, "r+b") as f:
        f.truncate(os.path.getsize(data_file) // 2)
    variables = make_variables()
    fill(variables, 0)

    with pytest.raises(checkpoints.CorruptCheckpointError) as error:
        checkpoints.restore(variables, checkpoints.latest_checkpoint(str(tmp_path)))

    assert str(error.value) == (
        f"Cannot read checkpoint {paths[2]}: its data file {data_file} is truncated or damaged "
        "(Read less bytes than requested). To fall back to the previous checkpoint listed in "
        f"{tmp_path}/checkpoint, restore {paths[1]} instead (previous_checkpoints(model_dir) "
        "lists all older ones, newest first), or delete the damaged checkpoint's files.")
    assert isinstance(error.value, tf.errors.DataLossError)
    assert error.value.fallback_paths == [paths[1], paths[0]]
    assert checkpoints.previous_checkpoints(str(tmp_path)) == [paths[1], paths[0]]
    assert variables["dense/bias"].numpy().tolist() == [0.0] * 3
    checkpoints.restore(variables, error.value.fallback_paths[0])
    assert variables["dense/bias"].numpy().tolist() == [2.0] * 3


def test_flipped_bytes_fail_the_checksum(tmp_path):
    paths = save_three(str(tmp_path))
    with open(paths[2] + DATA, "r+b") as f:
        f.seek(8)
        byte = f.read(1)
        f.seek(8)
        f.write(bytes([byte[0] ^ 0xFF]))

    with pytest.raises(checkpoints.CorruptCheckpointError) as error:
        checkpoints.restore(make_variables(), str(tmp_path))

    assert f"its data file {paths[2] + DATA} is truncated or damaged" in str(error.value)
    copy = pickle.loads(pickle.dumps(error.value))
    assert (str(copy), copy.fallback_paths) == (str(error.value), [paths[1], paths[0]])


def test_missing_index_of_newest_checkpoint_is_reported(tmp_path):
    paths = save_three(str(tmp_path))
    os.remove(paths[2] + ".index")

    assert checkpoints.latest_checkpoint(str(tmp_path)) == paths[2]
    with pytest.raises(checkpoints.CorruptCheckpointError,
                       match=f"Cannot read checkpoint {paths[2]}: its index file "
                             f"{paths[2]}.index is missing .*restore {paths[1]} instead"):
        checkpoints.restore(make_variables(), str(tmp_path))
    with pytest.raises(checkpoints.CorruptCheckpointError, match="index file"):
        checkpoints.list_variable_names(str(tmp_path))


@pytest.mark.parametrize("damage", ["truncated", "zeroed"])
def test_damaged_index_of_newest_checkpoint_names_the_index(tmp_path, damage):
    paths = save_three(str(tmp_path))
    index = paths[2] + ".index"
    size = os.path.getsize(index)
    with open(index, "r+b") as f:
        if damage == "truncated":
            f.truncate(size // 2)
        else:
            f.write(b"\0" * size)

    expected = (f"Cannot read checkpoint {paths[2]}: its index file {index} is truncated or "
                f"damaged (not an sstable (bad magic number)). To fall back to the previous "
                f"checkpoint listed in {tmp_path}/checkpoint, restore {paths[1]} instead")
    with pytest.raises(checkpoints.CorruptCheckpointError) as error:
        checkpoints.restore(make_variables(), str(tmp_path))
    assert str(error.value).startswith(expected)
    with pytest.raises(checkpoints.CorruptCheckpointError, match=f"index file {index} is"):
        checkpoints.load_variable(str(tmp_path), "global_step")


def test_only_checkpoint_damaged_says_there_is_no_fallback(tmp_path):
    path = CheckpointSaver(str(tmp_path)).save(make_variables(), 1)
    os.remove(path + ".index")

    with pytest.raises(checkpoints.CorruptCheckpointError,
                       match=f"No older checkpoint is listed in {tmp_path}/checkpoint"):
        checkpoints.restore(make_variables(), path)


def test_load_variable_and_names(tmp_path):
    with pytest.raises(ValueError,
                       match=f"^Could not find trained model in model_dir: {tmp_path}.$"):
        checkpoints.list_variable_names(str(tmp_path))
    assert checkpoints.latest_checkpoint(str(tmp_path)) is None
    path = CheckpointSaver(str(tmp_path)).save(make_variables(), 7)

    assert checkpoints.list_variable_names(str(tmp_path)) == [
        "beta1_power", "dense/bias", "dense/kernel", "dense/kernel/Adam", "global_step"]
    assert checkpoints.load_variable(str(tmp_path), "global_step") == 7
    np.testing.assert_array_equal(checkpoints.load_variable(path, "dense/kernel"),
                                  np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(tf.errors.NotFoundError,
                       match=f"Variable dense/gamma is not in checkpoint {path}. Its variables "
                             r"are: \['beta1_power', "):
        checkpoints.load_variable(str(tmp_path), "dense/gamma")


_SAVE_LOOP = """
import os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf
from tpu_estimator_compat.state.checkpoints import CheckpointSaver
model_dir, first_step = sys.argv[1], int(sys.argv[2])
variables = {f"layer_{i}/kernel": tf.Variable(tf.zeros([1024, 1024])) for i in range(4)}
variables["global_step"] = tf.Variable(0, dtype=tf.int64)
saver = CheckpointSaver(model_dir, max_to_keep=2)
step = first_step
while True:
    for v in variables.values():
        v.assign(tf.cast(tf.fill(v.shape, step), v.dtype))
    saver.save(variables, step)
    print(step, flush=True)
    step += 1
"""


def run_and_kill(model_dir, first_step, saves_before_kill, delay):
    """Runs the save loop in a subprocess and SIGKILLs it `delay` s after N saves finished."""
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    child = subprocess.Popen([sys.executable, "-c", _SAVE_LOOP, model_dir, str(first_step)],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    try:
        last = None
        for _ in range(saves_before_kill):
            last = int(child.stdout.readline())
        time.sleep(delay)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    return last


def assert_listed_checkpoints_restore(model_dir):
    latest = checkpoints.latest_checkpoint(model_dir)
    state = tf.train.get_checkpoint_state(model_dir)
    for path in state.all_model_checkpoint_paths:
        step = int(path.rsplit("-", 1)[1])
        variables = {f"layer_{i}/kernel": tf.Variable(tf.ones([1024, 1024])) for i in range(4)}
        variables["global_step"] = tf.Variable(-1, dtype=tf.int64)
        checkpoints.restore(variables, path)
        assert variables["global_step"].numpy() == step
        for i in range(4):
            assert np.all(variables[f"layer_{i}/kernel"].numpy() == step)
    return int(latest.rsplit("-", 1)[1])


@pytest.mark.slow  # starts processes
def test_sigkill_during_save_loop_leaves_a_restorable_latest_checkpoint(tmp_path):
    model_dir = str(tmp_path)
    first_step = 0
    for round_number, delay in enumerate([0.004, 0.017, 0.029]):
        last_reported = run_and_kill(model_dir, first_step, saves_before_kill=3, delay=delay)
        latest_step = assert_listed_checkpoints_restore(model_dir)
        assert latest_step >= last_reported, round_number
        first_step = latest_step + 1  # resume as a restarted trainer would
    CheckpointSaver(model_dir, max_to_keep=2)
    assert not [f for f in os.listdir(model_dir) if "_temp_" in f]


# The original's state file after TPUEstimator(model_dir=D, keep_checkpoint_max=3) trained to
# step 4 with a checkpoint every step (TF 2.15.1 + tensorflow-estimator 2.15), the same for a
# relative D ("runB") and an absolute one: file names relative to D, no "../".
ORIGINAL_STATE_PATH_LINES = ['model_checkpoint_path: "model.ckpt-4"',
                             'all_model_checkpoint_paths: "model.ckpt-2"',
                             'all_model_checkpoint_paths: "model.ckpt-3"',
                             'all_model_checkpoint_paths: "model.ckpt-4"']


@pytest.mark.parametrize("relative", [True, False])
def test_state_file_is_the_originals_for_relative_and_absolute_model_dirs(
        tmp_path, monkeypatch, relative):
    monkeypatch.chdir(tmp_path)
    other_run = make_variables(offset=100.0)  # a first run with model_dir=".": ./model.ckpt-4
    CheckpointSaver(".").save(other_run, 4)
    model_dir = "runB" if relative else str(tmp_path / "runB")
    saver = CheckpointSaver(model_dir, max_to_keep=3)
    for step in range(5):
        saver.save(make_variables(offset=float(step)), step)

    state_lines = (tmp_path / "runB" / "checkpoint").read_text().splitlines()
    assert state_lines[:4] == ORIGINAL_STATE_PATH_LINES
    expected = os.path.join(model_dir, "model.ckpt-4")
    assert tf.train.latest_checkpoint(model_dir) == expected
    assert checkpoints.latest_checkpoint(model_dir) == expected
    assert checkpoints.previous_checkpoints(model_dir) == [
        os.path.join(model_dir, "model.ckpt-3"), os.path.join(model_dir, "model.ckpt-2")]
    restored = make_variables()
    checkpoints.restore(restored, model_dir)
    assert_same_values(values_of(restored), values_of(make_variables(offset=4.0)))


def test_state_file_with_paths_made_relative_twice_is_read_inside_model_dir(
        tmp_path, monkeypatch):
    # Written by this package before the fix for a relative model_dir: "../model.ckpt-4".
    monkeypatch.chdir(tmp_path)
    CheckpointSaver(".").save(make_variables(offset=100.0), 4)
    CheckpointSaver("runB").save(make_variables(offset=4.0), 4)
    (tmp_path / "runB" / "checkpoint").write_text(
        'model_checkpoint_path: "../model.ckpt-4"\n'
        'all_model_checkpoint_paths: "../model.ckpt-4"\n')
    assert checkpoints.latest_checkpoint("runB") == os.path.join("runB", "model.ckpt-4")
    restored = make_variables()
    checkpoints.restore(restored, "runB")
    assert_same_values(values_of(restored), values_of(make_variables(offset=4.0)))


def write_absolute_state(model_dir, steps):
    """A state file as TF1's `Saver` wrote by default: absolute paths."""
    paths = [os.path.join(model_dir, f"model.ckpt-{step}") for step in steps]
    with open(os.path.join(model_dir, "checkpoint"), "w") as file:
        file.write(f'model_checkpoint_path: "{paths[-1]}"\n'
                   + "".join(f'all_model_checkpoint_paths: "{p}"\n' for p in paths))


def test_a_copied_model_dir_never_deletes_nor_adopts_the_original_checkpoints(tmp_path):
    original, copy = str(tmp_path / "A"), str(tmp_path / "B")
    saver = CheckpointSaver(original, max_to_keep=3)
    for step in (1, 2, 3):
        saver.save(make_variables(offset=float(step)), step)
    write_absolute_state(original, (1, 2, 3))
    shutil.copytree(original, copy)
    files_of_original = sorted(os.listdir(original))

    assert checkpoints.latest_checkpoint(copy) == os.path.join(copy, "model.ckpt-3")
    assert checkpoints.previous_checkpoints(copy) == [
        os.path.join(copy, "model.ckpt-2"), os.path.join(copy, "model.ckpt-1")]
    copy_saver = CheckpointSaver(copy, max_to_keep=3)
    copy_saver.save(make_variables(offset=4.0), 4)
    copy_saver.save(make_variables(offset=5.0), 5)

    assert sorted(os.listdir(original)) == files_of_original
    assert sorted(name for name in os.listdir(copy) if name.endswith(".index")) == [
        "model.ckpt-3.index", "model.ckpt-4.index", "model.ckpt-5.index"]
    assert copy_saver.last_checkpoints == [
        os.path.join(copy, f"model.ckpt-{step}") for step in (3, 4, 5)]


def test_a_foreign_latest_checkpoint_missing_from_the_copy_is_a_named_error(tmp_path):
    original, copy = str(tmp_path / "A"), str(tmp_path / "B")
    saver = CheckpointSaver(original)
    for step in (1, 2):
        saver.save(make_variables(offset=float(step)), step)
    write_absolute_state(original, (1, 2))
    shutil.copytree(original, copy)
    for name in os.listdir(copy):
        if name.startswith("model.ckpt-2"):
            os.remove(os.path.join(copy, name))
    foreign = os.path.join(original, "model.ckpt-2")

    with pytest.raises(checkpoints.ForeignCheckpointError,
                       match=f"names {foreign}, outside model_dir {copy}, which holds no "
                             f"model.ckpt-2 .*copy {foreign}.* into {copy}"):
        checkpoints.latest_checkpoint(copy)
    with pytest.raises(checkpoints.ForeignCheckpointError):
        checkpoints.restore(make_variables(), copy)
    error = checkpoints.ForeignCheckpointError(copy, foreign)
    assert pickle.loads(pickle.dumps(error)).message == error.message


def test_a_state_file_naming_a_vanished_checkpoint_goes_on_from_the_newest(tmp_path, caplog):
    paths = save_three(str(tmp_path))
    (tmp_path / "checkpoint").write_text(
        'model_checkpoint_path: "model.ckpt-9"\nall_model_checkpoint_paths: "model.ckpt-9"\n')

    assert checkpoints.latest_checkpoint(str(tmp_path)) == paths[2]
    assert (f"names {tmp_path}/model.ckpt-9, of which no file exists; going on from the "
            f"newest checkpoint in {tmp_path}, {paths[2]}") in caplog.text
    restored = make_variables()
    checkpoints.restore(restored, str(tmp_path))
    assert restored["dense/bias"].numpy().tolist() == [3.0, 3.0, 3.0]


def test_a_state_file_naming_an_older_checkpoint_warns_of_the_newer_ones(tmp_path, caplog):
    paths = save_three(str(tmp_path))
    (tmp_path / "checkpoint").write_text(
        'model_checkpoint_path: "model.ckpt-1"\nall_model_checkpoint_paths: "model.ckpt-1"\n')

    latest = checkpoints.latest_checkpoint(str(tmp_path))
    assert latest == paths[0]
    assert checkpoints.warn_of_newer_checkpoints(latest, str(tmp_path)) == paths[:0:-1]
    assert (f"names {paths[0]} as the latest checkpoint, but {tmp_path} holds newer ones: "
            f"{paths[2]}, {paths[1]}. Going on from {paths[0]}") in caplog.text
    assert checkpoints.warn_of_newer_checkpoints(paths[2], str(tmp_path)) == []


@pytest.mark.parametrize("directory", ["run[1]", "a\\b"])
def test_a_model_dir_with_glob_characters_reads_its_checkpoints(tmp_path, directory):
    model_dir = str(tmp_path / "sweep" / directory)
    saver = CheckpointSaver(model_dir, max_to_keep=1)
    saver.save(make_variables(offset=1.0), 1)
    path = saver.save(make_variables(offset=2.0), 2)

    assert checkpoints.latest_checkpoint(model_dir) == path
    assert checkpoints.load_variable(model_dir, "dense/bias").tolist() == [3.0, 3.0, 3.0]
    restored = make_variables()
    checkpoints.restore(restored, model_dir)
    assert_same_values(values_of(restored), values_of(make_variables(offset=2.0)))
    (tmp_path / "sweep" / directory / "checkpoint").unlink()  # recovered by reading the files
    assert checkpoints.latest_checkpoint(model_dir) == path


def test_a_state_file_path_that_is_a_directory_is_named(tmp_path):
    (tmp_path / "checkpoint").mkdir()
    message = (rf"{tmp_path}/checkpoint is a directory, but that path is model_dir's checkpoint "
               r"state file .*nothing was read or written\. Rename or move that directory")
    with pytest.raises(checkpoints.StateFileIsADirectoryError, match=message):
        checkpoints.latest_checkpoint(str(tmp_path))
    with pytest.raises(checkpoints.StateFileIsADirectoryError, match=message):
        CheckpointSaver(str(tmp_path))
    assert os.listdir(tmp_path) == ["checkpoint"]
