"""What TPUEstimator.train writes for TensorBoard: its own `loss` and rate scalars, and the
summaries of a `host_call`, written the legacy `tf.contrib.summary` way or with TF2's
`tf.summary`, at the steps the original wrote them."""
import logging
import os
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
from event_reader import event_files, read_scalars, read_values
from tpu_estimator_compat.rebuilt_apis import contrib_summary

v1 = tf.compat.v1
NUM_REPLICAS = 8
GLOBAL_BATCH = 16
FEATURES = np.arange(GLOBAL_BATCH * 10 * 4, dtype=np.float32).reshape(-1, 4)  # 10 steps' worth
TARGETS = FEATURES.sum(axis=1, keepdims=True)


def input_fn(params):
    dataset = tf.data.Dataset.from_tensor_slices((FEATURES, TARGETS))
    return dataset.repeat().batch(params["batch_size"], drop_remainder=True)


def make_model_fn(host_call=None, host_call_after_minimize=False):
    """A model whose loss is the global step its step starts at (read before the increment).

    `host_call(global_step [1], loss [1], features, labels)` -> `(fn, tensors)`, or None;
    it is built before `minimize()`, or after it with `host_call_after_minimize`.
    """
    def model_fn(features, labels, mode, params):
        weights = v1.get_variable("w", [4, 1], initializer=v1.zeros_initializer())
        global_step = v1.train.get_global_step()
        fit = v1.losses.mean_squared_error(labels, tf.matmul(features, weights))
        loss = tf.cast(global_step, tf.float32) + 0.0 * fit

        def make_host_call():
            if host_call is None:
                return None
            return host_call(tf.reshape(global_step, [1]), tf.reshape(loss, [1]), features,
                             labels)

        host = None if host_call_after_minimize else make_host_call()
        optimizer = tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(0.0))
        train_op = optimizer.minimize(loss, global_step=global_step)
        if host_call_after_minimize:
            host = make_host_call()
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op, host_call=host)
    return model_fn


def train(model_dir, strategy, steps, iterations_per_loop, host_call=None,
          host_call_every_n_steps=1, host_call_after_minimize=False, **config_kwargs):
    tpu_config = tec.TPUConfig(
        iterations_per_loop=iterations_per_loop,
        per_host_input_for_training=tec.InputPipelineConfig.PER_HOST_V2,
        experimental_host_call_every_n_steps=host_call_every_n_steps)
    config = tec.RunConfig(model_dir=str(model_dir), train_distribute=strategy,
                           tpu_config=tpu_config, **config_kwargs)
    estimator = tec.TPUEstimator(make_model_fn(host_call, host_call_after_minimize),
                                 config=config,
                                 train_batch_size=GLOBAL_BATCH)
    return estimator.train(input_fn, steps=steps)


def steps_of(scalars, tag):
    return [step for step, _ in scalars[tag]]


def values_of(scalars, tag):
    return [value for _, value in scalars[tag]]


# ------------------------------------------------------------------------------------------
# The estimator's own summaries.

@pytest.mark.slow  # trains or evaluates for several seconds
def test_loss_and_rate_scalars_every_save_summary_steps(tmp_path, eight_devices, caplog):
    caplog.set_level(logging.INFO, logger="tensorflow")
    train(tmp_path, eight_devices, steps=12, iterations_per_loop=2, save_summary_steps=4,
          log_step_count_steps=4)

    scalars = read_scalars(str(tmp_path))
    assert sorted(scalars) == ["examples/sec", "global_step/sec", "loss"]
    # As TF1's SummarySaverHook: the loss after the first loop, then every 4 steps from there
    # (at loop ends). The rates are measured from the end of the first loop, as TF1's
    # StepCounterHook measured them.
    assert steps_of(scalars, "loss") == [2, 6, 10]
    # The progress lines (TF1's LoggingTensorHook) name the same steps and losses.
    lines = [m for m in caplog.messages if m.startswith("loss = ")]
    assert [line.split("step = ")[1].split()[0] for line in lines] == ["2", "6", "10"]
    assert lines[0] == "loss = 1.0, step = 2" and lines[1].startswith("loss = 5.0, step = 6 (")
    # The rates (TF1's ExamplesPerSecondHook): every ceil(4 / 2) = 2 global steps, i.e.
    # every loop, from the end of the first loop.
    assert steps_of(scalars, "global_step/sec") == steps_of(scalars, "examples/sec") == [
        4, 6, 8, 10, 12]
    # The loss of the last step of the loop, from replica 0: steps 1, 5 and 9 started there.
    assert values_of(scalars, "loss") == [1.0, 5.0, 9.0]
    rates = np.array(values_of(scalars, "global_step/sec"))
    assert np.all(rates > 0)
    np.testing.assert_allclose(values_of(scalars, "examples/sec"), GLOBAL_BATCH * rates,
                               rtol=1e-4)
    # TF1's encoding: simple_value scalars, as tf.compat.v1.summary.scalar wrote them.
    assert {value.WhichOneof("value") for _, value in read_values(str(tmp_path))} == {
        "simple_value"}


@pytest.mark.slow  # trains or evaluates for several seconds
def test_a_run_shorter_than_save_summary_steps_still_writes_its_first_loss(
        tmp_path, eight_devices):
    train(tmp_path, eight_devices, steps=4, iterations_per_loop=2, save_summary_steps=100)
    train(tmp_path, eight_devices, steps=3, iterations_per_loop=3, save_summary_steps=100)
    scalars = read_scalars(str(tmp_path))
    assert list(scalars) == ["loss"]
    assert sorted(scalars["loss"]) == [(2, 1.0), (7, 6.0)]


@pytest.mark.slow  # trains or evaluates for several seconds
def test_save_summary_steps_zero_writes_no_scalars(tmp_path, eight_devices):
    train(tmp_path, eight_devices, steps=4, iterations_per_loop=2, save_summary_steps=0)
    assert read_scalars(str(tmp_path)) == {}
    assert not [f for f in os.listdir(tmp_path) if "tfevents" in f]


@pytest.mark.slow  # trains and evaluates for several seconds
def test_one_event_file_per_directory_across_calls_and_a_new_one_after_removal(
        tmp_path, one_device):
    """As the original (TF1's writer caches: one file each in model_dir and eval/ after three
    train + evaluate calls in one process); a removed directory gets a new file."""
    def event_files(directory):
        return [f for f in os.listdir(directory) if "tfevents" in f]

    config = tec.RunConfig(model_dir=str(tmp_path), train_distribute=one_device,
                           save_summary_steps=1,
                           tpu_config=tec.TPUConfig(iterations_per_loop=2))
    estimator = tec.TPUEstimator(make_model_fn(), config=config, use_tpu=False,
                                 train_batch_size=GLOBAL_BATCH, eval_batch_size=GLOBAL_BATCH)
    for _ in range(3):
        estimator.train(input_fn, steps=2)
        estimator.evaluate(input_fn, steps=1)
    assert len(event_files(tmp_path)) == len(event_files(estimator.eval_dir())) == 1
    assert steps_of(read_scalars(estimator.eval_dir()), "loss") == [2, 4, 6]
    # use_tpu=False: every step's loss, as the original's SummarySaverHook wrote it
    assert steps_of(read_scalars(str(tmp_path)), "loss") == [1, 2, 3, 4, 5, 6]

    shutil.rmtree(tmp_path)  # a user clearing model_dir between runs
    estimator.train(input_fn, steps=2)
    estimator.evaluate(input_fn, steps=1)
    # (the weights in memory continue: docs/compatibility.md, "Known differences")
    assert steps_of(read_scalars(str(tmp_path)), "loss") == [7, 8]
    assert steps_of(read_scalars(estimator.eval_dir()), "loss") == [8]
    assert len(event_files(tmp_path)) == len(event_files(estimator.eval_dir())) == 1


# ------------------------------------------------------------------------------------------
# host_call.

def contrib_host_call(logdir):
    """The legacy host_call: tf.contrib.summary writer, record every 5 global steps."""
    def make(global_step, loss, features, labels):
        del features, labels

        def host_call_fn(global_step, loss):
            global_step = global_step[0]
            with contrib_summary.create_file_writer(logdir).as_default():
                with contrib_summary.record_summaries_every_n_global_steps(5, global_step):
                    contrib_summary.scalar("host_call_loss", loss[0], step=global_step)
                    return contrib_summary.all_summary_ops()
        return host_call_fn, [global_step, loss]
    return make


@pytest.mark.slow  # trains or evaluates for several seconds
@pytest.mark.parametrize("every_n_steps, expected_steps", [
    (1, list(range(0, 42, 5))),
    # The counter of experimental_host_call_every_n_steps restarts with every loop: loop 1
    # calls the fn at steps 0, 2, ..., 20, loop 2 at 21, 23, ..., 41.
    (2, [0, 10, 20, 25, 35]),
])
def test_contrib_summary_host_call_records_every_5_global_steps(
        tmp_path, eight_devices, every_n_steps, expected_steps):
    logdir = str(tmp_path / "host_call")
    train(tmp_path / "model", eight_devices, steps=42, iterations_per_loop=21,
          host_call=contrib_host_call(logdir), host_call_every_n_steps=every_n_steps)

    scalars = read_scalars(logdir)
    assert list(scalars) == ["host_call_loss"]
    # model_fn read the global step before its increment: the first step is 0.
    assert steps_of(scalars, "host_call_loss") == expected_steps
    assert values_of(scalars, "host_call_loss") == [float(s) for s in expected_steps]
    assert {value.WhichOneof("value") for _, value in read_values(logdir)} == {"simple_value"}


@pytest.mark.slow  # trains or evaluates for several seconds
def test_tf2_summary_host_call(tmp_path, eight_devices):
    logdir = str(tmp_path / "host_call")

    def make(global_step, loss, features, labels):
        def host_call_fn(global_step, loss, labels):
            with tf.summary.create_file_writer(logdir).as_default():
                tf.summary.scalar("tf2_loss", loss[0], step=global_step[0])
                tf.summary.scalar("mean_label", tf.reduce_mean(labels), step=global_step[0])
                return v1.summary.all_v2_summary_ops()
        return host_call_fn, [global_step, loss, labels]

    train(tmp_path / "model", eight_devices, steps=6, iterations_per_loop=3, host_call=make)

    scalars = read_scalars(logdir)
    assert sorted(scalars) == ["mean_label", "tf2_loss"]
    assert steps_of(scalars, "tf2_loss") == list(range(6))
    assert values_of(scalars, "tf2_loss") == [float(s) for s in range(6)]
    # The labels of all replicas together: the whole global batch of each step.
    expected_means = [TARGETS[GLOBAL_BATCH * s:GLOBAL_BATCH * (s + 1)].mean() for s in range(6)]
    np.testing.assert_allclose(values_of(scalars, "mean_label"), expected_means, rtol=1e-6)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_host_call_tensors_are_concatenated_across_replicas(tmp_path, eight_devices):
    seen = []

    def make(global_step, loss, features, labels):
        replica_id = tf.reshape(
            tf.distribute.get_replica_context().replica_id_in_sync_group, [1])

        def host_call_fn(replica_id, global_step, features):
            def record(*arrays):
                seen.append([np.array(a) for a in arrays])
                return np.int64(0)
            return tf.numpy_function(record, [replica_id, global_step, features], tf.int64)
        return host_call_fn, {"replica_id": replica_id, "global_step": global_step,
                              "features": features}

    train(tmp_path, eight_devices, steps=4, iterations_per_loop=2, host_call=make)

    assert len(seen) == 4  # once per step, in step order
    for step, (replica_ids, global_steps, features) in enumerate(seen):
        np.testing.assert_array_equal(replica_ids, np.arange(NUM_REPLICAS))
        np.testing.assert_array_equal(global_steps, np.full([NUM_REPLICAS], step))
        # [2, 4] per replica -> [16, 4], in replica order: the step's global batch.
        np.testing.assert_array_equal(
            features, FEATURES[GLOBAL_BATCH * step:GLOBAL_BATCH * (step + 1)])


def recording_host_call(seen):
    """A host_call whose fn appends each step's concatenated tensors to `seen`."""
    def make(global_step, loss, features, labels):
        def host_call_fn(global_step, loss):
            def record(*arrays):
                seen.append([np.array(a) for a in arrays])
                return np.int64(0)
            return tf.numpy_function(record, [global_step, loss], tf.int64)
        return host_call_fn, [global_step, loss]
    return make


@pytest.mark.slow  # trains or evaluates for several seconds
@pytest.mark.parametrize("devices", ["one_device", "eight_devices"])
def test_global_step_read_after_minimize_arrives_with_the_pre_increment_value(
        tmp_path, devices, request):
    # The tensorflow/tpu resnet/efficientnet host_call pattern: tf.reshape(global_step, [1])
    # built after minimize(), with no dependency on the update; TF1 read the step's start.
    seen = []
    train(tmp_path, request.getfixturevalue(devices), steps=4, iterations_per_loop=2,
          host_call=recording_host_call(seen), host_call_after_minimize=True)
    assert [int(global_step[0]) for global_step, _ in seen] == [0, 1, 2, 3]


# ------------------------------------------------------------------------------------------
# use_tpu=False and Estimator: the original's summaries and lines step by step.
#
# Expectations from the original (TF 2.15 estimator, graph mode) training the model below
# for 250 steps: TPUEstimator(use_tpu=False, iterations_per_loop=50) and Estimator, with
# RunConfig defaults (save_summary_steps=100, log_step_count_steps=100). Both wrote `loss` at
# steps 1, 101, 201 with these values; Estimator logged `loss = 0.29785156, step = 1`,
# `global_step/sec: R`, `loss = 0.0013576404, step = 101 (0.228 sec)`, ... and wrote
# `global_step/sec` (only) at 101, 201; TPUEstimator logged no loss line and wrote
# `global_step/sec` and `examples/sec` every ceil(100 / 50) = 2 steps (3, 5, ..., 249).
# With a host_call writing `loss` (tf.summary, into model_dir) its own was tagged `loss_1`.

ORIGINAL_LOSSES = {1: 0.2978515625, 101: 0.0013576403725892305, 201: 2.9443326639011502e-06}
ORIGINAL_LOSS_LINES = ["loss = 0.29785156, step = 1", "loss = 0.0013576404, step = 101",
                       "loss = 2.9443327e-06, step = 201"]
SMALL_X = np.arange(16 * 4, dtype=np.float32).reshape(-1, 4) / 64.
SMALL_Y = SMALL_X.sum(axis=1, keepdims=True)


def small_input_fn(params=None):
    batch = params["batch_size"] if params and "batch_size" in params else 4
    return tf.data.Dataset.from_tensor_slices((SMALL_X, SMALL_Y)).repeat().batch(
        batch, drop_remainder=True)


def small_model_fn(kind, host_call_dir=None):
    def model_fn(features, labels, mode, params):
        weights = v1.get_variable("w", [4, 1], initializer=v1.zeros_initializer())
        loss = v1.losses.mean_squared_error(labels, tf.matmul(features, weights))
        global_step = v1.train.get_global_step()
        train_op = v1.train.GradientDescentOptimizer(0.01).minimize(loss, global_step)
        if kind == "Estimator":
            return tec.EstimatorSpec(mode, loss=loss, train_op=train_op)
        host_call = None
        if host_call_dir:
            def host_fn(step, step_loss):
                with tf.summary.create_file_writer(host_call_dir).as_default():
                    tf.summary.scalar("loss", step_loss[0], step=step[0])
                    return v1.summary.all_v2_summary_ops()
            host_call = (host_fn, [tf.reshape(global_step, [1]), tf.reshape(loss, [1])])
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op, host_call=host_call)
    return model_fn


def train_small(model_dir, kind, max_steps, host_call=False):
    if kind == "Estimator":
        estimator = tec.Estimator(small_model_fn(kind), config=tec.RunConfig(
            model_dir=str(model_dir)))
    else:
        config = tec.RunConfig(model_dir=str(model_dir),
                               tpu_config=tec.TPUConfig(iterations_per_loop=50))
        estimator = tec.TPUEstimator(
            small_model_fn(kind, str(model_dir) if host_call else None), config=config,
            use_tpu=False, train_batch_size=4)
    estimator.train(small_input_fn, max_steps=max_steps)


def progress_lines(caplog):
    return [m for m in caplog.messages if m.startswith(("loss = ", "global_step/sec: ",
                                                         "examples/sec: "))]


@pytest.mark.slow  # trains for several seconds
def test_tpu_estimator_without_tpu_writes_the_originals_summaries_step_by_step(
        tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="tensorflow")
    train_small(tmp_path, "TPUEstimator", max_steps=202)
    scalars = read_scalars(str(tmp_path))
    assert sorted(scalars) == ["examples/sec", "global_step/sec", "loss"]
    # The first step's loss, then every save_summary_steps, with the original's values.
    assert steps_of(scalars, "loss") == [1, 101, 201]
    np.testing.assert_allclose(values_of(scalars, "loss"), list(ORIGINAL_LOSSES.values()),
                               rtol=1e-6)
    # Rates every 2 steps in the original; here at the loop ends among those steps.
    assert steps_of(scalars, "global_step/sec") == steps_of(scalars, "examples/sec") == [
        51, 101, 151, 201]
    np.testing.assert_allclose(values_of(scalars, "examples/sec"),
                               4 * np.array(values_of(scalars, "global_step/sec")), rtol=1e-4)
    lines = progress_lines(caplog)
    loss_lines = [line for line in lines if line.startswith("loss = ")]
    assert loss_lines[0] == ORIGINAL_LOSS_LINES[0]
    assert [line.split(" (")[0] for line in loss_lines] == ORIGINAL_LOSS_LINES
    assert sum(line.startswith("examples/sec: ") for line in lines) == 4


@pytest.mark.slow  # trains for several seconds
def test_estimator_writes_the_originals_summaries_and_lines_step_by_step(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="tensorflow")
    train_small(tmp_path, "Estimator", max_steps=202)
    scalars = read_scalars(str(tmp_path))
    assert sorted(scalars) == ["global_step/sec", "loss"]  # no examples/sec, as Estimator
    assert steps_of(scalars, "loss") == [1, 101, 201]
    np.testing.assert_allclose(values_of(scalars, "loss"), list(ORIGINAL_LOSSES.values()),
                               rtol=1e-6)
    assert steps_of(scalars, "global_step/sec") == [101, 201]
    lines = progress_lines(caplog)
    assert [re.sub(r"(: [\d.e+]+| \(\d+\.\d{3} sec\))$", "", line) for line in lines] == [
        ORIGINAL_LOSS_LINES[0], "global_step/sec", ORIGINAL_LOSS_LINES[1], "global_step/sec",
        ORIGINAL_LOSS_LINES[2]]


@pytest.mark.slow  # trains for several seconds
def test_host_call_loss_and_the_estimators_loss_are_two_series_as_in_the_original(tmp_path):
    train_small(tmp_path, "TPUEstimator", max_steps=202, host_call=True)
    scalars = read_scalars(str(tmp_path))
    # The estimator's own: `loss_1`, the original's tag beside a host_call's `loss`.
    assert steps_of(scalars, "loss_1") == [1, 101, 201]
    np.testing.assert_allclose(values_of(scalars, "loss_1"), list(ORIGINAL_LOSSES.values()),
                               rtol=1e-6)
    # The host_call's: every step, at the global step its step started at, in order (the
    # first step's loss at 0).
    assert steps_of(scalars, "loss") == list(range(202))
    assert values_of(scalars, "loss")[0] == pytest.approx(ORIGINAL_LOSSES[1], rel=1e-6)
    # A graph for TensorBoard's Graphs tab: the TRAIN graph, with model_fn's variable, once
    # per event file (a second train() call adds its first step's loss, not a graph).
    train_small(tmp_path, "TPUEstimator", max_steps=203, host_call=True)
    assert steps_of(read_scalars(str(tmp_path)), "loss_1") == [1, 101, 201, 203]
    graphs = [tf.compat.v1.GraphDef.FromString(event.graph_def)
              for path in event_files(str(tmp_path))
              for event in tf.compat.v1.train.summary_iterator(path)
              if event.HasField("graph_def")]
    assert len(graphs) == 1
    assert "w" in {node.name for node in graphs[0].node}
