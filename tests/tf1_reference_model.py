"""A small TF1 model (dense + batch norm + dense, Adam) used as a compatibility reference.

`build_reference_graph` is the body shared by the TPUEstimator-style `reference_model_fn` and
by `tests/data/make_tf1_fixture.py`, which trains it in TF1 graph mode and commits the
checkpoint under `tests/data/tf1_reference_ckpt/`. The variable names it creates are the TF1
defaults (`dense/kernel`, `batch_normalization/moving_mean`, `dense/kernel/Adam`, ...).
"""
import importlib

import tensorflow as tf

NUM_FEATURES = 4
NUM_CLASSES = 3
HIDDEN_UNITS = 8
LEARNING_RATE = 0.01

_layers = importlib.import_module("tf_keras.api._v1.keras.__internal__.legacy.layers")


def build_logits(features, training):
    """features['x'] [B, 4] -> logits [B, 3]; creates the model's variables."""
    hidden = _layers.dense(features["x"], HIDDEN_UNITS)
    hidden = _layers.batch_normalization(hidden, training=training)
    return _layers.dense(tf.nn.relu(hidden), NUM_CLASSES)


def build_train_op(loss, optimizer):
    """`optimizer.minimize(loss)`, stepping the global step, after the batch-norm updates."""
    update_ops = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
    with tf.control_dependencies(update_ops):
        return optimizer.minimize(loss, global_step=tf.compat.v1.train.get_or_create_global_step())


def build_reference_graph(features, labels):
    """The training graph without the spec class: returns `(loss, train_op)`."""
    logits = build_logits(features, training=True)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    optimizer = tf.compat.v1.train.AdamOptimizer(LEARNING_RATE)
    return loss, build_train_op(loss, optimizer)


def _metric_fn(labels, logits):
    predictions = tf.argmax(logits, axis=-1, output_type=labels.dtype)
    return {"accuracy": tf.compat.v1.metrics.accuracy(labels, predictions)}


def reference_model_fn(features, labels, mode, params):
    """The same model as a TPUEstimator model_fn returning a `TPUEstimatorSpec`."""
    import tpu_estimator_compat  # pylint: disable=import-outside-toplevel

    spec_cls = tpu_estimator_compat.TPUEstimatorSpec
    train = tpu_estimator_compat.ModeKeys.TRAIN
    logits = build_logits(features, training=mode == train)
    if mode == tpu_estimator_compat.ModeKeys.PREDICT:
        return spec_cls(mode, predictions={
            "classes": tf.argmax(logits, axis=-1), "probabilities": tf.nn.softmax(logits)})
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == train:
        optimizer = tf.compat.v1.train.AdamOptimizer(LEARNING_RATE)
        if params.get("use_tpu"):
            optimizer = tpu_estimator_compat.CrossShardOptimizer(optimizer)
        return spec_cls(mode, loss=loss, train_op=build_train_op(loss, optimizer))
    return spec_cls(mode, loss=loss, eval_metrics=(_metric_fn, [labels, logits]))
