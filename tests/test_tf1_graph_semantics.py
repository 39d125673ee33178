"""The step runs the user's v1 model_fn with TF1 graph semantics (issue 11).

Expected numbers come from running the same model_fn on the original TPUEstimator
(TensorFlow 2.15 + tensorflow-estimator 2.15, graph mode, `use_tpu=False`): 4 steps of
GradientDescent(0.05) on batches of 8, an ExponentialMovingAverage(0.5) applied after each
step, then evaluation on 32 examples. 8 replicas on the global batch (CrossShardOptimizer)
must give the same numbers.
"""
import gc
import os

import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
from event_reader import read_scalars
import helpers
from helpers import make_estimator
from tpu_estimator_compat.v1 import layers as legacy_layers

pytestmark = pytest.mark.slow  # estimator runs (and processes): seconds each

v1 = tf.compat.v1

X = (np.arange(64 * 4, dtype=np.float32).reshape(64, 4) % 7) / 7.0
Y = (X @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32) + 0.25).astype(np.float32)

# The original's values after train(steps=4).
KERNEL = [0.19185805, 0.15460991, 0.24860319, 0.33512232]
BIAS = 0.32888699
EMA_KERNEL = [0.17605621, 0.14836587, 0.21816367, 0.28590551]
EMA_BIAS = 0.26618367
# The original's evaluate() results on X[:32] with the trained weights...
EVAL_MSE, EVAL_FLAT_MEAN = 1.2978544, 0.72011453
# ... and with the moving averages restored into the model (Scaffold saver).
EMA_EVAL_MSE, EMA_EVAL_FLAT_MEAN = 1.4363992, 0.61492473

DEVICES = ["one_device", "eight_devices"]


def train_input_fn(params):
    dataset = tf.data.Dataset.from_tensor_slices((X, Y))
    return dataset.repeat().batch(params["batch_size"], drop_remainder=True)


def eval_input_fn(params):
    return tf.data.Dataset.from_tensor_slices((X[:32], Y[:32])).batch(
        params["batch_size"], drop_remainder=True)


def make_model_fn(record, ema_saver=False):
    """A v1 model_fn that builds its train op, an EMA and an unfetched counter in EVERY mode
    (as many real programs do), and checks TF1 variable behaviour while it runs."""

    def model_fn(features, labels, mode, params):
        record.setdefault("model_fn_calls", []).append(mode)
        predictions = legacy_layers.dense(features, 1, name="dense",
                                          kernel_initializer=v1.constant_initializer(0.1))
        loss = v1.losses.mean_squared_error(labels, predictions)
        global_step = v1.train.get_global_step()
        optimizer = tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(0.05))
        counter = v1.get_variable("counter", [], tf.int64, initializer=v1.zeros_initializer(),
                                  trainable=False)
        v1.assign_add(counter, 1)  # never fetched: TF1 never ran it
        minimize = optimizer.minimize(loss, global_step=global_step)
        ema = v1.train.ExponentialMovingAverage(0.5)
        if mode == tec.ModeKeys.TRAIN or not ema_saver:
            with tf.control_dependencies([minimize]):
                train_op = ema.apply(v1.trainable_variables())
        # Variables are TF1 variables: hashable, with `.op.name`.
        trainable = set(v1.trainable_variables())
        record["names"] = sorted(v.op.name for v in trainable)
        record["by_variable"] = {v: v.op.name for v in v1.global_variables()}
        if mode == tec.ModeKeys.TRAIN:
            step_after = tf.reshape(global_step, [1])  # read after minimize(), no dependency

            def host_call(step):
                def append(value):
                    record.setdefault("host_call_steps", []).append(int(value[0]))
                    return np.int64(0)
                return tf.numpy_function(append, [step], tf.int64)
            return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op,
                                        host_call=(host_call, [step_after]))
        if mode == tec.ModeKeys.EVAL:
            flat = tf.reshape(tf.tile(predictions, [1, 3]), [-1])  # [batch * 3]

            def metric_fn(labels, predictions, flat):
                return {"mse": v1.metrics.mean_squared_error(labels, predictions),
                        "flat_mean": v1.metrics.mean(flat)}

            def scaffold_fn():
                return v1.train.Scaffold(saver=v1.train.Saver(ema.variables_to_restore()))
            return tec.TPUEstimatorSpec(
                mode, loss=loss, eval_metrics=(metric_fn, [labels, predictions, flat]),
                scaffold_fn=scaffold_fn if ema_saver else None)
        return tec.TPUEstimatorSpec(mode, predictions={"p": predictions})

    return model_fn


def weights(estimator):
    return {name: estimator.get_variable_value(name) for name in estimator.get_variable_names()}


@pytest.mark.parametrize("devices", DEVICES)
def test_only_fetched_ops_run_and_reads_see_the_step_start(tmp_path, devices, request):
    record = {}
    estimator = make_estimator(tmp_path, request.getfixturevalue(devices), make_model_fn(record))
    estimator.train(train_input_fn, steps=4)
    trained = weights(estimator)
    np.testing.assert_allclose(trained["dense/kernel"].ravel(), KERNEL, atol=1e-6)
    np.testing.assert_allclose(trained["dense/bias"], [BIAS], atol=1e-6)
    np.testing.assert_allclose(trained["dense/kernel/ExponentialMovingAverage"].ravel(),
                               EMA_KERNEL, atol=1e-6)
    np.testing.assert_allclose(trained["dense/bias/ExponentialMovingAverage"], [EMA_BIAS],
                               atol=1e-6)
    assert trained["counter"] == 0
    # The global step read after minimize() got the value each step started with.
    assert record["host_call_steps"] == [0, 1, 2, 3]

    first = estimator.evaluate(eval_input_fn)
    second = estimator.evaluate(eval_input_fn)
    list(estimator.predict(eval_input_fn))
    assert first["global_step"] == second["global_step"] == 4
    assert first["mse"] == pytest.approx(EVAL_MSE, abs=1e-5)
    assert second["mse"] == pytest.approx(EVAL_MSE, abs=1e-5)
    assert first["flat_mean"] == pytest.approx(EVAL_FLAT_MEAN, abs=1e-5)
    after = weights(estimator)
    for name, value in trained.items():
        np.testing.assert_array_equal(after[name], value, err_msg=name)
    # The next train() continues from the trained weights, not ones evaluate() moved.
    estimator.train(train_input_fn, steps=1)
    assert estimator.get_variable_value("global_step") == 5


@pytest.mark.parametrize("devices", DEVICES)
def test_variables_are_tf1_variables_and_ema_restores_through_the_scaffold_saver(
        tmp_path, devices, request):
    record = {}
    strategy = request.getfixturevalue(devices)
    estimator = make_estimator(tmp_path, strategy, make_model_fn(record, ema_saver=True))
    estimator.train(train_input_fn, steps=4)
    assert record["names"] == ["dense/bias", "dense/kernel"]
    assert sorted(record["by_variable"].values()) == [
        "counter", "dense/bias", "dense/bias/ExponentialMovingAverage", "dense/kernel",
        "dense/kernel/ExponentialMovingAverage", "global_step"]
    results = estimator.evaluate(eval_input_fn)
    assert results["mse"] == pytest.approx(EMA_EVAL_MSE, abs=1e-5)
    assert results["flat_mean"] == pytest.approx(EMA_EVAL_FLAT_MEAN, abs=1e-5)
    # The EMA restore did not leak into training: it restores the checkpoint's own values.
    estimator.train(train_input_fn, steps=1)
    assert estimator.get_variable_value("global_step") == 5
    reference = make_estimator(tmp_path / "reference", strategy, make_model_fn({}))
    reference.train(train_input_fn, steps=4)
    reference.train(train_input_fn, steps=1)
    np.testing.assert_allclose(estimator.get_variable_value("dense/kernel"),
                               reference.get_variable_value("dense/kernel"), atol=1e-6)


@pytest.mark.parametrize("devices, replicas", [("one_device", 1), ("eight_devices", 8)])
def test_model_fn_is_called_once_per_replica_with_its_own_collections(
        tmp_path, devices, replicas, request):
    calls = []  # the graphs model_fn was called in

    def model_fn(features, labels, mode, params):
        calls.append(v1.get_default_graph())
        v1.add_to_collection("my_collection", features)
        assert len(v1.get_collection("my_collection")) == 1  # not the other replicas'
        init = v1.constant_initializer(np.linspace(-1, 1, 12).reshape(4, 3))
        hidden = legacy_layers.batch_normalization(
            legacy_layers.dense(features, 3, name="dense", kernel_initializer=init),
            training=True)
        loss = v1.losses.mean_squared_error(
            labels, legacy_layers.dense(hidden, 1, kernel_initializer=v1.ones_initializer()))
        ema = v1.train.ExponentialMovingAverage(0.9)
        optimizer = tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(0.01))
        with tf.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
            minimize = optimizer.minimize(loss, global_step=v1.train.get_global_step())
        with tf.control_dependencies([minimize]):
            train_op = ema.apply(v1.trainable_variables())
        assert len(v1.moving_average_variables()) == len(v1.trainable_variables())
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    estimator = make_estimator(tmp_path, request.getfixturevalue(devices), model_fn)
    estimator.train(train_input_fn, steps=2)
    # Once, for the compiled step, as a TPU traced it once for all its cores: the other
    # replicas copy replica 0's graph, and the `.meta` files' graph is made from it.
    assert [graph.building_function for graph in calls] == [True]
    estimator.train(train_input_fn, steps=2)  # the compiled program is reused
    assert len(calls) == 1
    # The batch-norm update ran: after one step from zero, the moving mean is, as TF1 on a
    # TPU saved it, replica 0's: 0.01 x the mean over replica 0's part of the global batch.
    one_step = make_estimator(tmp_path / "one_step", request.getfixturevalue(devices), model_fn)
    one_step.train(train_input_fn, steps=1)
    replica_0_rows = X[:8 // replicas]
    expected = 0.01 * (replica_0_rows @ np.linspace(-1, 1, 12).reshape(4, 3)).mean(axis=0)
    np.testing.assert_allclose(one_step.get_variable_value("batch_normalization/moving_mean"),
                               expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("control_flow", ["while_loop", "cond"])
def test_control_flow_differentiated_after_an_all_reduce_falls_back_to_a_call_per_replica(
        tmp_path, one_device, eight_devices, caplog, control_flow):
    """The replicas are copied from replica 0's graph, an all-reduce at a time. A while
    loop or cond differentiated after an all-reduce changes its op (inputs, outputs) after
    replicas copied it, so the step is traced again with model_fn called once per replica
    (logged), and 8 replicas still train as 1 replica on the global batch."""
    calls = []

    def model_fn(features, labels, mode, params):
        calls.append(mode)
        predictions = legacy_layers.dense(features, 1, name="dense",
                                          kernel_initializer=v1.constant_initializer(0.1))
        if control_flow == "while_loop":
            _, shaped = v1.while_loop(lambda i, _: i < 2,
                                      lambda i, x: (i + 1, x * 0.5 + predictions),
                                      [tf.constant(0), tf.zeros_like(predictions)])
        else:
            shaped = v1.cond(tf.reduce_sum(features) > 0.0, lambda: tf.sin(predictions) * 2.0,
                             lambda: predictions)
        loss = v1.losses.mean_squared_error(labels, shaped)
        summed = v1.tpu.cross_replica_sum(loss)  # an all-reduce before the gradients
        optimizer = tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(0.05))
        train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=tf.group(train_op, summed))

    weights = {}
    for devices, strategy in [("one", one_device), ("eight", eight_devices)]:
        calls.clear()
        estimator = make_estimator(tmp_path / devices, strategy, model_fn)
        with caplog.at_level("INFO"):
            estimator.train(train_input_fn, steps=4)
        weights[devices] = estimator.get_variable_value("dense/kernel")
    # 1 call to copy replica 0 from, 8 per replica, 1 for the `.meta` graph
    assert calls == [tec.ModeKeys.TRAIN] * 10
    assert "Calling model_fn once per replica: replica 0's graph cannot be copied" in caplog.text
    np.testing.assert_allclose(weights["eight"], weights["one"], rtol=1e-5)


def test_copied_replicas_draw_random_numbers_of_their_own_reproducibly(tmp_path,
                                                                      eight_devices):
    """The replicas copied from replica 0's graph do not repeat its random numbers (each
    dropout mask its own), and under tf_random_seed a new estimator draws the same ones."""

    def model_fn(features, labels, mode, params):
        noise = v1.random_uniform([params["batch_size"]])  # unseeded: the graph's op seeds
        predictions = legacy_layers.dense(features, 1, name="dense")[:, 0] * 0.0 + noise
        return tec.TPUEstimatorSpec(mode, predictions={"noise": predictions})

    def predict_input_fn(params):
        return tf.data.Dataset.from_tensor_slices(X[:16]).batch(params["batch_size"],
                                                                 drop_remainder=True)

    draws = []
    for run in range(2):
        estimator = make_estimator(tmp_path / str(run), eight_devices, model_fn,
                                   tf_random_seed=7, batch_size=16)
        draws.append(np.array([p["noise"] for p in estimator.predict(predict_input_fn)]))
    by_replica = draws[0].reshape(8, 2)  # 2 rows per replica, replica by replica
    assert len({tuple(rows) for rows in by_replica}) == 8
    np.testing.assert_array_equal(draws[0], draws[1])


def test_collections_filtered_by_a_scope_hold_every_replicas_own_ops(
        tmp_path, one_device, eight_devices):
    """MirroredStrategy names replica N > 0's ops `replica_N/...`; TF1 code filtering
    collections by a variable scope's name (TF-GAN's update ops, a scope's regularization
    losses) must still find that replica's ops, so 8 replicas train as 1 replica."""

    def model_fn(features, labels, mode, params):
        with v1.variable_scope("net"):
            legacy_layers.batch_normalization(features, training=True)  # only its update
            hidden = legacy_layers.dense(
                features, 3, kernel_initializer=v1.ones_initializer(),
                kernel_regularizer=lambda w: 0.5 * tf.reduce_sum(w * w))
            prediction = legacy_layers.dense(hidden, 1, kernel_initializer=v1.ones_initializer())
        update_ops = v1.get_collection(v1.GraphKeys.UPDATE_OPS)
        assert update_ops and v1.get_collection(v1.GraphKeys.UPDATE_OPS, "net") == update_ops
        loss = v1.losses.mean_squared_error(labels, prediction) + tf.add_n(
            v1.losses.get_regularization_losses("net"))
        optimizer = tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(0.01))
        with tf.control_dependencies(update_ops):
            train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    weights = []
    for name, strategy in [("one", one_device), ("eight", eight_devices)]:
        estimator = make_estimator(tmp_path / name, strategy, model_fn)
        estimator.train(train_input_fn, steps=2)
        weights.append(estimator.get_variable_value("net/dense/kernel"))
    # (The batch norm's statistics are replica 0's with TPU semantics, as TF1 saved them:
    # test_cross_shard_semantics.py.)
    np.testing.assert_allclose(weights[1], weights[0], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("devices", DEVICES)
def test_optimizer_code_merged_across_replicas_runs_as_tf1_code(tmp_path, devices, request):
    """A v1 optimizer's cross-replica part (`_distributed_apply`) tests `op not in
    TRAIN_OP`; with a tensor in that collection (TF-GAN's train ops are loss tensors) TF1
    compared by identity, where TF2 compares values and fails on the op."""

    def model_fn(features, labels, mode, params):
        prediction = legacy_layers.dense(features, 1, kernel_initializer=v1.ones_initializer())
        loss = v1.losses.mean_squared_error(labels, prediction)
        v1.add_to_collection(v1.GraphKeys.TRAIN_OP, tf.identity(loss))
        return helpers.sgd_spec(mode, loss, 0.01)

    estimator = make_estimator(tmp_path, request.getfixturevalue(devices), model_fn)
    estimator.train(train_input_fn, steps=2)
    assert estimator.get_variable_value("global_step") == 2


@pytest.mark.parametrize("devices", DEVICES)
def test_metric_tensors_of_k_rows_per_example_drop_padding_by_example(
        tmp_path, devices, request):
    def model_fn(features, labels, mode, params):
        predictions = legacy_layers.dense(features, 1, name="dense")
        loss = v1.losses.mean_squared_error(labels, predictions)
        optimizer = tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(0.05))
        train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
        if mode == tec.ModeKeys.TRAIN:
            return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)
        rows = tf.reshape(tf.concat([predictions, 2 * predictions], axis=1), [-1])

        def metric_fn(rows, predictions):
            return {"rows_mean": v1.metrics.mean(rows),
                    "mean": v1.metrics.mean(predictions)}
        return tec.TPUEstimatorSpec(mode, loss=loss,
                                    eval_metrics=(metric_fn, [rows, predictions]))

    def input_of_30(params):  # the last batch is padded on the TPU path
        return tf.data.Dataset.from_tensor_slices((X[:30], Y[:30])).batch(params["batch_size"])

    estimator = make_estimator(tmp_path, request.getfixturevalue(devices), model_fn)
    estimator.train(train_input_fn, steps=2)
    results = estimator.evaluate(input_of_30)
    kernel = estimator.get_variable_value("dense/kernel")
    bias = estimator.get_variable_value("dense/bias")
    predictions = X[:30] @ kernel + bias
    assert results["mean"] == pytest.approx(float(predictions.mean()), rel=1e-5)
    assert results["rows_mean"] == pytest.approx(1.5 * float(predictions.mean()), rel=1e-5)


class StepRecorder(v1.train.SessionRunHook):
    def __init__(self):
        self.steps = []

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(v1.train.get_global_step())

    def after_run(self, run_context, run_values):
        self.steps.append(int(run_values.results))


@pytest.mark.parametrize("use_tpu, train_steps, eval_steps", [
    # Estimator: one step per Session.run, which read the global step before the train op
    # incremented it (the original, 3 runs of 4; its read raced the increment)
    (False, [0, 1, 2, 3], [4, 4, 4]),
    (True, [2, 4], [4]),  # TPU: one Session.run per loop; evaluation is one loop
])
def test_hooks_run_every_step_with_cpu_semantics_and_every_loop_on_tpu(
        tmp_path, use_tpu, train_steps, eval_steps, one_device):
    estimator = tec.TPUEstimator(
        make_model_fn({}), use_tpu=use_tpu, train_batch_size=8, eval_batch_size=8,
        config=tec.RunConfig(model_dir=str(tmp_path),
                             train_distribute=one_device if use_tpu else None,
                             tpu_config=tec.TPUConfig(iterations_per_loop=2)))
    hook, eval_hook = StepRecorder(), StepRecorder()
    estimator.train(train_input_fn, steps=4, hooks=[hook])
    estimator.evaluate(eval_input_fn, steps=3, hooks=[eval_hook])
    assert hook.steps == train_steps
    assert eval_hook.steps == eval_steps


@pytest.mark.parametrize("devices", DEVICES)
def test_checkpoints_have_meta_graphs_that_import_restore_and_train(tmp_path, devices,
                                                                    request):
    """The `.meta` graph restores the checkpoint, computes the model's loss by its TF1 name
    and trains: its TRAIN_OP is the step TF1 ran (GradientDescent, then the moving
    averages). It is made from the traced step (replica 0's on 8): model_fn is called once."""
    record = {}
    estimator = make_estimator(tmp_path, request.getfixturevalue(devices),
                               make_model_fn(record), keep_checkpoint_max=1)
    estimator.train(train_input_fn, steps=4)
    files = sorted(os.listdir(tmp_path))
    assert [f for f in files if f.startswith("model.ckpt")] == [
        "model.ckpt-4.data-00000-of-00001", "model.ckpt-4.index", "model.ckpt-4.meta"]
    with tf.Graph().as_default() as graph:
        saver = v1.train.import_meta_graph(str(tmp_path / "model.ckpt-4.meta"))
        names = sorted(v.op.name for v in v1.global_variables())
        by_name = {v.op.name: v for v in v1.global_variables()}
        batch = graph.get_tensor_by_name("Placeholder:0").shape.as_list()[0]  # a replica's
        x, y = X[32:32 + batch], Y[32:32 + batch]
        feed = {"Placeholder:0": x, "Placeholder_1:0": y}
        with v1.Session() as session:
            saver.restore(session, str(tmp_path / "model.ckpt-4"))
            kernel = session.run(by_name["dense/kernel"])
            loss = session.run(graph.get_tensor_by_name("mean_squared_error/value:0"), feed)
            session.run(v1.get_collection(v1.GraphKeys.TRAIN_OP), feed)
            trained = session.run({name: by_name[name] for name in [
                "dense/kernel", "dense/kernel/ExponentialMovingAverage", "global_step"]})
    assert names == ["counter", "dense/bias", "dense/bias/ExponentialMovingAverage",
                     "dense/kernel", "dense/kernel/ExponentialMovingAverage", "global_step"]
    np.testing.assert_allclose(kernel.ravel(), KERNEL, atol=1e-6)
    error = x @ kernel + BIAS - y
    assert loss == pytest.approx(float(np.mean(error ** 2)), rel=1e-5)
    stepped = kernel - 0.05 * 2.0 * x.T @ error / batch
    np.testing.assert_allclose(trained["dense/kernel"], stepped, rtol=1e-5)
    np.testing.assert_allclose(trained["dense/kernel/ExponentialMovingAverage"].ravel(),
                               0.5 * np.array(EMA_KERNEL) + 0.5 * stepped.ravel(), rtol=1e-5)
    assert trained["global_step"] == 5
    assert record["model_fn_calls"] == [tec.ModeKeys.TRAIN]


def test_a_meta_graph_made_from_the_step_keeps_its_functions_and_control_flow(tmp_path,
                                                                            one_device):
    """model_fn's tf.function, cond and while loop survive in the `.meta` graph made from
    the traced step: after a restore its loss, fetched by name, is the model's on the
    checkpoint's weights, and its summary and update-op collections are carried over."""
    calls = []

    def model_fn(features, labels, mode, params):
        calls.append(mode)
        scale = tf.function(lambda x: x * 0.5)
        predictions = legacy_layers.dense(features, 1, name="dense")
        doubled = v1.cond(v1.train.get_global_step() >= 0, lambda: predictions * 2.0,
                          lambda: predictions)
        # (its gradient adds inputs to the While op made before them: accumulators)
        _, summed = v1.while_loop(lambda i, _: i < 3,
                                  lambda i, x: (i + 1, x * 0.5 + doubled),
                                  [tf.constant(0), tf.zeros_like(doubled)])
        loss = v1.losses.mean_squared_error(labels, scale(summed), scope="the_loss")
        counted = v1.get_variable("seen", [], initializer=v1.zeros_initializer(),
                                  trainable=False)
        v1.add_to_collection(v1.GraphKeys.UPDATE_OPS, v1.assign_add(counted, 1.0).op)
        v1.summary.scalar("loss_summary", loss)
        with tf.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
            train_op = v1.train.GradientDescentOptimizer(0.01).minimize(
                loss, global_step=v1.train.get_global_step())
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    estimator = make_estimator(tmp_path, one_device, model_fn)
    estimator.train(train_input_fn, steps=2)
    assert calls == [tec.ModeKeys.TRAIN]
    kernel = estimator.get_variable_value("dense/kernel")
    bias = estimator.get_variable_value("dense/bias")
    with tf.Graph().as_default() as graph:
        saver = v1.train.import_meta_graph(str(tmp_path / "model.ckpt-2.meta"))
        assert [t.op.name for t in v1.get_collection(v1.GraphKeys.SUMMARIES)] == [
            "loss_summary"]
        assert len(v1.get_collection(v1.GraphKeys.UPDATE_OPS)) == 1
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())  # zeros: the checkpoint has values
            assert not session.run(v1.trainable_variables()[0]).any()
            saver.restore(session, str(tmp_path / "model.ckpt-2"))
            loss = session.run(graph.get_tensor_by_name("the_loss/value:0"),
                               {"Placeholder:0": X[:8], "Placeholder_1:0": Y[:8]})
    expected = np.mean((1.75 * (X[:8] @ kernel + bias) - Y[:8]) ** 2)  # 0.5 x 3.5 x 2
    assert loss == pytest.approx(float(expected), rel=1e-5)


def test_meta_graph_def_is_the_one_tf1_export_writes_with_devices_cleared():
    """The .meta GraphDef, built in one pass, is byte for byte TensorFlow's own
    `export_meta_graph(clear_devices=True)` (devices, shapes, functions, control inputs), up
    to the order of the function library."""
    from tpu_estimator_compat.engine import meta_graph  # noqa: PLC0415
    with tf.Graph().as_default() as graph:
        with tf.device("/cpu:0"):
            features = v1.placeholder(tf.float32, [8, 4])
            loss = v1.losses.mean_squared_error(
                tf.ones([8, 1]), legacy_layers.dense(features, 1, name="dense"))
            train_op = v1.train.GradientDescentOptimizer(0.1).minimize(
                tf.function(lambda x: x * 2.0)(loss),
                global_step=v1.train.get_or_create_global_step())
        graph.add_to_collection(v1.GraphKeys.TRAIN_OP, train_op)
        saver_def = v1.train.Saver(sharded=True).saver_def
        expected = v1.train.export_meta_graph(graph=graph, saver_def=saver_def,
                                              clear_devices=True)
        built = v1.train.export_meta_graph(
            graph_def=meta_graph._device_free_graph_def(graph),  # pylint: disable=protected-access
            graph=graph, saver_def=saver_def)
    assert expected.graph_def.library.function  # the tf.function is in both
    assert not any(node.device for node in built.graph_def.node)
    assert _library_sorted(built).SerializeToString(deterministic=True) == (
        _library_sorted(expected).SerializeToString(deterministic=True))


def _library_sorted(meta_graph_def):
    """`meta_graph_def` with its function library in name order: TensorFlow lists a graph's
    functions in an order that varies between environments (a set's; loading ignores it)."""
    copy = type(meta_graph_def)()
    copy.CopyFrom(meta_graph_def)
    library = copy.graph_def.library
    functions = sorted(library.function, key=lambda f: f.signature.name)
    gradients = sorted(library.gradient, key=lambda g: g.function_name)
    del library.function[:]
    del library.gradient[:]
    library.function.extend(functions)
    library.gradient.extend(gradients)
    return copy


def test_tf1_idioms_in_model_fn_behave_as_in_a_tf1_graph(tmp_path):
    """Found in real programs: `var in list` compares by identity (simclr); a TF2 summary
    writer made in model_fn and initialised under control_dependencies writes its events
    (simclr's TF1 model.py); evaluate() returns numpy scalars (uda calls `.item()`)."""
    summary_dir = tmp_path / "summaries"

    def model_fn(features, labels, mode, params):
        predictions = legacy_layers.dense(features, 1, name="dense")
        loss = v1.losses.mean_squared_error(labels, predictions)
        kernel, bias = v1.trainable_variables()
        assert kernel in [bias, kernel] and bias not in [kernel]
        writer = tf.summary.create_file_writer(str(summary_dir))
        with tf.control_dependencies([writer.init()]), writer.as_default():
            tf.summary.scalar("my_loss", loss, step=v1.train.get_global_step())
            flush = v1.summary.all_v2_summary_ops()
        train_op = v1.train.GradientDescentOptimizer(0.05).minimize(
            loss, global_step=v1.train.get_global_step())
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=tf.group(train_op, *flush))

    estimator = tec.TPUEstimator(model_fn, use_tpu=False, train_batch_size=8,
                                 eval_batch_size=8,
                                 config=tec.RunConfig(model_dir=str(tmp_path / "model")))
    estimator.train(train_input_fn, steps=3)
    results = estimator.evaluate(eval_input_fn, steps=1)
    assert isinstance(results["loss"], np.float32) and results["loss"].item() > 0
    assert isinstance(results["global_step"], np.int64) and results["global_step"].item() == 3
    del estimator  # the writer lives as long as the compiled step, and flushes when released
    gc.collect()
    assert [step for step, _ in read_scalars(str(summary_dir))["my_loss"]] == [0, 1, 2]


def test_evaluate_an_input_whose_batch_is_not_the_first_dimension(tmp_path, eight_devices):
    """resnet_main's --transpose_input: static batches laid out [features, batch]."""
    def model_fn(features, labels, mode, params):
        predictions = legacy_layers.dense(tf.transpose(features), 1, name="dense")
        loss = v1.losses.mean_squared_error(labels, predictions)
        train_op = tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(0.05)).minimize(
            loss, global_step=v1.train.get_global_step())

        def metric_fn(labels, predictions):
            return {"mse": v1.metrics.mean_squared_error(labels, predictions)}
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op,
                                    eval_metrics=(metric_fn, [labels, predictions]))

    def transposed(input_fn):
        return lambda params: input_fn(params).map(lambda x, y: (tf.transpose(x), y))

    estimator = tec.TPUEstimator(  # PER_HOST_V2, as resnet_main: per-replica batches
        model_fn, train_batch_size=8, eval_batch_size=8,
        config=tec.RunConfig(model_dir=str(tmp_path), train_distribute=eight_devices,
                             tpu_config=tec.TPUConfig(
                                 per_host_input_for_training=(
                                     tec.InputPipelineConfig.PER_HOST_V2))))
    estimator.train(transposed(train_input_fn), steps=2)
    results = estimator.evaluate(transposed(eval_input_fn))
    kernel = estimator.get_variable_value("dense/kernel")
    bias = estimator.get_variable_value("dense/bias")
    expected = float(np.mean((X[:32] @ kernel + bias - Y[:32]) ** 2))
    assert results["mse"] == pytest.approx(expected, rel=1e-5)


def test_meta_graph_of_a_model_whose_input_has_no_labels(tmp_path, one_device):
    def model_fn(features, labels, mode, params):
        assert labels is None
        predictions = legacy_layers.dense(features["x"], 1, name="dense")
        loss = v1.losses.mean_squared_error(features["y"], predictions)
        train_op = tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(0.05)).minimize(
            loss, global_step=v1.train.get_global_step())
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    def features_only(params):
        return train_input_fn(params).map(lambda x, y: {"x": x, "y": y})

    make_estimator(tmp_path, one_device, model_fn).train(features_only, steps=1)
    with tf.Graph().as_default():
        v1.train.import_meta_graph(str(tmp_path / "model.ckpt-1.meta"))
        assert sorted(v.op.name for v in v1.trainable_variables()) == [
            "dense/bias", "dense/kernel"]


class _Timeline(v1.train.SessionRunHook):
    """Records model_fn's calls, the steps' after_run and (`listener`) the saves' after_save
    with the checkpoint's files then on disk, in order."""

    def __init__(self, model_dir):
        self.events = []
        self._model_fn = make_model_fn({})
        self.listener = _FilesAtSave(model_dir, self.events)

    def model_fn(self, features, labels, mode, params):
        traced = v1.get_default_graph().building_function
        self.events.append("model_fn traced" if traced else "model_fn in a TF1 graph")
        return self._model_fn(features, labels, mode, params)

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(v1.train.get_global_step())

    def after_run(self, run_context, run_values):
        self.events.append(("after_run", int(run_values.results)))


class _FilesAtSave(v1.train.CheckpointSaverListener):
    def __init__(self, model_dir, events):
        self.model_dir = model_dir
        self.events = events

    def after_save(self, session, global_step_value):
        prefix = f"model.ckpt-{global_step_value}."
        self.events.append(("after_save", global_step_value, sorted(
            name for name in os.listdir(self.model_dir) if name.startswith(prefix))))


def _checkpoint_files(step):
    return [f"model.ckpt-{step}.data-00000-of-00001", f"model.ckpt-{step}.index",
            f"model.ckpt-{step}.meta"]


@pytest.mark.parametrize("listener", [False, True], ids=["no_listener", "listener"])
def test_the_initial_checkpoints_meta_graph(tmp_path, one_device, listener):
    """The step-0 checkpoint has its `.meta` graph, which imports and restores. With a
    CheckpointSaverListener it is on disk at the listener's after_save, before the first
    step, as TF1's CheckpointSaverHook wrote it. It is made from the traced step, without
    calling model_fn again."""
    timeline = _Timeline(str(tmp_path))
    estimator = make_estimator(tmp_path, one_device, timeline.model_fn)
    estimator.train(train_input_fn, steps=4, hooks=[timeline],
                    saving_listeners=[timeline.listener] if listener else None)
    if listener:
        assert timeline.events == [
            "model_fn traced", ("after_save", 0, _checkpoint_files(0)), ("after_run", 2),
            ("after_run", 4), ("after_save", 4, _checkpoint_files(4))]
    else:
        assert timeline.events == ["model_fn traced", ("after_run", 2), ("after_run", 4)]
    files = sorted(name for name in os.listdir(tmp_path) if name.startswith("model.ckpt"))
    assert files == _checkpoint_files(0) + _checkpoint_files(4)
    with tf.Graph().as_default():
        saver = v1.train.import_meta_graph(str(tmp_path / "model.ckpt-0.meta"))
        assert v1.get_collection(v1.GraphKeys.TRAIN_OP)
        with v1.Session() as session:
            saver.restore(session, str(tmp_path / "model.ckpt-0"))
            kernel = session.run([v for v in v1.global_variables()
                                  if v.op.name == "dense/kernel"][0])
    np.testing.assert_allclose(kernel.ravel(), [0.1] * 4)
    assert (tmp_path / "model.ckpt-0.meta").read_bytes() == (
        tmp_path / "model.ckpt-4.meta").read_bytes()
