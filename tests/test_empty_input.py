"""An input with no example: evaluate() returns the metrics over zero examples and the global
step, predict() yields nothing, on every path. The expected numbers are TF1's (TF 2.15's
TPUEstimator with use_tpu=False and Estimator, on this model and metric_fn)."""
import importlib

import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec

pytestmark = pytest.mark.slow  # estimator runs (and processes): seconds each

v1 = tf.compat.v1
_layers = importlib.import_module("tf_keras.api._v1.keras.__internal__.legacy.layers")

# TF1 over zero examples: every metric below and the loss are 0.0.
TF1_RESULTS = {"accuracy": 0.0, "auc": 0.0, "loss": 0.0, "mean": 0.0, "precision": 0.0,
               "global_step": 2}


def input_fn(params):
    features = np.ones([64, 2], np.float32)
    labels = np.ones([64, 1], np.int64)
    dataset = tf.data.Dataset.from_tensor_slices((features, labels))
    if params.get("empty"):
        dataset = dataset.take(0)
    return dataset.batch(params["batch_size"], drop_remainder=bool(params.get("use_tpu")))


def train_input_fn(params):
    return input_fn(dict(params, empty=False)).repeat()


def metric_fn(labels, logits):
    labels = tf.reshape(labels, [-1])
    return {"accuracy": v1.metrics.accuracy(labels, tf.argmax(logits, 1)),
            "mean": v1.metrics.mean(logits),
            "auc": v1.metrics.auc(labels, tf.nn.softmax(logits)[:, 1]),
            "precision": v1.metrics.precision(labels, tf.argmax(logits, 1))}


def model_fn(features, labels, mode, params):
    logits = _layers.dense(features, 2, kernel_initializer=v1.ones_initializer())
    predictions = {"logits": logits}
    if mode == tec.ModeKeys.PREDICT:
        return tec.TPUEstimatorSpec(mode, predictions=predictions)
    loss = v1.losses.sparse_softmax_cross_entropy(tf.reshape(labels, [-1]), logits)
    train_op = tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(0.1)).minimize(
        loss, global_step=v1.train.get_global_step())
    return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op,
                                eval_metrics=(metric_fn, [labels, logits]))


def plain_model_fn(features, labels, mode, params):
    spec = model_fn(features, labels, mode, params)
    if mode == tec.ModeKeys.PREDICT:
        return tec.EstimatorSpec(mode, predictions=spec.predictions)
    fn, tensors = spec.eval_metrics
    return tec.EstimatorSpec(mode, loss=spec.loss, train_op=spec.train_op,
                             eval_metric_ops=fn(*tensors))


def tpu_estimator(model_dir, strategy, params, use_tpu=True):
    config = tec.RunConfig(model_dir=str(model_dir), train_distribute=strategy,
                           tpu_config=tec.TPUConfig(iterations_per_loop=2))
    return tec.TPUEstimator(model_fn, config=config, params=params, train_batch_size=16,
                            eval_batch_size=16, predict_batch_size=16, use_tpu=use_tpu)


@pytest.fixture(params=["one device", "8 replicas", "use_tpu=False", "plain Estimator"])
def estimators(request, tmp_path, one_device, eight_devices):
    """(the estimator that trains two steps, one on the same model_dir with empty input)."""
    if request.param == "plain Estimator":
        def make(empty):
            return tec.Estimator(plain_model_fn, model_dir=str(tmp_path),
                                 params={"batch_size": 16, "empty": empty})
    elif request.param == "use_tpu=False":  # the default device, CPU/GPU semantics
        def make(empty):
            return tpu_estimator(tmp_path, None, {"empty": empty}, use_tpu=False)
    else:
        strategy = one_device if request.param == "one device" else eight_devices
        def make(empty):
            return tpu_estimator(tmp_path, strategy, {"empty": empty})
    trainer = make(False)
    trainer.train(train_input_fn, steps=2)
    return trainer, make(True)


def test_evaluate_on_empty_input_gives_the_metrics_over_zero_examples(estimators):
    _, empty = estimators
    results = empty.evaluate(input_fn)
    assert {k: float(v) for k, v in results.items()} == TF1_RESULTS


def test_predict_on_empty_input_yields_nothing(estimators):
    trainer, empty = estimators
    assert list(empty.predict(input_fn)) == []
    assert list(empty.predict(input_fn, yield_single_examples=False)) == []
    assert len(list(trainer.predict(input_fn))) == 64  # the same set-up with examples
