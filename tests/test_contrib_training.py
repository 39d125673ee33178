"""`tf.contrib.training`'s train-op builders (tf-slim's) in a TPUEstimator model_fn:
`create_train_op` trains as `minimize()` under the update ops did, on one replica and on 8
(CrossShardOptimizer), and its `transform_grads_fn` clips as TF1's did."""
import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
import tpu_estimator_compat.v1 as v1
from helpers import HIDDEN_KERNEL_INIT, input_fn, make_estimator

pytestmark = pytest.mark.slow  # estimator runs: seconds each

MAX_NORM = 0.05


def make_model_fn(build_train_op):
    def model_fn(features, labels, mode, params):
        hidden = v1.layers.batch_normalization(v1.layers.dense(
            features, 3, kernel_initializer=v1.constant_initializer(HIDDEN_KERNEL_INIT)),
            training=True)
        prediction = v1.layers.dense(hidden, 1, kernel_initializer=v1.ones_initializer())
        loss = v1.losses.mean_squared_error(labels, prediction)
        optimizer = tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(0.1))
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=build_train_op(loss, optimizer))
    return model_fn


def with_create_train_op(loss, optimizer):
    return v1.contrib.training.create_train_op(
        loss, optimizer, transform_grads_fn=v1.contrib.training.clip_gradient_norms_fn(MAX_NORM))


def with_minimize_and_clipping(loss, optimizer):
    grads_and_vars = optimizer.compute_gradients(loss)
    clipped = [(v1.clip_by_norm(g, MAX_NORM), v) for g, v in grads_and_vars]
    with tf.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
        return optimizer.apply_gradients(clipped, global_step=v1.train.get_global_step())


@pytest.mark.parametrize("devices", ["one_device", "eight_devices"])
def test_create_train_op_trains_as_minimize_under_the_update_ops(tmp_path, devices, request):
    strategy = request.getfixturevalue(devices)
    values = []
    for name, build in [("slim", with_create_train_op), ("tf1", with_minimize_and_clipping)]:
        estimator = make_estimator(tmp_path / name, strategy, make_model_fn(build))
        estimator.train(input_fn, steps=4)
        values.append({n: estimator.get_variable_value(n) for n in (
            "dense/kernel", "dense_1/kernel", "batch_normalization/moving_mean",
            "global_step")})
    built, reference = values
    assert built["global_step"] == reference["global_step"] == 4
    for name in built:
        np.testing.assert_allclose(built[name], reference[name], rtol=1e-6, atol=1e-7)
    assert not np.allclose(built["dense_1/kernel"], 1.0)  # it trained
