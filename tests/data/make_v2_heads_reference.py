"""Reference numbers of TF 2.15's v2-style heads (tf.estimator.BinaryClassHead...) for
tests/test_estimator_v2_heads.py: run on the original (/work/orig/bin/python), prints JSON.

Each head serves a linear model_fn on tf.estimator.Estimator: 3 training steps of
GradientDescent(0.1) through train_op_fn, then evaluate and predict on the same batch.
"""
import json
import os
import sys
import tempfile

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from v2_head_data import LABELS, W, X  # noqa: E402  pylint: disable=wrong-import-position


def heads():
    E = tf.estimator
    return {
        "binary": (E.BinaryClassHead(weight_column="w", thresholds=[0.3, 0.6]), "binary"),
        "multi_class": (E.MultiClassHead(3, weight_column="w"), "multi_class"),
        "named_vocabulary": (E.MultiClassHead(3, label_vocabulary=["a", "b", "c"], name="mc"),
                             "vocabulary"),
        "binary_regularized": (E.BinaryClassHead(), "binary"),
        "multi_label": (E.MultiLabelHead(3, thresholds=[0.4],
                                         classes_for_class_based_metrics=[0, 2]),
                        "multi_label"),
        "regression": (E.RegressionHead(label_dimension=2, weight_column="w"), "regression"),
        "regression_sum": (E.RegressionHead(
            label_dimension=2, loss_reduction=tf.losses.Reduction.SUM), "regression"),
        "poisson": (E.PoissonRegressionHead(), "poisson"),
        "logistic": (E.LogisticRegressionHead(weight_column="w"), "logistic"),
        "multi_head": (E.MultiHead([E.BinaryClassHead(name="a"),
                                    E.RegressionHead(label_dimension=2, name="r")],
                                   head_weights=[1.0, 0.5]), "multi_head"),
    }


def kernel(dim):
    return (np.arange(3 * dim, dtype=np.float32).reshape(3, dim) % 5 - 2.0) * 0.1


def labels_of(kind):
    if kind == "multi_head":
        return {"a": LABELS["binary"], "r": LABELS["regression"]}
    return LABELS[kind]


def run(name):
    head, kind = heads()[name]

    def model_fn(features, labels, mode):
        logits = tf.compat.v1.layers.dense(
            features["x"], head.logits_dimension,
            kernel_initializer=tf.compat.v1.constant_initializer(kernel(head.logits_dimension)),
            bias_initializer=tf.compat.v1.constant_initializer(0.1))
        opt = tf.compat.v1.train.GradientDescentOptimizer(0.1)
        regularization = None
        if name.endswith("regularized"):
            regularization = [0.1 * tf.reduce_sum(tf.square(
                tf.compat.v1.trainable_variables()[0]))]
        return head.create_estimator_spec(
            features=features, mode=mode, logits=logits, labels=labels,
            regularization_losses=regularization,
            train_op_fn=lambda loss: opt.minimize(
                loss, global_step=tf.compat.v1.train.get_global_step()))

    def input_fn():
        return tf.data.Dataset.from_tensors(({"x": X, "w": W}, labels_of(kind)))

    est = tf.estimator.Estimator(model_fn, model_dir=tempfile.mkdtemp())
    est.train(lambda: input_fn().repeat(), steps=3)
    metrics = est.evaluate(input_fn, steps=1)
    preds = list(est.predict(lambda: tf.data.Dataset.from_tensors({"x": X, "w": W})))
    first = {("/".join(k) if isinstance(k, tuple) else k): np.asarray(v).tolist()
             for k, v in preds[0].items() if np.asarray(v).dtype.kind != "O"}
    kernel_value = est.get_variable_value("dense/kernel").tolist()
    return {"metrics": {k: float(v) for k, v in metrics.items()}, "predictions": first,
            "prediction_keys": sorted("/".join(k) if isinstance(k, tuple) else k
                                      for k in preds[0]),
            "kernel": kernel_value}


def eager():
    """loss(), predictions() and metrics()/update_metrics() outside an Estimator."""
    out = {}
    logits = (X @ kernel(1)) + 0.1
    head = tf.estimator.BinaryClassHead(weight_column="w", thresholds=[0.3])
    features = {"x": X, "w": W}
    out["binary_loss"] = float(head.loss(LABELS["binary"], logits, features=features))
    out["binary_loss_reg"] = float(head.loss(LABELS["binary"], logits, features=features,
                                             regularization_losses=[tf.constant(0.25)]))
    metrics = head.update_metrics(head.metrics(regularization_losses=[0.25]), features,
                                  logits, LABELS["binary"],
                                  regularization_losses=[tf.constant(0.25)])
    out["binary_metrics"] = {k: float(m.result()) for k, m in metrics.items()}
    out["binary_metric_types"] = {k: type(m).__name__ for k, m in metrics.items()}
    out["binary_predictions_keys"] = sorted(head.predictions(logits))
    out["binary_predictions_subset"] = sorted(head.predictions(logits, keys=["logits"]))
    logits3 = X @ kernel(3)
    mhead = tf.estimator.MultiClassHead(3, label_vocabulary=["a", "b", "c"])
    labels3 = np.array([["c"], ["a"], ["b"], ["c"], ["b"], ["a"]])
    out["multi_class_loss"] = float(mhead.loss(labels3, logits3, features=features))
    metrics = mhead.update_metrics(mhead.metrics(), features, logits3, labels3)
    out["multi_class_metrics"] = {k: float(m.result()) for k, m in metrics.items()}
    return out


def errors():
    out = {}
    E = tf.estimator
    cases = {
        "binary_reduction": lambda: E.BinaryClassHead(
            loss_reduction=tf.compat.v1.losses.Reduction.SUM_BY_NONZERO_WEIGHTS),
        "binary_none": lambda: E.BinaryClassHead(loss_reduction=tf.losses.Reduction.NONE),
        "binary_thresholds": lambda: E.BinaryClassHead(thresholds=[1.5]),
        "binary_vocab": lambda: E.BinaryClassHead(label_vocabulary="ab"),
        "multi_class_n": lambda: E.MultiClassHead(2),
        "multi_class_none": lambda: E.MultiClassHead(None),
        "multi_class_vocab": lambda: E.MultiClassHead(3, label_vocabulary="abc"),
        "multi_label_n": lambda: E.MultiLabelHead(1),
        "multi_label_thresholds": lambda: E.MultiLabelHead(3, thresholds=[0.0]),
        "multi_label_vocab_len": lambda: E.MultiLabelHead(3, label_vocabulary=["a"]),
        "multi_label_classes": lambda: E.MultiLabelHead(
            3, classes_for_class_based_metrics=[5]),
        "regression_dim": lambda: E.RegressionHead(label_dimension=0),
        "loss_fn_args": lambda: E.RegressionHead(loss_fn=lambda labels, x: labels),
        "loss_fn_extra": lambda: E.RegressionHead(loss_fn=lambda labels, logits, y: labels),
        "multi_head_empty": lambda: E.MultiHead([]),
        "multi_head_weights": lambda: E.MultiHead([E.RegressionHead(name="a")], [1., 2.]),
        "multi_head_unnamed": lambda: E.MultiHead([E.RegressionHead()]),
        "keras_optimizer_required": lambda: E.RegressionHead().create_estimator_spec(
            features={}, mode="train", logits=tf.zeros([2, 1]), labels=tf.zeros([2, 1]),
            optimizer=tf.compat.v1.train.GradientDescentOptimizer(0.1)),
        "both_none": lambda: E.RegressionHead().create_estimator_spec(
            features={}, mode="train", logits=tf.zeros([2, 1]), labels=tf.zeros([2, 1])),
        "abstract_head": lambda: E.Head().name,
    }
    for key, fn in cases.items():
        try:
            fn()
            out[key] = None
        except Exception as e:  # pylint: disable=broad-except
            out[key] = [type(e).__name__, str(e)]
    return out


if __name__ == "__main__":
    result = {"eager": eager(), "errors": errors()}
    for name in heads():
        result[name] = run(name)
    print(json.dumps(result, indent=1, sort_keys=True))
