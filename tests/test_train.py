"""TPUEstimator.train: replica equivalence, stop points, input modes, v1 model code."""
import importlib
import logging

import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
from helpers import checkpoint_steps
from tpu_estimator_compat.state import checkpoints

v1 = tf.compat.v1
legacy_layers = importlib.import_module("tf_keras.api._v1.keras.__internal__.legacy.layers")

FEATURES = np.random.RandomState(0).randn(256, 4).astype(np.float32)
TARGETS = (FEATURES @ np.array([[1.0], [-2.0], [3.0], [0.5]]) + 0.1).astype(np.float32)


def regression_input_fn(params):
    dataset = tf.data.Dataset.from_tensor_slices((FEATURES, TARGETS))
    return dataset.repeat().batch(params["batch_size"], drop_remainder=True)


OPTIMIZERS = {
    "sgd": lambda: v1.train.GradientDescentOptimizer(0.05),
    "momentum": lambda: v1.train.MomentumOptimizer(0.05, momentum=0.9),
    "adam": lambda: v1.train.AdamOptimizer(0.05),
}


def make_regression_model_fn(optimizer, reduction=v1.losses.Reduction.MEAN, cross_shard=True):
    def model_fn(features, labels, mode, params):
        with v1.variable_scope("linear"):
            hidden = legacy_layers.dense(
                features, 3, kernel_initializer=v1.constant_initializer(0.3), name="hidden")
            weights = v1.get_variable("w", [3, 1], initializer=v1.constant_initializer(0.5))
        predictions = tf.matmul(tf.nn.tanh(hidden), weights)
        loss = v1.losses.mean_squared_error(labels, predictions)
        opt = OPTIMIZERS[optimizer]()
        if cross_shard:
            opt = tec.CrossShardOptimizer(opt, reduction=reduction)
        train_op = opt.minimize(loss, global_step=v1.train.get_global_step())
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)
    return model_fn


def run_config(model_dir, strategy, iterations_per_loop=2, input_mode=None, **kwargs):
    tpu_config = tec.TPUConfig(
        iterations_per_loop=iterations_per_loop,
        per_host_input_for_training=(input_mode or tec.InputPipelineConfig.PER_HOST_V2))
    return tec.RunConfig(model_dir=str(model_dir), train_distribute=strategy,
                         tpu_config=tpu_config, **kwargs)


def train_weights(model_fn, strategy, model_dir, batch_size, steps=6, **config_kwargs):
    estimator = tec.TPUEstimator(model_fn, config=run_config(model_dir, strategy, **config_kwargs),
                                 train_batch_size=batch_size)
    estimator.train(regression_input_fn, steps=steps)
    return {name: estimator.get_variable_value(name)
            for name in estimator.get_variable_names()}


@pytest.mark.slow  # trains or evaluates for several seconds
@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_eight_replicas_train_like_one_replica_on_the_global_batch(
        optimizer, tmp_path, one_device, eight_devices):
    model_fn = make_regression_model_fn(optimizer)
    one = train_weights(model_fn, one_device, tmp_path / "one", batch_size=32)
    eight = train_weights(model_fn, eight_devices, tmp_path / "eight", batch_size=32)
    assert one["global_step"] == eight["global_step"] == 6
    assert sorted(one) == sorted(eight)
    for name in one:
        np.testing.assert_allclose(eight[name], one[name], atol=1e-5, err_msg=name)
    assert not np.allclose(one["linear/w"], 0.5), "training did not move the weights"


@pytest.mark.slow  # trains or evaluates for several seconds
def test_sum_reduction_applies_eight_times_the_mean_gradient(tmp_path, one_device, eight_devices):
    initial = 0.5 * np.ones([3, 1], np.float32)
    one = train_weights(make_regression_model_fn("sgd"), one_device, tmp_path / "mean",
                        batch_size=32, steps=1)
    eight = train_weights(make_regression_model_fn("sgd", reduction=v1.losses.Reduction.SUM),
                          eight_devices, tmp_path / "sum", batch_size=32, steps=1)
    np.testing.assert_allclose(eight["linear/w"] - initial, 8 * (one["linear/w"] - initial),
                               rtol=1e-4, atol=1e-6)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_bare_optimizer_applies_each_replicas_own_gradients_as_a_tpu_core(
        tmp_path, one_device, eight_devices):
    """Without CrossShardOptimizer each TPU core applied its own gradients and TF1 kept
    replica 0's values: 8 replicas on a global batch of 32 train as one replica on replica
    0's 4 examples."""
    replica_0 = train_weights(make_regression_model_fn("sgd"), one_device, tmp_path / "one",
                              batch_size=4, steps=1)
    bare = train_weights(make_regression_model_fn("sgd", cross_shard=False), eight_devices,
                         tmp_path / "bare", batch_size=32, steps=1)
    for name in ("linear/w", "linear/hidden/kernel", "linear/hidden/bias"):
        np.testing.assert_allclose(bare[name], replica_0[name], rtol=1e-6, err_msg=name)


def train_and_evaluate(model_dir, strategy, iterations_per_loop, use_tpu=True, eval_hooks=()):
    """(weights after 6 steps, evaluate(steps=4)'s results) of the Adam regression model."""
    estimator = tec.TPUEstimator(
        make_regression_model_fn("adam"), train_batch_size=32, eval_batch_size=32,
        use_tpu=use_tpu, config=run_config(model_dir, strategy, eval_distribute=strategy,
                                           iterations_per_loop=iterations_per_loop))
    estimator.train(regression_input_fn, steps=6)
    weights = {name: estimator.get_variable_value(name)
               for name in estimator.get_variable_names()}
    return weights, estimator.evaluate(regression_input_fn, steps=4, hooks=list(eval_hooks))


def assert_same_numbers(actual, expected):
    assert sorted(actual) == sorted(expected)
    for name in expected:
        np.testing.assert_allclose(actual[name], expected[name], rtol=1e-6, atol=1e-7,
                                   err_msg=name)


@pytest.mark.slow  # trains or evaluates for several seconds
@pytest.mark.parametrize("strategy_fixture", ["one_device", "eight_devices"])
@pytest.mark.parametrize("iterations_per_loop", [3, 4])
def test_iterations_per_loop_trains_and_evaluates_like_one_step_per_loop(
        iterations_per_loop, strategy_fixture, tmp_path, request):
    """Steps per device loop change how often the host runs, not the numbers: 6 steps in
    loops of N (3: 3+3, 4: 4+2) give the weights (Adam) of 6 loops of one step, and the
    evaluation of those weights the same results, on one replica and on eight."""
    strategy = request.getfixturevalue(strategy_fixture)
    one_weights, one_eval = train_and_evaluate(tmp_path / "1", strategy, 1)
    n_weights, n_eval = train_and_evaluate(tmp_path / "n", strategy, iterations_per_loop)
    assert n_weights["global_step"] == one_weights["global_step"] == 6
    assert_same_numbers(n_weights, one_weights)
    assert_same_numbers(n_eval, one_eval)


class CountingHook(v1.train.SessionRunHook):
    def __init__(self):
        self.before_runs = 0

    def before_run(self, run_context):
        self.before_runs += 1


@pytest.mark.slow  # trains or evaluates for several seconds
@pytest.mark.parametrize("strategy_fixture", ["one_device", "eight_devices"])
def test_evaluation_in_loops_of_one_step_gives_the_results_of_one_loop(
        strategy_fixture, tmp_path, request):
    """With CPU/GPU semantics a hook makes evaluation run loops of one step (the hook sees
    each step, as Estimator's one Session.run per step); without one its 4 steps run in
    one loop. The results are the same, on one replica and on eight."""
    strategy = request.getfixturevalue(strategy_fixture)
    hook = CountingHook()
    _, per_step = train_and_evaluate(tmp_path / "per_step", strategy, 4, use_tpu=False,
                                     eval_hooks=[hook])
    _, one_loop = train_and_evaluate(tmp_path / "one_loop", strategy, 4, use_tpu=False)
    assert hook.before_runs == 4
    assert per_step["global_step"] == one_loop["global_step"] == 6
    assert_same_numbers(per_step, one_loop)


def loop_boundaries_estimator(model_dir, strategy, iterations_per_loop):
    config = run_config(model_dir, strategy, iterations_per_loop=iterations_per_loop,
                        save_checkpoints_steps=1, keep_checkpoint_max=0)
    return tec.TPUEstimator(make_regression_model_fn("sgd"), config=config, train_batch_size=8)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_steps_stop_at_loop_boundaries_like_the_original(tmp_path, one_device):
    loop_boundaries_estimator(tmp_path, one_device, 4).train(regression_input_fn, steps=10)
    assert checkpoint_steps(tmp_path) == [0, 4, 8, 10]


@pytest.mark.slow  # trains or evaluates for several seconds
def test_without_tpu_checkpoints_come_at_the_originals_steps(tmp_path, one_device):
    """use_tpu=False: the original ran one step per Session.run, so its saves came every
    save_checkpoints_steps exactly, whatever iterations_per_loop; the first step runs alone
    (its loss line and summary), and later loops end where a save is due."""
    config = run_config(tmp_path, one_device, iterations_per_loop=3, save_checkpoints_steps=4,
                        keep_checkpoint_max=0)
    tec.TPUEstimator(make_regression_model_fn("sgd"), config=config, use_tpu=False,
                     train_batch_size=8).train(regression_input_fn, steps=10)
    assert checkpoint_steps(tmp_path) == [0, 4, 8, 10]


@pytest.mark.slow  # trains or evaluates for several seconds
def test_resumed_steps_and_max_steps_stop_points(tmp_path, one_device):
    loop_boundaries_estimator(tmp_path / "a", one_device, 3).train(regression_input_fn, steps=3)
    loop_boundaries_estimator(tmp_path / "a", one_device, 4).train(regression_input_fn, steps=10)
    assert checkpoint_steps(tmp_path / "a") == [0, 3, 7, 11, 13]
    loop_boundaries_estimator(tmp_path / "b", one_device, 3).train(regression_input_fn, steps=3)
    loop_boundaries_estimator(tmp_path / "b", one_device, 4).train(regression_input_fn,
                                                                   max_steps=10)
    assert checkpoint_steps(tmp_path / "b") == [0, 3, 7, 10]


def test_max_steps_already_reached_skips_training(tmp_path, one_device, caplog):
    caplog.set_level(logging.INFO, logger="tensorflow")
    estimator = loop_boundaries_estimator(tmp_path, one_device, 4)
    estimator.train(regression_input_fn, max_steps=4)
    estimator.train(regression_input_fn, max_steps=4)
    assert "Skipping training since max_steps has already saved." in caplog.text
    assert checkpoint_steps(tmp_path) == [0, 4]


class _Recorder:
    def __init__(self):
        self.input_batch_sizes, self.model_batch_sizes, self.shapes = [], [], []

    def input_fn(self, params):
        self.input_batch_sizes.append(params["batch_size"])
        return regression_input_fn(params)

    def model_fn(self, features, labels, mode, params):
        self.model_batch_sizes.append(params["batch_size"])
        self.shapes.append(features.shape.as_list())
        return make_regression_model_fn("sgd")(features, labels, mode, params)


@pytest.mark.slow  # trains or evaluates for several seconds
@pytest.mark.parametrize("input_mode, input_batch, calls, model_batch", [
    (tec.InputPipelineConfig.PER_HOST_V1, 64, 1, 8),
    (tec.InputPipelineConfig.PER_HOST_V2, 8, 1, 8),
    (tec.InputPipelineConfig.PER_SHARD_V1, 8, 8, 8),
    (tec.InputPipelineConfig.BROADCAST, 64, 1, 64),
])
def test_batch_sizes_and_input_fn_calls_per_input_mode(
        input_mode, input_batch, calls, model_batch, tmp_path, eight_devices):
    recorder = _Recorder()
    config = run_config(tmp_path, eight_devices, input_mode=input_mode)
    estimator = tec.TPUEstimator(recorder.model_fn, config=config, train_batch_size=64)
    estimator.train(recorder.input_fn, steps=2)
    assert recorder.input_batch_sizes == [input_batch] * calls
    assert set(recorder.model_batch_sizes) == {model_batch}
    assert {tuple(shape) for shape in recorder.shapes} == {(model_batch, 4)}


def test_cpu_path_gives_the_global_batch_and_ends_with_a_finite_input(tmp_path):
    recorder = _Recorder()

    def finite_input_fn(params):
        recorder.input_batch_sizes.append(params["batch_size"])
        return tf.data.Dataset.from_tensor_slices((FEATURES, TARGETS)).batch(params["batch_size"])

    estimator = tec.TPUEstimator(recorder.model_fn, config=tec.RunConfig(model_dir=str(tmp_path)),
                                 use_tpu=False, train_batch_size=64)
    estimator.train(finite_input_fn, steps=100)
    assert recorder.input_batch_sizes == [64]
    assert set(recorder.model_batch_sizes) == {64}
    assert estimator.get_variable_value("global_step") == 4  # 256 examples / 64


@pytest.mark.slow  # trains or evaluates for several seconds
def test_batch_norm_moving_statistics_update_through_update_ops(tmp_path, eight_devices):
    def model_fn(features, labels, mode, params):
        hidden = legacy_layers.batch_normalization(
            legacy_layers.dense(
                features, 3, name="dense",
                kernel_initializer=v1.glorot_uniform_initializer(seed=3)), training=True)
        predictions = legacy_layers.dense(hidden, 1, name="out")
        loss = v1.losses.mean_squared_error(labels, predictions)
        optimizer = tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(0.01))
        with tf.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
            train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    estimator = tec.TPUEstimator(model_fn, config=run_config(tmp_path, eight_devices),
                                 train_batch_size=64)
    estimator.train(regression_input_fn, steps=4)
    moving_mean = estimator.get_variable_value("batch_normalization/moving_mean")
    moving_variance = estimator.get_variable_value("batch_normalization/moving_variance")
    assert np.all(np.abs(moving_mean) > 1e-4)
    assert not np.allclose(moving_variance, 1.0)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_variables_keep_their_tf1_names(tmp_path, one_device):
    weights = train_weights(make_regression_model_fn("adam"), one_device, tmp_path, 8, steps=2)
    assert sorted(weights) == [
        "beta1_power", "beta2_power", "global_step",
        "linear/hidden/bias", "linear/hidden/bias/Adam", "linear/hidden/bias/Adam_1",
        "linear/hidden/kernel", "linear/hidden/kernel/Adam", "linear/hidden/kernel/Adam_1",
        "linear/w", "linear/w/Adam", "linear/w/Adam_1"]
