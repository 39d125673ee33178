"""`tf.contrib.opt`'s decoupled weight decay (ConnorJL/GPT2's `AdamWOptimizer`): each step
decays `var <- var - weight_decay * var` (not scaled by the learning rate), then applies the
base optimizer's update; sparse gradients decay only their rows; `decay_var_list` limits the
decay. Expected values are TF 1.x's documented formulas worked by hand (TF 2.15, the
original's environment, no longer has contrib)."""
import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
import tpu_estimator_compat.v1 as v1

_GRAD_W = np.array([0.5, -1.0], np.float32)


def _train(make_optimizer, steps, decay_some=True):
    """Runs `steps` TF1 graph steps; returns the values of w, b and emb after each."""
    with tf.Graph().as_default():
        w = v1.get_variable("w", initializer=[1.0, -2.0])
        b = v1.get_variable("b", initializer=[0.5])
        emb = v1.get_variable("emb", initializer=[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        loss = (tf.reduce_sum(w * _GRAD_W) + 3.0 * tf.reduce_sum(b)
                + tf.reduce_sum(tf.gather(emb, [2, 0, 2])))  # row 2 twice, row 1 never
        optimizer = make_optimizer()
        train_op = optimizer.minimize(loss, decay_var_list=[w, emb] if decay_some else None)
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            history = []
            for _ in range(steps):
                session.run(train_op)
                history.append(session.run({"w": w, "b": b, "emb": emb}))
    return history


def _adam_reference(var, grad, steps, lr, wd, decay, beta1=0.9, beta2=0.999, eps=1e-8):
    """TF 1.x AdamW by its formula: var <- var - wd * var, then Adam's step."""
    var, m, v = np.array(var, np.float64), 0.0, 0.0
    out = []
    for t in range(1, steps + 1):
        if decay:
            var = var - wd * var
        m = beta1 * m + (1 - beta1) * grad
        v = beta2 * v + (1 - beta2) * grad * grad
        lr_t = lr * np.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
        var = var - lr_t * m / (np.sqrt(v) + eps)
        out.append(var)
    return out


def test_adamw_decays_before_adam_dense_sparse_and_by_decay_var_list():
    history = _train(lambda: v1.contrib.opt.AdamWOptimizer(weight_decay=0.01, learning_rate=0.1),
                     steps=3)
    # Step 1 by hand: Adam's first step is lr * sign(grad); decay multiplies by 1 - 0.01.
    np.testing.assert_allclose(history[0]["w"], [0.99 - 0.1, -1.98 + 0.1], atol=1e-6)
    np.testing.assert_allclose(history[0]["b"], [0.5 - 0.1], atol=1e-6)  # not in the list
    np.testing.assert_allclose(history[0]["emb"], [[0.89, 1.88], [3.0, 4.0], [4.85, 5.84]],
                               atol=1e-6)  # row 1 has no gradient: neither decayed nor moved
    w_ref = _adam_reference([1.0, -2.0], _GRAD_W, 3, 0.1, 0.01, decay=True)
    b_ref = _adam_reference([0.5], 3.0, 3, 0.1, 0.01, decay=False)
    row2_ref = _adam_reference([5.0, 6.0], 2.0, 3, 0.1, 0.01, decay=True)
    for step in range(3):
        np.testing.assert_allclose(history[step]["w"], w_ref[step], rtol=1e-5)
        np.testing.assert_allclose(history[step]["b"], b_ref[step], rtol=1e-5)
        np.testing.assert_allclose(history[step]["emb"][2], row2_ref[step], rtol=1e-5)
        np.testing.assert_array_equal(history[step]["emb"][1], [3.0, 4.0])


def test_momentumw_and_extended_optimizer_decay_every_variable_by_default():
    history = _train(lambda: v1.contrib.opt.MomentumWOptimizer(
        weight_decay=0.1, learning_rate=0.1, momentum=0.9), steps=2, decay_some=False)
    # accum = grad, then 1.9 * grad; var <- 0.9 * var - 0.1 * accum
    np.testing.assert_allclose(history[0]["w"], [0.85, -1.7], atol=1e-6)
    np.testing.assert_allclose(history[1]["w"], [0.67, -1.34], atol=1e-6)
    np.testing.assert_allclose(history[1]["b"], [(0.5 * 0.9 - 0.3) * 0.9 - 0.57], atol=1e-6)
    sgdw = v1.contrib.opt.extend_with_decoupled_weight_decay(v1.train.GradientDescentOptimizer)
    assert issubclass(sgdw, v1.contrib.opt.DecoupledWeightDecayExtension)
    history = _train(lambda: sgdw(lambda: 0.5, 0.1), steps=1, decay_some=False)
    np.testing.assert_allclose(history[0]["w"], [0.5 - 0.05, -1.0 + 0.1], atol=1e-6)
    np.testing.assert_allclose(history[0]["emb"], [[0.4, 0.9], [3.0, 4.0], [2.3, 2.8]],
                               atol=1e-6)


def test_extend_rejects_what_is_not_a_v1_optimizer_class():
    with pytest.raises(TypeError, match=r"^extend_with_decoupled_weight_decay needs a "
                       r"tf\.compat\.v1\.train\.Optimizer subclass \(e\.g\. "
                       r"tf\.train\.AdamOptimizer\), got <class 'keras.*Adam'>"):
        v1.contrib.opt.extend_with_decoupled_weight_decay(tf.keras.optimizers.Adam)


def _model_fn(features, labels, mode, params):
    w = v1.get_variable("w", initializer=[1.0, -2.0])
    b = v1.get_variable("b", initializer=[0.5])
    # Each of the 8 replicas contributes 1/8 of the gradient: the optimizer sums them.
    loss = (tf.reduce_sum(w * _GRAD_W) + 3.0 * tf.reduce_sum(b)) / 8 + 0 * tf.reduce_sum(features)
    sgdw = v1.contrib.opt.extend_with_decoupled_weight_decay(v1.train.GradientDescentOptimizer)
    train_op = sgdw(0.1, learning_rate=0.1).minimize(
        loss, global_step=v1.train.get_global_step(), decay_var_list=[w])
    return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def test_decay_var_list_on_eight_replicas_of_the_estimator(tmp_path, eight_devices):
    config = tec.RunConfig(model_dir=str(tmp_path), train_distribute=eight_devices,
                           tpu_config=tec.TPUConfig(iterations_per_loop=2))
    estimator = tec.TPUEstimator(_model_fn, config=config, use_tpu=True, train_batch_size=16)
    estimator.train(lambda params: tf.data.Dataset.from_tensors(
        np.ones([params["batch_size"], 2], np.float32)).repeat(), max_steps=2)
    # w: 0.9 * w - 0.1 * grad, twice; b (not listed): b - 0.1 * 3, twice.
    np.testing.assert_allclose(estimator.get_variable_value("w"), [0.715, -1.43], atol=1e-6)
    np.testing.assert_allclose(estimator.get_variable_value("b"), [-0.1], atol=1e-6)
