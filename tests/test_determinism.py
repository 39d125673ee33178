"""RunConfig(tf_random_seed=...) makes training repeatable on the simulated 8-core TPU, as it
is on one device: same initial values (tf_keras legacy layers' initializers), same dropout."""
import numpy as np
import pytest

import tpu_estimator_compat as tec
import tpu_estimator_compat.v1 as v1

pytestmark = pytest.mark.slow  # estimator runs (and processes): seconds each


def model_fn(features, labels, mode, params):
    hidden = v1.layers.dense(features, 16, activation=v1.nn.relu, name="hidden")
    hidden = v1.layers.dropout(hidden, 0.5, training=True)
    predictions = v1.layers.dense(hidden, 1, name="out")
    loss = v1.losses.mean_squared_error(labels, predictions)
    optimizer = tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(0.1))
    return tec.TPUEstimatorSpec(mode, loss=loss, train_op=optimizer.minimize(
        loss, v1.train.get_global_step()))


def input_fn(params):
    x = np.linspace(-1, 1, 256 * 4, dtype=np.float32).reshape(256, 4)
    return v1.data.Dataset.from_tensor_slices((x, x.sum(1, keepdims=True))).repeat().batch(
        params["batch_size"], drop_remainder=True)


def trained_weights(model_dir, strategy, seed):
    config = tec.RunConfig(model_dir=str(model_dir), tf_random_seed=seed,
                           train_distribute=strategy,
                           tpu_config=tec.TPUConfig(iterations_per_loop=3))
    estimator = tec.TPUEstimator(model_fn, config=config, train_batch_size=64)
    estimator.train(input_fn, max_steps=6)
    return {name: estimator.get_variable_value(name)
            for name in ("hidden/kernel", "hidden/bias", "out/kernel")}


def test_same_seed_same_weights_on_eight_replicas(tmp_path, eight_devices):
    first = trained_weights(tmp_path / "a", eight_devices, seed=7)
    second = trained_weights(tmp_path / "b", eight_devices, seed=7)
    other = trained_weights(tmp_path / "c", eight_devices, seed=8)
    for name, value in first.items():
        np.testing.assert_array_equal(value, second[name], err_msg=name)
    assert not np.array_equal(first["hidden/kernel"], other["hidden/kernel"])
