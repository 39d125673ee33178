"""Python values among the eval_metrics / host_call arguments: off TPU the original passed
them to the function as given (BERT-NER's `num_labels`, TAPAS's None for a head it leaves
out); with TPU semantics they cannot
cross from the device and are refused before any step. Numbers from the original
(TF 2.15 TPUEstimator, use_tpu=False)."""
import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
import tpu_estimator_compat.v1 as v1

pytestmark = pytest.mark.slow  # estimator runs: seconds each

X = (np.arange(32 * 4, dtype=np.float32).reshape(32, 4) % 5) / 5.0
Y = (X.sum(axis=1) > 1.0).astype(np.int64)
ORIGINAL_MEAN_SCALED, ORIGINAL_ACCURACY, ORIGINAL_LOSS = 0.5870536, 1.0, 0.49333805


def input_fn(params):
    return tf.data.Dataset.from_tensor_slices((X, Y)).batch(params["batch_size"],
                                                            drop_remainder=True)


def metric_fn(labels, logits, num_labels, scale):
    one_hot = tf.one_hot(labels, num_labels)
    return {"mean_scaled": v1.metrics.mean(tf.reduce_sum(one_hot * logits, -1) * scale),
            "accuracy": v1.metrics.accuracy(labels, tf.argmax(logits, -1))}


def make_model_fn(form):
    def model_fn(features, labels, mode, params):
        logits = v1.layers.dense(features, 2, kernel_initializer=v1.constant_initializer(
            np.linspace(-1, 1, 8).reshape(4, 2)))
        loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
        args = ([labels, logits, 2, 2.5] if form == "list" else
                {"labels": labels, "logits": logits, "num_labels": 2, "scale": 2.5})
        return tec.TPUEstimatorSpec(mode, loss=loss, eval_metrics=(metric_fn, args))
    return model_fn


def make_estimator(model_dir, form, strategy, use_tpu):
    config = tec.RunConfig(model_dir=str(model_dir), eval_distribute=strategy)
    return tec.TPUEstimator(model_fn=make_model_fn(form), config=config, use_tpu=use_tpu,
                            train_batch_size=8, eval_batch_size=8)


@pytest.mark.parametrize("form", ["list", "dict"])
def test_python_values_reach_metric_fn_off_tpu(tmp_path, form, one_device):
    results = make_estimator(tmp_path, form, one_device, use_tpu=False).evaluate(
        input_fn, steps=None)
    np.testing.assert_allclose(
        [results["mean_scaled"], results["accuracy"], results["loss"]],
        [ORIGINAL_MEAN_SCALED, ORIGINAL_ACCURACY, ORIGINAL_LOSS], rtol=1e-6)


def test_python_values_are_refused_on_tpu(tmp_path, eight_devices):
    with pytest.raises(TypeError, match=r"eval_metrics\[1\]\[2\] is int 2, not a tensor"):
        make_estimator(tmp_path, "list", eight_devices, use_tpu=True).evaluate(
            input_fn, steps=None)


def features_only_input_fn(params):
    return tf.data.Dataset.from_tensor_slices({"x": X, "y": Y}).batch(params["batch_size"],
                                                                     drop_remainder=True)


def optional_metric_fn(labels, logits, aggregation_ids, aggregation_logits):
    metrics = {"accuracy": v1.metrics.accuracy(labels, tf.argmax(logits, -1))}
    if aggregation_ids is not None:
        metrics["aggregation_accuracy"] = v1.metrics.accuracy(
            aggregation_ids, tf.argmax(aggregation_logits, -1))
    return metrics


def optional_heads_model_fn(form):
    """TAPAS's classifier: input_fn returns features only (labels None), and eval_metrics
    passes None for the heads a run leaves out (aggregation, classification)."""
    def model_fn(features, labels, mode, params):
        assert labels is None
        logits = v1.layers.dense(features["x"], 2, kernel_initializer=v1.constant_initializer(
            np.linspace(-1, 1, 8).reshape(4, 2)))
        loss = v1.losses.sparse_softmax_cross_entropy(features["y"], logits)
        args = ([features["y"], logits, None, None] if form == "list" else
                {"labels": features["y"], "logits": logits, "aggregation_ids": None,
                 "aggregation_logits": None})
        return tec.TPUEstimatorSpec(mode, loss=loss, eval_metrics=(optional_metric_fn, args))
    return model_fn


@pytest.mark.parametrize("form", ["list", "dict"])
def test_none_reaches_metric_fn_off_tpu_when_labels_are_none(tmp_path, form, one_device):
    config = tec.RunConfig(model_dir=str(tmp_path), eval_distribute=one_device)
    results = tec.TPUEstimator(model_fn=optional_heads_model_fn(form), config=config,
                               use_tpu=False, train_batch_size=8, eval_batch_size=8).evaluate(
        features_only_input_fn, steps=None)
    assert sorted(results) == ["accuracy", "global_step", "loss"]  # the original's
    np.testing.assert_allclose([results["accuracy"], results["loss"]],
                               [ORIGINAL_ACCURACY, ORIGINAL_LOSS], rtol=1e-6)


def test_none_is_refused_on_tpu_naming_use_tpu_false(tmp_path, eight_devices):
    """The original failed here too (its outfeed reads each argument's dtype: AttributeError
    'NoneType' object has no attribute 'dtype'); TAPAS evaluates with use_tpu=False."""
    config = tec.RunConfig(model_dir=str(tmp_path), eval_distribute=eight_devices)
    with pytest.raises(ValueError, match=r"eval_metrics\[1\]\[2\] is None: .* bind it into "
                       r"the function .* or evaluate with use_tpu=False"):
        tec.TPUEstimator(model_fn=optional_heads_model_fn("list"), config=config,
                         use_tpu=True, train_batch_size=8, eval_batch_size=8).evaluate(
            features_only_input_fn, steps=None)
