"""The `tf.contrib.estimator` head scenarios that tests/test_contrib_estimator.py runs here
and tests/data/make_contrib_heads_reference.py runs under TF 2.15 + tensorflow-estimator
2.15 (TF 1.15's contrib head modules loaded there): a model_fn of one's own, a linear layer
with fixed initial weights whose logits go through `head.create_estimator_spec`, given the
head factories (`contrib`) and `EstimatorSpec`'s module (`estimator`)."""
import numpy as np
import tensorflow as tf

TRAIN_STEPS = 5
EVAL_STEPS = 3
_rs = np.random.RandomState(3)
X = _rs.randn(12, 3).astype(np.float32)
WEIGHT = (1.0 + np.arange(12) % 3).astype(np.float32)
_SCORE = X[:, 0] + 0.5 * X[:, 1]
LABELS = {
    "binary": (_SCORE > 0).astype(np.float32),
    "two_strings": np.array([b"no", b"yes"])[(_SCORE > 0).astype(int)],
    "multi": np.digitize(X[:, 0], [-0.5, 0.5]).astype(np.int64),
    "strings": np.array([b"low", b"mid", b"high"])[np.digitize(X[:, 0], [-0.5, 0.5])],
    "multi_hot": np.stack([X[:, 0] > 0, X[:, 1] > 0, X[:, 2] > 0.5], 1).astype(np.int64),
    "regression2": np.stack([X @ [1.0, -2.0, 0.5], X @ [0.2, 0.3, -1.0]], 1).astype(
        np.float32),
    "counts": np.floor(np.exp(0.5 * X[:, 0]) * 2).astype(np.float32),
    "probability": (1 / (1 + np.exp(-_SCORE))).astype(np.float32),
}
LABELS["multi_and_regression"] = {"cls": LABELS["multi"], "reg": LABELS["counts"]}


def _named_loss(labels, logits, features):
    """A loss_fn using the features: squared error of the softmax to the one-hot labels,
    scaled per example by the feature w."""
    one_hot = tf.one_hot(tf.squeeze(labels, -1), 3)
    return tf.reduce_sum(tf.square(tf.nn.softmax(logits) - one_hot), -1,
                         keepdims=True) * features["w"][:, None]


# scenario: (the head of `contrib`, labels key, how the train op is made)
SCENARIOS = {
    "binary": (lambda c: c.binary_classification_head(
        weight_column="w", thresholds=[0.3, 0.7]), "binary", "optimizer"),
    "binary_vocabulary_named_sum": (lambda c: c.binary_classification_head(
        label_vocabulary=["no", "yes"], loss_reduction=tf.compat.v1.losses.Reduction.SUM,
        name="yesno"), "two_strings", "optimizer"),
    "multi_class_vocabulary": (lambda c: c.multi_class_head(
        3, weight_column="w", label_vocabulary=["low", "mid", "high"]), "strings",
        "optimizer"),
    "multi_class_loss_fn": (lambda c: c.multi_class_head(3, loss_fn=_named_loss), "multi",
                            "train_op_fn"),
    "multi_label": (lambda c: c.multi_label_head(
        3, weight_column="w", thresholds=[0.5], classes_for_class_based_metrics=[0, 2]),
        "multi_hot", "optimizer"),
    "multi_label_vocabulary": (lambda c: c.multi_label_head(
        3, label_vocabulary=["a", "b", "c"], classes_for_class_based_metrics=["b"],
        loss_reduction=tf.compat.v1.losses.Reduction.SUM, name="tags"), "multi_hot",
        "optimizer"),
    "regression_2d_regularized": (lambda c: c.regression_head(
        weight_column="w", label_dimension=2), "regression2", "regularized"),
    "poisson": (lambda c: c.poisson_regression_head(), "counts", "optimizer"),
    "logistic": (lambda c: c.logistic_regression_head(weight_column="w"), "probability",
                 "optimizer"),
    "multi_head": (lambda c: c.multi_head(
        [c.multi_class_head(3, name="cls"), c.poisson_regression_head(name="reg")],
        head_weights=[1.0, 0.5]), "multi_and_regression", "optimizer"),
}


def input_fn(labels):
    """Unshuffled batches of 4 of the 12 examples (static shapes, for the TPU), repeated."""
    def fn(params=None):
        del params
        return tf.compat.v1.data.Dataset.from_tensor_slices(
            ({"x": X, "w": WEIGHT}, LABELS[labels])).batch(4, drop_remainder=True).repeat()
    return fn


def predict_input_fn(params=None):
    del params
    return tf.compat.v1.data.Dataset.from_tensor_slices(
        {"x": X[:4], "w": WEIGHT[:4]}).batch(2, drop_remainder=True)


def model_fn(contrib, scenario, tpu=False):
    """The model_fn of `scenario`: logits = x @ kernel + bias (fixed initial values), the
    spec from the head (its TPUEstimatorSpec with `tpu`), trained with gradient descent
    (0.1)."""
    make_head, _, train = SCENARIOS[scenario]
    v1 = tf.compat.v1

    def fn(features, labels, mode, params):
        del params
        head = make_head(contrib)
        units = head.logits_dimension
        kernel = v1.get_variable("kernel", initializer=tf.constant(
            np.linspace(-0.5, 0.5, 3 * units).reshape(3, units).astype(np.float32)))
        bias = v1.get_variable("bias", initializer=tf.constant(
            np.linspace(0.1, 0.2, units).astype(np.float32)))
        logits = tf.matmul(features["x"], kernel) + bias
        optimizer = v1.train.GradientDescentOptimizer(0.1)
        kwargs = {"optimizer": optimizer}
        if train == "train_op_fn":
            kwargs = {"train_op_fn": lambda loss: optimizer.minimize(
                loss, global_step=v1.train.get_global_step())}
        elif train == "regularized":
            kwargs["regularization_losses"] = [0.05 * tf.reduce_sum(tf.square(kernel))]
        create_spec = head._create_tpu_estimator_spec if tpu else head.create_estimator_spec
        return create_spec(features=features, mode=mode, logits=logits, labels=labels,
                           **kwargs)

    return fn


def run(contrib, estimator, scenario, model_dir):
    """Trains, evaluates and predicts `scenario`: (trained kernel and bias, eval metrics,
    the predictions of 4 examples)."""
    est = estimator.Estimator(model_fn(contrib, scenario), model_dir)
    labels = SCENARIOS[scenario][1]
    est.train(input_fn(labels), max_steps=TRAIN_STEPS)
    metrics = est.evaluate(input_fn(labels), steps=EVAL_STEPS)
    predictions = list(est.predict(predict_input_fn))
    weights = {name: est.get_variable_value(name) for name in ("kernel", "bias")}
    return weights, metrics, predictions
