"""`tf.contrib.opt`'s decoupled weight decay (ConnorJL/GPT2's `AdamWOptimizer`): each step
decays `var <- var - weight_decay * var` (not scaled by the learning rate), then applies the
base optimizer's update; sparse gradients decay only their rows; `decay_var_list` limits the
decay. Expected values are TF 1.x's documented formulas worked by hand (TF 2.15, the
original's environment, no longer has contrib). LARS, LazyAdam and MovingAverageOptimizer
likewise, from TF 1.15's source formulas."""
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
        train_op = optimizer.minimize(loss, **({"decay_var_list": [w, emb]} if decay_some else {}))
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
    # No CrossShardOptimizer: each of the 8 replicas applies its own gradient, as a TPU core
    # did (each replica's is the whole of it here).
    loss = tf.reduce_sum(w * _GRAD_W) + 3.0 * tf.reduce_sum(b) + 0 * tf.reduce_sum(features)
    sgdw = v1.contrib.opt.extend_with_decoupled_weight_decay(v1.train.GradientDescentOptimizer)
    train_op = sgdw(0.1, learning_rate=0.1).minimize(
        loss, global_step=v1.train.get_global_step(), decay_var_list=[w])
    return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_decay_var_list_on_eight_replicas_of_the_estimator(tmp_path, eight_devices):
    config = tec.RunConfig(model_dir=str(tmp_path), train_distribute=eight_devices,
                           tpu_config=tec.TPUConfig(iterations_per_loop=2))
    estimator = tec.TPUEstimator(_model_fn, config=config, use_tpu=True, train_batch_size=16)
    estimator.train(lambda params: tf.data.Dataset.from_tensors(
        np.ones([params["batch_size"], 2], np.float32)).repeat(), max_steps=2)
    # w: 0.9 * w - 0.1 * grad, twice; b (not listed): b - 0.1 * 3, twice.
    np.testing.assert_allclose(estimator.get_variable_value("w"), [0.715, -1.43], atol=1e-6)
    np.testing.assert_allclose(estimator.get_variable_value("b"), [-0.1], atol=1e-6)


# LARS, LazyAdam, MovingAverageOptimizer: contrib-only (not in TF 2.15 either); expected
# values from TF 1.15's source formulas, computed here in numpy.

def _lars_reference(var, grad, steps, lr, momentum, wd, eeta, eps=0.0, skip=False):
    var, accum, out = np.array(var, np.float64), 0.0, []
    for _ in range(steps):
        if skip:
            step = grad * lr
        else:
            w_norm, g_norm = np.linalg.norm(var), np.linalg.norm(grad)
            trust = eeta * w_norm / (g_norm + wd * w_norm + eps) if w_norm > 0 and g_norm > 0 \
                else 1.0
            step = (grad + wd * var) * lr * trust
        accum = momentum * accum + step
        var = var - accum
        out.append(var)
    return out


def test_lars_scales_each_variable_by_its_trust_ratio_and_skips_the_skip_list():
    history = _train(lambda: v1.contrib.opt.LARSOptimizer(
        0.5, momentum=0.9, weight_decay=0.01, eeta=0.1, skip_list=["b:"]), steps=3,
        decay_some=False)
    # Step 1 of w by hand: |w| = sqrt(5), |g| = sqrt(1.25); trust = 0.1 * 2.2361 / (1.1180 +
    # 0.022361) = 0.19608; w - 0.5 * trust * (g + 0.01 w).
    np.testing.assert_allclose(history[0]["w"], [1.0 - 0.098039 * 0.51, -2.0 + 0.098039 * 1.02],
                               atol=1e-5)
    w_ref = _lars_reference([1.0, -2.0], _GRAD_W, 3, 0.5, 0.9, 0.01, 0.1)
    b_ref = _lars_reference([0.5], 3.0, 3, 0.5, 0.9, 0.01, 0.1, skip=True)  # plain momentum
    for step in range(3):
        np.testing.assert_allclose(history[step]["w"], w_ref[step], rtol=1e-5)
        np.testing.assert_allclose(history[step]["b"], b_ref[step], rtol=1e-5)
    # The embedding's gradient is sparse: plain momentum on its rows (row 2 gets 2.0).
    np.testing.assert_allclose(history[0]["emb"], [[0.5, 1.5], [3.0, 4.0], [4.0, 5.0]], atol=1e-6)
    with pytest.raises(ValueError, match="momentum should be positive: -1"):
        v1.contrib.opt.LARSOptimizer(0.1, momentum=-1)


def test_lazy_adam_updates_only_the_rows_of_a_sparse_gradient():
    history = _train(lambda: v1.contrib.opt.LazyAdamOptimizer(0.1), steps=3, decay_some=False)
    row2_ref = _adam_reference([5.0, 6.0], 2.0, 3, 0.1, 0.0, decay=False)
    row0_ref = _adam_reference([1.0, 2.0], 1.0, 3, 0.1, 0.0, decay=False)
    w_ref = _adam_reference([1.0, -2.0], _GRAD_W, 3, 0.1, 0.0, decay=False)
    for step in range(3):
        np.testing.assert_allclose(history[step]["emb"][2], row2_ref[step], rtol=1e-5)
        np.testing.assert_allclose(history[step]["emb"][0], row0_ref[step], rtol=1e-5)
        np.testing.assert_array_equal(history[step]["emb"][1], [3.0, 4.0])
        np.testing.assert_allclose(history[step]["w"], w_ref[step], rtol=1e-5)  # dense: Adam


def test_lazy_adam_leaves_the_moments_of_untouched_rows_alone():
    # Adam would decay row 0's m and v at step 2 (its gradient is 0 there) and move it again.
    with tf.Graph().as_default():
        emb = v1.get_variable("emb", initializer=[[1.0], [2.0]])
        index = v1.placeholder(tf.int32, [])
        optimizer = v1.contrib.opt.LazyAdamOptimizer(0.1)
        train_op = optimizer.minimize(tf.reduce_sum(tf.gather(emb, [index])))
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            session.run(train_op, {index: 0})
            session.run(train_op, {index: 1})
            values, m = session.run([emb, optimizer.get_slot(emb, "m")])
    lr_2 = 0.1 * np.sqrt(1 - 0.999 ** 2) / (1 - 0.9 ** 2)  # Adam's bias correction, step 2
    np.testing.assert_allclose(values[:, 0], [0.9, 2.0 - lr_2 * 0.1 / np.sqrt(0.001)], rtol=1e-5)
    np.testing.assert_allclose(m[:, 0], [0.1, 0.1], rtol=1e-6)


def test_moving_average_optimizer_averages_after_the_update_and_swaps_on_save(tmp_path):
    with tf.Graph().as_default():
        w = v1.get_variable("w", initializer=[1.0, -2.0])
        optimizer = v1.contrib.opt.MovingAverageOptimizer(
            v1.train.GradientDescentOptimizer(0.1), average_decay=0.5)
        with pytest.raises(RuntimeError, match="Must call apply_gradients or minimize"):
            optimizer.swapping_saver()
        train_op = optimizer.minimize(tf.reduce_sum(w * _GRAD_W))
        saver = optimizer.swapping_saver()
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            for _ in range(2):
                session.run(train_op)
            saver.save(session, str(tmp_path / "model.ckpt"))
    # w: [0.95, -1.9], [0.9, -1.8]; average (decay 0.5, from w's initial value) of the updated
    # w: [0.975, -1.95], then [0.9375, -1.875].
    checkpoint = str(tmp_path / "model.ckpt")
    np.testing.assert_allclose(tf.train.load_variable(checkpoint, "w"), [0.9375, -1.875])
    np.testing.assert_allclose(tf.train.load_variable(checkpoint, "w/ExponentialMovingAverage"),
                               [0.9, -1.8])
