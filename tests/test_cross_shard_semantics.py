"""TPU semantics of gradients: CrossShardOptimizer as TF 1.15 defined it whatever the wrapped
optimizer overrides, replicas kept as TF1 kept them, and no silent drift.

The model: `w` [1, 1] (dense) and a table `t` [2, 1] (sparse: rows looked up by id = x mod 2),
both starting at 1; `loss = mean(x * w) + mean(t[x mod 2] * x)` over the replica's batch of
x = 0, 1, 2, ... (global batch 8, two steps). Gradients do not depend on the weights, so TF1's
arithmetic is written out by hand below:

    MEAN (minimize: loss / replicas, then summed): the global batch's mean gradient,
        d/dw = mean(x) = 3.5, 11.5;  d/dt0 = (0+2+4+6)/8 = 1.5, 5.5;  d/dt1 = (1+3+5+7)/8 = 2.0, 6.0
    SUM (tf.gradients + apply_gradients, BERT's route): the sum of the replicas' means,
        N times the MEAN gradient here (each replica's batch is 8/N consecutive x).
    linear rule  v -= 0.1 * g:       w = 1 - 0.1 * (3.5 + 11.5) * k = 1 - 1.5k,
                                     t0 = 1 - 0.7k, t1 = 1 - 0.8k       (k = 1 MEAN, N SUM)
    squared rule v -= 0.1 * g * g:   w = 1 - 0.1 * (3.5^2 + 11.5^2) k^2 = 1 - 14.45k^2,
                                     t0 = 1 - 3.25k^2, t1 = 1 - 4k^2
"""
import importlib

import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
from tpu_estimator_compat.engine import cluster_resolver
from tpu_estimator_compat.engine import replica_sync

v1 = tf.compat.v1
_layers = importlib.import_module("tf_keras.api._v1.keras.__internal__.legacy.layers")
GLOBAL_BATCH = 8
LR = 0.1

EXPECTED = {  # (rule, route, replicas): (w, t0, t1)
    **{("linear", "minimize", n): (-0.5, 0.3, 0.2) for n in (1, 2, 8)},
    ("linear", "tf.gradients", 1): (-0.5, 0.3, 0.2),
    ("linear", "tf.gradients", 2): (-2.0, -0.4, -0.6),
    ("linear", "tf.gradients", 8): (-11.0, -4.6, -5.4),
    **{("squared", "minimize", n): (-13.45, -2.25, -3.0) for n in (1, 2, 8)},
    ("squared", "tf.gradients", 1): (-13.45, -2.25, -3.0),
    ("squared", "tf.gradients", 2): (-56.8, -12.0, -15.0),
    ("squared", "tf.gradients", 8): (-923.8, -207.0, -255.0),
}


class AssignsOptimizer(v1.train.Optimizer):
    """BERT's AdamWeightDecay shape: `apply_gradients` overridden with plain assigns and its
    own global-step increment (`v -= 0.1 * g`)."""

    def __init__(self):
        super().__init__(use_locking=False, name="Assigns")

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        updates = [v.assign(v - LR * tf.convert_to_tensor(g)) for g, v in grads_and_vars]
        with tf.control_dependencies(updates):
            return global_step.assign_add(1)


class SquaredStepOptimizer(v1.train.Optimizer):
    """Adafactor's shape: `_resource_apply_dense` / `_resource_apply_sparse` overridden
    (`v -= 0.1 * g * g`), the stock `apply_gradients`."""

    def __init__(self):
        super().__init__(use_locking=False, name="SquaredStep")

    def _resource_apply_dense(self, grad, var):
        return var.assign_sub(LR * grad * grad)

    def _resource_apply_sparse(self, grad, var, indices):
        return var.scatter_sub(tf.IndexedSlices(LR * grad * grad, indices))


OPTIMIZERS = {
    "assigns": (AssignsOptimizer, "linear"),
    "dense/sparse apply": (SquaredStepOptimizer, "squared"),
    "stock": (lambda: v1.train.GradientDescentOptimizer(LR), "linear"),
}


def input_fn(params):
    x = tf.data.Dataset.range(10_000).map(lambda i: tf.cast(tf.reshape(i, [1]), tf.float32))
    return x.map(lambda x: (x, x)).batch(params["batch_size"], drop_remainder=True)


def _loss(features):
    w = v1.get_variable("w", [1, 1], initializer=v1.ones_initializer())
    table = v1.get_variable("t", [2, 1], initializer=v1.ones_initializer())
    ids = tf.cast(tf.math.floormod(features[:, 0], 2.0), tf.int32)
    return (tf.reduce_mean(tf.matmul(features, w))
            + tf.reduce_mean(tf.gather(table, ids) * features)), [w, table]


def make_model_fn(make_optimizer, route, wrap=True):
    def model_fn(features, labels, mode, params):
        del labels, params
        loss, variables = _loss(features)
        optimizer = make_optimizer()
        if wrap:
            optimizer = tec.CrossShardOptimizer(optimizer)
        global_step = v1.train.get_global_step()
        if route == "minimize":
            train_op = optimizer.minimize(loss, global_step=global_step)
        else:
            grads = tf.gradients(loss, variables)
            train_op = optimizer.apply_gradients(zip(grads, variables), global_step)
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)
    return model_fn


def _simulated_tpu(monkeypatch, cores):
    monkeypatch.setenv(cluster_resolver.SIMULATED_TPU_CORES_ENV, str(cores))


def _estimator(model_dir, model_fn, iterations_per_loop=1):
    config = tec.RunConfig(model_dir=str(model_dir),
                           tpu_config=tec.TPUConfig(iterations_per_loop=iterations_per_loop))
    return tec.TPUEstimator(model_fn, config=config, use_tpu=True,
                            train_batch_size=GLOBAL_BATCH, eval_batch_size=GLOBAL_BATCH)


def _weights(model_dir):
    reader = tf.train.load_checkpoint(str(model_dir))
    return (reader.get_tensor("w")[0, 0], reader.get_tensor("t")[0, 0],
            reader.get_tensor("t")[1, 0])


@pytest.mark.parametrize("replicas", [1, 2, 8])
@pytest.mark.parametrize("route", ["minimize", "tf.gradients"])
@pytest.mark.parametrize("shape", sorted(OPTIMIZERS))
def test_cross_shard_optimizer_gives_tf1_weights(monkeypatch, tmp_path, shape, route,
                                                 replicas):
    make_optimizer, rule = OPTIMIZERS[shape]
    _simulated_tpu(monkeypatch, replicas)
    estimator = _estimator(tmp_path, make_model_fn(make_optimizer, route))
    estimator.train(input_fn, steps=2)
    np.testing.assert_allclose(_weights(tmp_path), EXPECTED[rule, route, replicas],
                               rtol=1e-6)
    assert estimator.get_variable_value("global_step") == 2


def test_cross_shard_optimizer_on_a_mirrored_strategy_averages(eight_devices, tmp_path):
    """CPU/GPU semantics (Estimator's train_distribute): every replica gets whole batches of
    8, the loss is scaled by 1/8 and the gradients summed: the mean gradient of x = 0..63
    (31.5) then x = 64..127 (95.5) for the assigns optimizer: w = 1 - 0.1 * 127 = -11.7."""
    config = tec.RunConfig(model_dir=str(tmp_path), train_distribute=eight_devices,
                           tpu_config=tec.TPUConfig(iterations_per_loop=1))
    estimator = tec.TPUEstimator(make_model_fn(AssignsOptimizer, "minimize"), config=config,
                                 use_tpu=False, train_batch_size=GLOBAL_BATCH)
    estimator.train(input_fn, steps=2)
    np.testing.assert_allclose(estimator.get_variable_value("w"), [[-11.7]], rtol=1e-6)


def _mean_out_model_fn(make_optimizer, wrap, batch_norm=False):
    """`out = x * w` (then a batch norm of it, if asked); TRAIN as make_model_fn's minimize
    route on mean(out); EVAL: mean_out and the batch norm's moving mean."""
    def model_fn(features, labels, mode, params):
        del labels, params
        w = v1.get_variable("w", [1, 1], initializer=v1.ones_initializer())
        out = tf.matmul(features, w)
        if batch_norm:
            out = _layers.batch_normalization(out, training=mode == "train", momentum=0.5)
        loss = tf.reduce_mean(out)
        if mode == "train":
            optimizer = make_optimizer()
            if wrap:
                optimizer = tec.CrossShardOptimizer(optimizer)
            with tf.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
                train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
            return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)
        return tec.TPUEstimatorSpec(
            mode, loss=loss, eval_metrics=(lambda o: {"mean_out": v1.metrics.mean(o)}, [out]))
    return model_fn


def test_unwrapped_optimizer_trains_each_replica_then_keeps_replica_0s(monkeypatch, tmp_path):
    """Without CrossShardOptimizer each TPU core applied its own gradients, and each
    Session.run (loop) wrote replica 0's values back. 2 replicas, batches of 4 per replica,
    one step per loop: replica 0 sees x = 0..3 (mean 1.5), then 8..11 (9.5):
    w = 1 - 0.1 * (1.5 + 9.5) = -0.1 (replica 1's own copies are discarded each loop).
    evaluate() in the same process sees -0.1 on both replicas: mean_out over x = 0..15 is
    7.5 * -0.1 = -0.75, as a new estimator restoring the checkpoint computes."""
    _simulated_tpu(monkeypatch, 2)
    model_fn = _mean_out_model_fn(lambda: v1.train.GradientDescentOptimizer(LR), wrap=False)
    estimator = _estimator(tmp_path, model_fn)
    estimator.train(input_fn, steps=2)
    np.testing.assert_allclose(estimator.get_variable_value("w"), [[-0.1]], rtol=1e-6)
    in_process = estimator.evaluate(input_fn, steps=2)
    restored = _estimator(tmp_path, model_fn).evaluate(input_fn, steps=2)
    np.testing.assert_allclose(in_process["mean_out"], -0.75, rtol=1e-6)
    assert in_process["mean_out"] == restored["mean_out"]


def test_per_replica_batch_norm_statistics_after_train_are_the_checkpoints(monkeypatch,
                                                                           tmp_path):
    """tf.layers batch norm's moving statistics (synchronised on read) are updated from each
    replica's own batch, so replicas' copies differ during a loop, as on a TPU. On 8 replicas, after train(),
    evaluate() in the same process gives exactly what a new estimator restoring the
    checkpoint gives (a fresh process restores the same values)."""
    _simulated_tpu(monkeypatch, 8)
    model_fn = _mean_out_model_fn(lambda: v1.train.GradientDescentOptimizer(LR), wrap=True,
                                  batch_norm=True)
    estimator = _estimator(tmp_path, model_fn, iterations_per_loop=3)
    estimator.train(input_fn, steps=3)
    in_process = estimator.evaluate(input_fn, steps=2)
    restored = _estimator(tmp_path, model_fn).evaluate(input_fn, steps=2)
    assert in_process["mean_out"] == restored["mean_out"]
    assert in_process["loss"] == restored["loss"]
    # As TF1 on a TPU: replica 0's statistics. Its batches are x = 0, 8, 16 (one example
    # per replica), w stays 1 (a normalised output has no gradient): 0 -> 0 -> 4 -> 10.
    assert estimator.get_variable_value("batch_normalization/moving_mean") == [10.0]


def test_replicas_that_drift_on_synchronized_variables_raise_before_saving(monkeypatch,
                                                                           tmp_path):
    """`w` is updated through CrossShardOptimizer and also by an assign of each replica's own
    batch mean: the copies differ after the first loop; train() stops with a named error
    before the checkpoint of that step is written."""
    _simulated_tpu(monkeypatch, 2)

    def model_fn(features, labels, mode, params):
        del labels, params
        loss, variables = _loss(features)
        train_op = tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(LR)).minimize(
            loss, global_step=v1.train.get_global_step())
        with tf.control_dependencies([train_op]):
            train_op = variables[0].assign_add(tf.reshape(tf.reduce_mean(features), [1, 1]))
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    estimator = _estimator(tmp_path, model_fn, iterations_per_loop=2)
    with pytest.raises(replica_sync.ReplicaDriftError, match=r"identical on every replica: w\."
                       r" They are updated through CrossShardOptimizer") as raised:
        estimator.train(input_fn, steps=2)
    assert raised.value.names == ["w"]
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-0")


def test_group_assignment_sums_within_each_subgroup(monkeypatch, tmp_path):
    """group_assignment [[0..3], [4..7]] on 8 replicas (one example each): MEAN scales the
    loss by 1/4 and each subgroup sums its own gradients, so the subgroups' copies differ
    and each loop ends with replica 0's (its subgroup saw x = 0..3, then 8..11):
    w = 1 - 0.1 * (1.5 + 9.5) = -0.1, t0 = 1 - 0.1 * ((0+2)/4 + (8+10)/4) = 0.5,
    t1 = 1 - 0.1 * ((1+3)/4 + (9+11)/4) = 0.4."""
    _simulated_tpu(monkeypatch, 8)

    def model_fn(features, labels, mode, params):
        del labels, params
        loss, _ = _loss(features)
        optimizer = tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(LR),
                                            group_assignment=[[0, 1, 2, 3], [4, 5, 6, 7]])
        train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    _estimator(tmp_path, model_fn).train(input_fn, steps=2)
    np.testing.assert_allclose(_weights(tmp_path), (-0.1, 0.5, 0.4), rtol=1e-6)


@pytest.mark.parametrize("group_assignment, message", [
    ([[0, 1], [2, 2]], r"group_assignment must be a permutation of range\(4\)"),
    ([[0, 1, 2], [3]], "The size of each subgroup in group_assignment must be equal"),
])
def test_bad_group_assignment_is_refused_while_tracing(monkeypatch, tmp_path,
                                                       group_assignment, message):
    _simulated_tpu(monkeypatch, 4)

    def model_fn(features, labels, mode, params):
        del labels, params
        loss, _ = _loss(features)
        optimizer = tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(LR),
                                            group_assignment=group_assignment)
        train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    with pytest.raises(ValueError, match=message):
        _estimator(tmp_path, model_fn).train(input_fn, steps=1)
    assert tf.train.latest_checkpoint(str(tmp_path)) is None


class MomentOptimizer(v1.train.Optimizer):
    """BERT's AdamWeightDecay shape: its moment is a variable it asks for with get_variable
    in apply_gradients (`m = g; v -= 0.1 * m`)."""

    def __init__(self):
        super().__init__(use_locking=False, name="Moment")

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        updates = []
        for grad, var in grads_and_vars:
            moment = v1.get_variable(var.op.name + "/moment", var.shape, trainable=False,
                                     initializer=v1.zeros_initializer())
            updates += [moment.assign(tf.convert_to_tensor(grad)), var.assign_sub(LR * grad)]
        with tf.control_dependencies(updates):
            return global_step.assign_add(1)


def test_an_optimizers_own_variables_are_checked_like_the_weights(monkeypatch, tmp_path):
    """The moment the wrapped optimizer creates while applying summed gradients is identical
    on every replica in TF1: changed per replica (here by the replica's own batch mean), it
    is named by ReplicaDriftError rather than silently replaced by replica 0's."""
    _simulated_tpu(monkeypatch, 2)

    def model_fn(features, labels, mode, params):
        del labels, params
        w = v1.get_variable("w", [1, 1], initializer=v1.ones_initializer())
        loss = tf.reduce_mean(tf.matmul(features, w))
        train_op = tec.CrossShardOptimizer(MomentOptimizer()).minimize(
            loss, global_step=v1.train.get_global_step())
        with tf.control_dependencies([train_op]):
            with v1.variable_scope("", reuse=True):
                moment = v1.get_variable("w/moment")
            train_op = moment.assign_add(tf.reshape(tf.reduce_mean(features), [1, 1]))
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    with pytest.raises(replica_sync.ReplicaDriftError, match="identical on every replica: "
                       "w/moment"):
        _estimator(tmp_path, model_fn).train(input_fn, steps=1)
