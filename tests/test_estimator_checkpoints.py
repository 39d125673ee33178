"""TPUEstimator checkpoints end to end: resuming, the model_dir layout, TF1 names both ways,
mismatch errors, warm starting, init_from_checkpoint, the checkpoint accessors, and recovery
from a SIGKILLed trainer."""
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
import helpers
import tf1_reference_model
import train_then_kill
from helpers import checkpoint_steps, input_fn, model_fn
from train_then_kill import VARIABLE_NAMES, make_estimator

v1 = tf.compat.v1
legacy_layers = importlib.import_module("tf_keras.api._v1.keras.__internal__.legacy.layers")

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(TESTS_DIR)
DATA_DIR = os.path.join(TESTS_DIR, "data")
FIXTURE_DIR = os.path.join(DATA_DIR, "tf1_reference_ckpt")
with open(os.path.join(DATA_DIR, "tf1_reference_names.json")) as _f:
    REFERENCE = json.load(_f)


def checkpoint_values(path):
    """{name: numpy value} of every tensor in a checkpoint prefix or model_dir's latest."""
    reader = tf.train.load_checkpoint(str(path))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def assert_all_close(actual, expected, atol=1e-6):
    assert sorted(actual) == sorted(expected)
    for name in expected:
        np.testing.assert_allclose(actual[name], expected[name], atol=atol, rtol=0, err_msg=name)


# ------------------------------------------------------------------------------------------
# 1. Resuming is exact.

@pytest.mark.slow  # trains or evaluates for several seconds
def test_twenty_steps_equal_ten_plus_ten_with_a_fresh_estimator(tmp_path, eight_devices):
    """Weights, Adam slots, beta powers and global_step survive a restart unchanged."""
    make_estimator(tmp_path / "once", eight_devices, iterations_per_loop=4).train(
        input_fn, steps=20)
    make_estimator(tmp_path / "twice", eight_devices, iterations_per_loop=4).train(
        input_fn, steps=10)
    after_ten = checkpoint_values(tmp_path / "twice")
    make_estimator(tmp_path / "twice", eight_devices, iterations_per_loop=4).train(
        input_fn, steps=10)

    once, twice = checkpoint_values(tmp_path / "once"), checkpoint_values(tmp_path / "twice")
    assert sorted(once) == VARIABLE_NAMES["adam"]
    assert once["global_step"] == twice["global_step"] == 20
    assert_all_close(twice, once, atol=1e-6)
    # TF1 Adam starts beta1_power at 0.9 and multiplies it by 0.9 every step.
    np.testing.assert_allclose(twice["beta1_power"], 0.9 ** 21, rtol=1e-5)
    np.testing.assert_allclose(twice["beta2_power"], 0.999 ** 21, rtol=1e-5)
    assert checkpoint_steps(tmp_path / "twice") == [0, 10, 20]
    assert np.abs(twice["linear/w"] - after_ten["linear/w"]).max() > 1e-3


# ------------------------------------------------------------------------------------------
# 2. The model_dir layout.

@pytest.mark.slow  # trains or evaluates for several seconds
def test_model_dir_files_after_training(tmp_path, eight_devices):
    make_estimator(tmp_path, eight_devices, iterations_per_loop=5, save_checkpoints_steps=5,
                   keep_checkpoint_max=2).train(input_fn, steps=10)

    files = sorted(os.listdir(tmp_path))
    events = [f for f in files if f.startswith("events.out.tfevents.")]
    # The original also wrote graph.pbtxt; each checkpoint has its .meta graph, as there.
    assert len(events) == 1, files
    assert sorted(set(files) - set(events)) == sorted([
        "checkpoint",
        "model.ckpt-10.data-00000-of-00001", "model.ckpt-10.index", "model.ckpt-10.meta",
        "model.ckpt-5.data-00000-of-00001", "model.ckpt-5.index", "model.ckpt-5.meta"])
    with open(tmp_path / "checkpoint") as f:
        state_lines = f.read().splitlines()
    assert state_lines[:3] == ['model_checkpoint_path: "model.ckpt-10"',
                               'all_model_checkpoint_paths: "model.ckpt-5"',
                               'all_model_checkpoint_paths: "model.ckpt-10"']
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "model.ckpt-10")


# ------------------------------------------------------------------------------------------
# 3. TF1 names, both directions.

REFERENCE_X = np.random.RandomState(7).normal(size=(64, 4)).astype(np.float32)
REFERENCE_Y = np.random.RandomState(8).randint(0, 3, size=64).astype(np.int32)


def reference_input_fn(params):
    dataset = tf.data.Dataset.from_tensor_slices(({"x": REFERENCE_X}, REFERENCE_Y))
    return dataset.repeat().batch(params["batch_size"], drop_remainder=True)


def reference_estimator(model_dir, strategy):
    return make_estimator(model_dir, strategy, model=tf1_reference_model.reference_model_fn,
                          iterations_per_loop=1)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_reference_model_checkpoint_has_the_tf1_graph_names_and_shapes(tmp_path, eight_devices):
    reference_estimator(tmp_path, eight_devices).train(reference_input_fn, steps=2)

    reader = tf.train.load_checkpoint(str(tmp_path))
    expected = REFERENCE["variables"]
    assert {name: list(shape) for name, shape in reader.get_variable_to_shape_map().items()} == {
        name: spec["shape"] for name, spec in expected.items()}
    assert {name: dtype.name for name, dtype in reader.get_variable_to_dtype_map().items()} == {
        name: spec["dtype"] for name, spec in expected.items()}

    # ... so TF1 graph code restores it with a plain Saver.
    with tf.Graph().as_default():
        tf1_reference_model.build_reference_graph(
            {"x": tf.constant(REFERENCE_X[:16])}, tf.constant(REFERENCE_Y[:16]))
        graph_variables = {v.op.name: v for v in v1.global_variables()}
        saver = v1.train.Saver()
        with v1.Session() as sess:
            saver.restore(sess, v1.train.latest_checkpoint(str(tmp_path)))
            restored = sess.run(graph_variables)
    assert sorted(restored) == sorted(expected)
    for name, value in restored.items():
        np.testing.assert_array_equal(value, reader.get_tensor(name), err_msg=name)
    assert restored["global_step"] == 2


@pytest.mark.slow  # trains or evaluates for several seconds
def test_tf1_fixture_checkpoint_resumes_in_tpu_estimator(tmp_path, eight_devices):
    model_dir = tmp_path / "model"
    shutil.copytree(FIXTURE_DIR, model_dir)
    fixture = checkpoint_values(os.path.join(FIXTURE_DIR, "model.ckpt-3"))

    reference_estimator(model_dir, eight_devices).train(reference_input_fn, steps=1)

    assert checkpoint_steps(model_dir) == [3, 4]
    resumed = checkpoint_values(model_dir)
    assert resumed["global_step"] == REFERENCE["global_step"] + 1 == 4
    # One Adam step from the fixture's state, not from fresh initial values.
    np.testing.assert_allclose(resumed["beta1_power"], fixture["beta1_power"] * 0.9, rtol=1e-6)
    np.testing.assert_allclose(resumed["beta2_power"], fixture["beta2_power"] * 0.999, rtol=1e-6)
    for name in ("dense/kernel", "dense_1/kernel", "batch_normalization/gamma"):
        change = np.abs(resumed[name] - fixture[name])
        assert 0 < change.max() < 0.05, name
    np.testing.assert_allclose(resumed["batch_normalization/moving_variance"],
                               fixture["batch_normalization/moving_variance"], atol=0.05)


# ------------------------------------------------------------------------------------------
# 4. A checkpoint of another model.

@pytest.mark.slow  # trains or evaluates for several seconds
def test_resuming_from_a_mismatched_checkpoint_lists_the_variables(tmp_path, one_device):
    sgd = {"optimizer": "sgd"}
    make_estimator(tmp_path, one_device, params=sgd).train(input_fn, steps=2)
    changed = make_estimator(tmp_path, one_device,
                             params=dict(sgd, extra=True, w_columns=2))

    with pytest.raises(ValueError) as error:
        changed.train(input_fn, steps=2)

    lines = str(error.value).splitlines()
    assert lines[:3] == [
        f"Checkpoint {tmp_path / 'model.ckpt-2'} does not match the model's variables:",
        "  missing from the checkpoint (1): ['linear/extra']",
        "  shape mismatches (1): linear/w: model (3, 2) vs checkpoint (3, 1)"]
    assert "WarmStartSettings" in lines[3]
    assert checkpoint_steps(tmp_path) == [0, 2]


# ------------------------------------------------------------------------------------------
# 5. warm_start_from.

@pytest.fixture(name="source_dir")
def fixture_source_dir(tmp_path, one_device):
    """A model_dir holding model.ckpt-3 of the Adam model (non-zero slots)."""
    source = tmp_path / "source"
    make_estimator(source, one_device, iterations_per_loop=3).train(input_fn, steps=3)
    return source


def initial_values(params=None):
    """The model's values at step 0 (what a fresh model_dir's model.ckpt-0 holds)."""
    with tf.Graph().as_default():
        v1.train.create_global_step()
        spec = model_fn(tf.constant(helpers.FEATURES[:2]),
                        tf.constant(helpers.TARGETS[:2]), tec.ModeKeys.TRAIN,
                        dict(params or {}))
        del spec
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            return {v.op.name: sess.run(v) for v in v1.global_variables()}


@pytest.mark.slow  # trains or evaluates for several seconds
@pytest.mark.parametrize("form", ["model_dir", "checkpoint_path"])
def test_warm_start_from_a_path_initializes_only_trainable_variables(
        tmp_path, one_device, source_dir, form):
    source = checkpoint_values(source_dir)
    path = str(source_dir) if form == "model_dir" else str(source_dir / "model.ckpt-3")
    model_dir = tmp_path / "warm"

    make_estimator(model_dir, one_device, warm_start_from=path).train(input_fn, steps=2)

    start = checkpoint_values(model_dir / "model.ckpt-0")
    fresh = initial_values()
    trainable = ["linear/hidden/bias", "linear/hidden/kernel", "linear/w"]
    for name in start:
        expected = source[name] if name in trainable else fresh[name]
        np.testing.assert_array_equal(start[name], expected, err_msg=name)
    assert start["global_step"] == 0 and source["global_step"] == 3
    np.testing.assert_allclose(start["beta1_power"], 0.9)
    assert not np.any(start["linear/w/Adam"]) and np.any(source["linear/w/Adam"])
    assert checkpoint_values(model_dir)["global_step"] == 2


@pytest.mark.slow  # trains or evaluates for several seconds
def test_warm_start_settings_select_and_rename_and_apply_only_once(
        tmp_path, one_device, source_dir):
    source = checkpoint_values(source_dir)
    params = {"w_name": "w2"}
    settings = tec.WarmStartSettings(
        ckpt_to_initialize_from=str(source_dir),
        vars_to_warm_start="linear/(hidden/kernel|w2)",
        var_name_to_prev_var_name={"linear/w2": "linear/w"})
    model_dir = tmp_path / "warm"

    make_estimator(model_dir, one_device, params=params, warm_start_from=settings).train(
        input_fn, steps=2)

    start = checkpoint_values(model_dir / "model.ckpt-0")
    fresh = initial_values(params)
    np.testing.assert_array_equal(start["linear/hidden/kernel"], source["linear/hidden/kernel"])
    np.testing.assert_array_equal(start["linear/w2"], source["linear/w"])
    np.testing.assert_array_equal(start["linear/hidden/bias"], fresh["linear/hidden/bias"])
    assert not np.allclose(source["linear/hidden/bias"], fresh["linear/hidden/bias"])
    for slot in ("linear/w2/Adam", "linear/hidden/kernel/Adam_1"):
        assert not np.any(start[slot]), slot

    # A model_dir with a checkpoint resumes from it; warm_start_from no longer applies.
    after_two = checkpoint_values(model_dir)
    assert np.abs(after_two["linear/w2"] - source["linear/w"]).max() > 1e-3
    shutil.copytree(model_dir, tmp_path / "plain")
    make_estimator(model_dir, one_device, params=params, warm_start_from=settings).train(
        input_fn, steps=2)
    make_estimator(tmp_path / "plain", one_device, params=params).train(input_fn, steps=2)
    warm, plain = checkpoint_values(model_dir), checkpoint_values(tmp_path / "plain")
    assert warm["global_step"] == 4
    assert_all_close(warm, plain, atol=0)


# ------------------------------------------------------------------------------------------
# 6. init_from_checkpoint in scaffold_fn (BERT style) and in model_fn.

PRETRAINED = {
    "bert/dense/kernel": np.random.RandomState(1).normal(size=(4, 3)).astype(np.float32),
    "bert/dense/bias": np.random.RandomState(2).normal(size=(3,)).astype(np.float32),
    "old_scope/w": np.random.RandomState(3).normal(size=(3, 1)).astype(np.float32),
    "cls/unused": np.ones([5], np.float32),
}


def write_pretrained_checkpoint(directory):
    """A checkpoint as pre-trained models ship: TF1 Saver, no global step, no slots."""
    with tf.Graph().as_default():
        for name, value in PRETRAINED.items():
            v1.get_variable(name, initializer=tf.constant(value))
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            return v1.train.Saver().save(sess, os.path.join(str(directory), "bert_model.ckpt"),
                                         write_meta_graph=False)


def make_pretrained_model_fn(ckpt, where):
    def pretrained_model_fn(features, labels, mode, params):
        with v1.variable_scope("bert"):
            hidden = legacy_layers.dense(features, 3, activation=tf.nn.tanh, name="dense")
        with v1.variable_scope("new_scope"):
            weights = v1.get_variable("w", [3, 1])
        output_bias = v1.get_variable("output_bias", [1], initializer=v1.constant_initializer(7.0))
        predictions = tf.matmul(hidden, weights) + output_bias
        loss = v1.losses.mean_squared_error(labels, predictions)
        if where == "model_fn":  # before minimize(): only the model's variables exist
            v1.train.init_from_checkpoint(ckpt, {"bert/": "bert/", "old_scope/": "new_scope/"})
        optimizer = (v1.train.GradientDescentOptimizer(0.01) if where == "scaffold_fn"
                     else v1.train.AdamOptimizer(0.01))
        if params["use_tpu"]:
            optimizer = tec.CrossShardOptimizer(optimizer)
        train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())

        def scaffold_fn():
            v1.train.init_from_checkpoint(ckpt, {"bert/": "bert/"})
            v1.train.init_from_checkpoint(ckpt, {"old_scope/": "new_scope/"})
            return v1.train.Scaffold()

        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op,
                                    scaffold_fn=scaffold_fn if where == "scaffold_fn" else None)
    return pretrained_model_fn


def assert_started_from_pretrained(model_dir):
    start = checkpoint_values(os.path.join(str(model_dir), "model.ckpt-0"))
    np.testing.assert_array_equal(start["bert/dense/kernel"], PRETRAINED["bert/dense/kernel"])
    np.testing.assert_array_equal(start["bert/dense/bias"], PRETRAINED["bert/dense/bias"])
    np.testing.assert_array_equal(start["new_scope/w"], PRETRAINED["old_scope/w"])
    np.testing.assert_array_equal(start["output_bias"], [7.0])  # not mapped: its initializer
    assert start["global_step"] == 0
    assert "cls/unused" not in start
    return start


@pytest.mark.slow  # trains or evaluates for several seconds
def test_init_from_checkpoint_in_scaffold_fn_on_tpu(tmp_path, eight_devices):
    ckpt = write_pretrained_checkpoint(tmp_path)
    model = make_pretrained_model_fn(ckpt, "scaffold_fn")
    make_estimator(tmp_path / "model", eight_devices, model=model).train(input_fn, steps=2)

    start = assert_started_from_pretrained(tmp_path / "model")
    assert sorted(start) == ["bert/dense/bias", "bert/dense/kernel", "global_step",
                             "new_scope/w", "output_bias"]
    assert checkpoint_values(tmp_path / "model")["global_step"] == 2


@pytest.mark.slow  # trains or evaluates for several seconds
def test_init_from_checkpoint_in_model_fn_on_cpu(tmp_path):
    ckpt = write_pretrained_checkpoint(tmp_path)
    model = make_pretrained_model_fn(ckpt, "model_fn")
    make_estimator(tmp_path / "model", model=model, use_tpu=False).train(input_fn, steps=2)

    start = assert_started_from_pretrained(tmp_path / "model")
    # The scope maps were made before the optimizer created its slots: those start at zero.
    for slot in ("bert/dense/kernel/Adam", "bert/dense/kernel/Adam_1", "new_scope/w/Adam"):
        assert not np.any(start[slot]), slot

    # Resuming restores the checkpoint; the recorded init_from_checkpoint does not apply.
    shutil.copytree(tmp_path / "model", tmp_path / "plain")
    make_estimator(tmp_path / "model", model=model, use_tpu=False).train(input_fn, steps=2)
    make_estimator(tmp_path / "plain", model=make_pretrained_model_fn(ckpt, "none"),
                   use_tpu=False).train(input_fn, steps=2)
    resumed, plain = checkpoint_values(tmp_path / "model"), checkpoint_values(tmp_path / "plain")
    assert resumed["global_step"] == 4
    assert_all_close(resumed, plain, atol=0)


# ------------------------------------------------------------------------------------------
# 7. Checkpoint accessors.

def test_checkpoint_accessors_before_and_after_training(tmp_path, one_device):
    estimator = make_estimator(tmp_path, one_device, iterations_per_loop=3)
    message = f"^Could not find trained model in model_dir: {tmp_path}.$"

    assert estimator.latest_checkpoint() is None
    with pytest.raises(ValueError, match=message):
        estimator.get_variable_names()
    with pytest.raises(ValueError, match=message):
        estimator.get_variable_value("global_step")
    assert estimator.eval_dir() == os.path.join(str(tmp_path), "eval")
    assert estimator.eval_dir("holdout") == os.path.join(str(tmp_path), "eval_holdout")

    estimator.train(input_fn, steps=3)

    assert estimator.latest_checkpoint() == os.path.join(str(tmp_path), "model.ckpt-3")
    assert estimator.get_variable_names() == VARIABLE_NAMES["adam"]
    assert estimator.get_variable_value("global_step") == 3
    kernel = estimator.get_variable_value("linear/hidden/kernel")
    assert isinstance(kernel, np.ndarray) and kernel.shape == (4, 3)
    np.testing.assert_array_equal(kernel, tf.train.load_variable(str(tmp_path),
                                                                 "linear/hidden/kernel"))
    with pytest.raises(tf.errors.NotFoundError):
        estimator.get_variable_value("linear/no_such_variable")


# ------------------------------------------------------------------------------------------
# 8. SIGKILL mid-training, then resume.

def wait_for(condition, timeout, what, child, stderr_path):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if child.poll() is not None:
            with open(stderr_path, "rb") as f:
                tail = f.read()[-3000:].decode(errors="replace")
            pytest.fail(f"the training process exited (code {child.returncode}) before "
                        f"{what}:\n{tail}")
        time.sleep(0.05)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


@pytest.mark.slow  # starts processes
def test_sigkilled_training_resumes_to_max_steps(tmp_path, eight_devices):
    model_dir = str(tmp_path / "model")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3",
               PYTHONPATH=os.pathsep.join(filter(None, [REPO_ROOT, os.environ.get("PYTHONPATH")])))
    with open(tmp_path / "stderr.txt", "wb") as stderr:
        child = subprocess.Popen(
            [sys.executable, os.path.join(TESTS_DIR, "train_then_kill.py"), model_dir],
            stdout=subprocess.DEVNULL, stderr=stderr, env=env)
        try:
            def two_checkpoints_after_the_first():
                state = (tf.train.get_checkpoint_state(model_dir)
                         if os.path.exists(os.path.join(model_dir, "checkpoint")) else None)
                return state is not None and len(state.all_model_checkpoint_paths) >= 3
            wait_for(two_checkpoints_after_the_first, 120, "three checkpoints", child,
                     tmp_path / "stderr.txt")
            time.sleep(0.3)  # let it run on, so the kill lands anywhere in the loop
        finally:
            if child.poll() is None:
                os.kill(child.pid, signal.SIGKILL)
            child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL

    killed_at = int(tf.train.load_variable(model_dir, "global_step"))
    assert killed_at >= 2 * train_then_kill.ITERATIONS_PER_LOOP
    last_step = killed_at + 5
    estimator = make_estimator(model_dir, eight_devices, batch_size=train_then_kill.BATCH_SIZE,
                               save_checkpoints_steps=1, keep_checkpoint_max=3)
    estimator.train(input_fn, max_steps=last_step)

    assert estimator.latest_checkpoint() == os.path.join(model_dir, f"model.ckpt-{last_step}")
    state = tf.train.get_checkpoint_state(model_dir)
    assert len(state.all_model_checkpoint_paths) == 3
    names = VARIABLE_NAMES["adam"]
    for path in state.all_model_checkpoint_paths:  # every listed checkpoint loads completely
        values = checkpoint_values(path)
        assert sorted(values) == names
        step = int(path.rsplit("-", 1)[1])
        assert values["global_step"] == step
        assert all(np.all(np.isfinite(value)) for value in values.values())
        # Adam's state went on across the kill: one multiplication by beta2 per step since 0.
        np.testing.assert_allclose(values["beta2_power"], 0.999 ** (step + 1), rtol=2e-3)
    assert checkpoint_values(model_dir)["global_step"] == last_step
    assert not [f for f in os.listdir(model_dir) if "_temp_" in f]


def _write_partitioned_checkpoint(prefix, parts):
    """A checkpoint of `parameter_server_main`'s model as TF1 wrote it, its embedding table
    `get_variable`-partitioned into `parts` and saved by a `tf.compat.v1.train.Saver`
    (parts=None: the parts under names of their own, `model/embedding/part_<i>`, as this
    package saved them before). Returns the table, kernel and bias."""
    table = np.arange(40, dtype=np.float32).reshape(10, 4) * 0.01
    kernel, bias = np.full([4, 1], 0.1, np.float32), np.array([0.2], np.float32)
    with tf.Graph().as_default():
        with v1.variable_scope("model", partitioner=v1.fixed_size_partitioner(parts or 2)):
            partitioned = v1.get_variable("embedding", [10, 4])
        v1.get_variable("out/kernel", initializer=kernel)
        v1.get_variable("out/bias", initializer=bias)
        v1.get_variable("steps_run", initializer=np.int64(7))
        v1.train.get_or_create_global_step()
        variables = v1.global_variables()
        if parts is None:
            variables = {v.op.name: v for v in variables}
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            session.run(v1.assign(v1.train.get_global_step(), 7))
            offset = 0
            for part in partitioned:  # fixed_size_partitioner: row blocks in order
                rows = part.shape[0]
                session.run(part.assign(table[offset:offset + rows]))
                offset += rows
            v1.train.Saver(variables).save(session, prefix)
    return table, kernel, bias


@pytest.mark.parametrize("parts", [3, None], ids=["tf1_slices", "part_names"])
def test_a_partitioned_variable_is_one_tf1_variable_in_checkpoints(tmp_path, parts):
    """get_variable(partitioner=...) parts are saved as slices of the one TF1 variable, as
    TF1's Saver saved them (any partitioning restores them); a TF1 checkpoint of another
    partitioning, or one naming the parts, restores."""
    import parameter_server_main as program  # pylint: disable=import-outside-toplevel
    table, kernel, bias = _write_partitioned_checkpoint(str(tmp_path / "model.ckpt-7"), parts)
    estimator = tec.Estimator(program.model_fn, model_dir=str(tmp_path))
    ids = np.arange(program.BATCH) % program.VOCABULARY
    rows = (ids % 2) * 5 + ids // 2  # TF1's embedding_lookup over 2 parts: "mod" strategy
    expected = np.mean((table[rows] @ kernel + bias - (ids * 0.1).reshape(-1, 1)) ** 2)
    assert estimator.evaluate(program.input_fn, steps=1)["loss"] == pytest.approx(expected)
    estimator.train(program.input_fn, max_steps=8)
    shapes = dict(tf.train.list_variables(str(tmp_path / "model.ckpt-8")))
    assert {name: shapes[name] for name in shapes if name.startswith("model/")} == {
        "model/embedding": [10, 4]}
    trained = estimator.get_variable_value("model/embedding")
    assert not np.allclose(trained, table)
    with tf.Graph().as_default():
        with v1.variable_scope("model", partitioner=v1.fixed_size_partitioner(4)):
            parts_of_four = v1.get_variable("embedding", [10, 4])
        with v1.Session() as session:
            v1.train.Saver([parts_of_four]).restore(session, str(tmp_path / "model.ckpt-8"))
            np.testing.assert_array_equal(session.run(tf.concat(list(parts_of_four), 0)),
                                          trained)


def test_a_partitioned_variable_trains_with_an_optimizer_that_has_slots(tmp_path):
    """Adam's slots of a partitioned variable (v1 optimizers create them under
    `tf.init_scope()` and name them from the part's `op.name`) are saved as TF1 saved them:
    slices of `<variable>/Adam` and `<variable>/Adam_1`, whole variables' shapes."""
    def partitioned_model_fn(features, labels, mode):
        with v1.variable_scope("model", partitioner=v1.fixed_size_partitioner(2)):
            weights = v1.get_variable("w", [4, 1], initializer=v1.ones_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(features, tf.concat(list(weights), 0))
                                        - labels))
        train_op = v1.train.AdamOptimizer(0.1).minimize(loss, v1.train.get_global_step())
        return tec.EstimatorSpec(mode, loss=loss, train_op=train_op)

    estimator = tec.Estimator(partitioned_model_fn, model_dir=str(tmp_path))
    estimator.train(lambda: tf.data.Dataset.from_tensors(
        (tf.ones([2, 4]), tf.zeros([2, 1]))).repeat(), steps=1)
    assert dict(tf.train.list_variables(str(tmp_path))) == {
        "beta1_power": [], "beta2_power": [], "global_step": [], "model/w": [4, 1],
        "model/w/Adam": [4, 1], "model/w/Adam_1": [4, 1]}
    # One Adam step moves every weight by the learning rate (the gradients are all 8).
    np.testing.assert_allclose(estimator.get_variable_value("model/w"), np.full([4, 1], 0.9),
                               rtol=1e-5)
