"""TF 2.x's v2-style heads in `tf.estimator` (`BinaryClassHead`... `MultiHead`, TF 1.15's too):
in a model_fn of one's own on the Estimator they give TF 2.15's loss, eval metrics,
predictions and trained weights; `loss`, `predictions`, Keras `metrics`/`update_metrics`
outside one; the original's argument errors. Numbers from
tests/data/make_v2_heads_reference.py run on TF 2.15 + tensorflow-estimator 2.15.
"""
import importlib

import numpy as np
import pytest
import tensorflow as tf2
import tf_keras

import tpu_estimator_compat.v1 as tf
from v2_head_data import LABELS, W, X

ESTIMATOR = {'binary': {'kernel': [[-0.1436904], [-0.1111508], [0.0699738]],
            'metrics': {'accuracy': 0.5,
                        'accuracy/positive_threshold_0.3': 0.2777778,
                        'accuracy/positive_threshold_0.6': 0.7222222,
                        'accuracy_baseline': 0.7222222,
                        'auc': 0.4461538,
                        'auc_precision_recall': 0.2359707,
                        'average_loss': 0.6915984,
                        'label/mean': 0.2777778,
                        'loss': 1.0373975,
                        'precision': 0.25,
                        'precision/positive_threshold_0.3': 0.2777778,
                        'precision/positive_threshold_0.6': 0.0,
                        'prediction/mean': 0.494401,
                        'recall': 0.4,
                        'recall/positive_threshold_0.3': 1.0,
                        'recall/positive_threshold_0.6': 0.0},
            'prediction_keys': ['all_class_ids',
                                'all_classes',
                                'class_ids',
                                'classes',
                                'logistic',
                                'logits',
                                'probabilities'],
            'predictions': {'all_class_ids': [0, 1],
                            'class_ids': [1],
                            'logistic': [0.5439774],
                            'logits': [0.1763655],
                            'probabilities': [0.4560225, 0.5439774]}},
 'binary_regularized': {'kernel': [[-0.167735], [-0.0747321], [0.0900235]],
                        'metrics': {'accuracy': 0.6666667,
                                    'accuracy_baseline': 0.5,
                                    'auc': 0.6666666,
                                    'auc_precision_recall': 0.5379019,
                                    'average_loss': 0.6788821,
                                    'label/mean': 0.5,
                                    'loss': 0.6830645,
                                    'precision': 0.6666667,
                                    'prediction/mean': 0.514368,
                                    'recall': 0.6666667,
                                    'regularization_loss': 0.0041824},
                        'prediction_keys': ['all_class_ids',
                                            'all_classes',
                                            'class_ids',
                                            'classes',
                                            'logistic',
                                            'logits',
                                            'probabilities'],
                        'predictions': {'all_class_ids': [0, 1],
                                        'class_ids': [1],
                                        'logistic': [0.5668092],
                                        'logits': [0.2688443],
                                        'probabilities': [0.4331909, 0.5668092]}},
 'logistic': {'kernel': [[-0.1153458], [-0.1262777], [0.0292255]],
              'metrics': {'average_loss': 0.7036951,
                          'label/mean': 0.3111111,
                          'loss': 1.0555426,
                          'prediction/mean': 0.4956878},
              'prediction_keys': ['logits', 'predictions'],
              'predictions': {'logits': [0.1389711], 'predictions': [0.534687]}},
 'multi_class': {'kernel': [[-0.0288799, -0.3062664, 0.0351463],
                            [0.0616265, 0.2450289, -0.2066554],
                            [-0.2743222, 0.0809609, 0.1933614]],
                 'metrics': {'accuracy': 0.8888889,
                             'average_loss': 0.7723584,
                             'loss': 1.1585375},
                 'prediction_keys': ['all_class_ids',
                                     'all_classes',
                                     'class_ids',
                                     'classes',
                                     'logits',
                                     'probabilities'],
                 'predictions': {'all_class_ids': [0, 1, 2],
                                 'class_ids': [2],
                                 'logits': [-0.4941635, -0.1156014, 0.6597649],
                                 'probabilities': [0.1775945, 0.2593204, 0.5630851]}},
 'multi_head': {'kernel': [[-0.1796253, -0.1450912, -0.0614302],
                           [0.1117409, 0.1750124, -0.0746607],
                           [0.0011336, 0.095625, 0.0207215]],
                'metrics': {'accuracy/a': 0.6666667,
                            'accuracy_baseline/a': 0.5,
                            'auc/a': 0.6111111,
                            'auc_precision_recall/a': 0.509698,
                            'average_loss/a': 0.6970563,
                            'average_loss/r': 1.5697284,
                            'label/mean/a': 0.5,
                            'label/mean/r': 0.3916667,
                            'loss': 1.4819205,
                            'loss/a': 0.6970563,
                            'loss/r': 1.5697284,
                            'precision/a': 0.6666667,
                            'prediction/mean/a': 0.5122454,
                            'prediction/mean/r': 0.1330296,
                            'recall/a': 0.6666667},
                'prediction_keys': ['a/all_class_ids',
                                    'a/all_classes',
                                    'a/class_ids',
                                    'a/classes',
                                    'a/logistic',
                                    'a/logits',
                                    'a/probabilities',
                                    'r/predictions'],
                'predictions': {'a/all_class_ids': [0, 1],
                                'a/class_ids': [0],
                                'a/logistic': [0.4748243],
                                'a/logits': [-0.1007881],
                                'a/probabilities': [0.5251758, 0.4748243],
                                'r/predictions': [0.1175295, 0.1956214]}},
 'multi_label': {'kernel': [[-0.2312358, -0.083611, 0.0176126],
                            [0.0939741, 0.1977105, -0.2150901],
                            [-0.0673048, -0.0473778, 0.109217]],
                 'metrics': {'accuracy/positive_threshold_0.4': 0.5,
                             'auc': 0.7407408,
                             'auc/class0': 0.6666667,
                             'auc/class2': 0.8888888,
                             'auc_precision_recall': 0.7757162,
                             'auc_precision_recall/class0': 0.8176785,
                             'auc_precision_recall/class2': 0.904106,
                             'average_loss': 0.6580718,
                             'loss': 0.6580718,
                             'precision/positive_threshold_0.4': 0.5,
                             'probability_mean/class0': 0.5009831,
                             'probability_mean/class2': 0.5273575,
                             'recall/positive_threshold_0.4': 1.0},
                 'prediction_keys': ['classes', 'logits', 'probabilities'],
                 'predictions': {'logits': [-0.2443156, -0.2364721, 0.5396688],
                                 'probabilities': [0.4392231, 0.4411559, 0.6317354]}},
 'named_vocabulary': {'kernel': [[-0.1221719, -0.2072631, 0.029435],
                                 [0.0666558, 0.2344204, -0.2010762],
                                 [-0.2107545, 0.0141405, 0.196614]],
                      'metrics': {'accuracy/mc': 0.8333333,
                                  'average_loss/mc': 0.875812,
                                  'loss': 0.875812},
                      'prediction_keys': ['all_class_ids',
                                          'all_classes',
                                          'class_ids',
                                          'classes',
                                          'logits',
                                          'probabilities'],
                      'predictions': {'all_class_ids': [0, 1, 2],
                                      'class_ids': [2],
                                      'logits': [-0.4424569, -0.2105581, 0.703015],
                                      'probabilities': [0.1850168, 0.2333046, 0.5816787]}},
 'poisson': {'kernel': [[-0.1393335], [-0.002393], [0.022038]],
             'metrics': {'average_loss': 1.4012483,
                         'label/mean': 1.1666666,
                         'loss': 1.4012483,
                         'prediction/mean': 1.1041708},
             'prediction_keys': ['logits', 'predictions'],
             'predictions': {'logits': [0.1099263], 'predictions': [1.1161958]}},
 'regression': {'kernel': [[-0.4463003, -0.2773741],
                           [0.0895639, 0.3024289],
                           [0.4216292, -0.1943922]],
                'metrics': {'average_loss': 0.8169814,
                            'label/mean': 0.7083333,
                            'loss': 1.2254721,
                            'prediction/mean': 0.3383543},
                'prediction_keys': ['predictions'],
                'predictions': {'predictions': [1.0338824, -0.6566893]}},
 'regression_sum': {'kernel': [[-0.561781, -0.6340849],
                               [-0.2218648, 1.2242197],
                               [0.4919867, -0.5056103]],
                    'metrics': {'average_loss': 0.5547896,
                                'label/mean': 0.3916667,
                                'loss': 6.6574755,
                                'prediction/mean': 0.4772982},
                    'prediction_keys': ['predictions'],
                    'predictions': {'predictions': [1.795369, -2.1751816]}}}

EAGER = {'binary_loss': 1.0993832,
 'binary_loss_reg': 1.3493832,
 'binary_metrics': {'accuracy': 0.3888889,
                    'accuracy/positive_threshold_0.3': 0.2777778,
                    'accuracy_baseline': 0.7222222,
                    'auc': 0.4461538,
                    'auc_precision_recall': 0.2359707,
                    'average_loss': 0.7329221,
                    'label/mean': 0.2777778,
                    'precision': 0.25,
                    'precision/positive_threshold_0.3': 0.2777778,
                    'prediction/mean': 0.5126244,
                    'recall': 0.6,
                    'recall/positive_threshold_0.3': 1.0,
                    'regularization_loss': 0.25},
 'binary_predictions_keys': ['all_class_ids',
                             'all_classes',
                             'class_ids',
                             'classes',
                             'logistic',
                             'logits',
                             'probabilities'],
 'binary_predictions_subset': ['logits'],
 'multi_class_loss': 1.0152482,
 'multi_class_metrics': {'accuracy': 0.5, 'average_loss': 1.0152482}}


def make_head(name):
    E = tf.estimator
    return {
        "binary": lambda: (E.BinaryClassHead(weight_column="w", thresholds=[0.3, 0.6]),
                           "binary"),
        "multi_class": lambda: (E.MultiClassHead(3, weight_column="w"), "multi_class"),
        "named_vocabulary": lambda: (E.MultiClassHead(3, label_vocabulary=["a", "b", "c"],
                                                      name="mc"), "vocabulary"),
        "binary_regularized": lambda: (E.BinaryClassHead(), "binary"),
        "multi_label": lambda: (E.MultiLabelHead(3, thresholds=[0.4],
                                                 classes_for_class_based_metrics=[0, 2]),
                                "multi_label"),
        "regression": lambda: (E.RegressionHead(label_dimension=2, weight_column="w"),
                               "regression"),
        "regression_sum": lambda: (E.RegressionHead(
            label_dimension=2, loss_reduction=tf2.losses.Reduction.SUM), "regression"),
        "poisson": lambda: (E.PoissonRegressionHead(), "poisson"),
        "logistic": lambda: (E.LogisticRegressionHead(weight_column="w"), "logistic"),
        "multi_head": lambda: (E.MultiHead([E.BinaryClassHead(name="a"),
                                            E.RegressionHead(label_dimension=2, name="r")],
                                           head_weights=[1.0, 0.5]), "multi_head"),
    }[name]()


def kernel(dim):
    return (np.arange(3 * dim, dtype=np.float32).reshape(3, dim) % 5 - 2.0) * 0.1


def labels_of(kind):
    if kind == "multi_head":
        return {"a": LABELS["binary"], "r": LABELS["regression"]}
    return LABELS[kind]


def train_evaluate_predict(name, model_dir, eval_batch_size=None):
    """The head's metrics after 3 training steps on the batch (evaluated in batches of
    `eval_batch_size`, or the batch), its first prediction and the trained kernel."""
    head, kind = make_head(name)

    def model_fn(features, labels, mode):
        logits = tf.layers.dense(
            features["x"], head.logits_dimension,
            kernel_initializer=tf.constant_initializer(kernel(head.logits_dimension)),
            bias_initializer=tf.constant_initializer(0.1))
        optimizer = tf.train.GradientDescentOptimizer(0.1)
        regularization = None
        if name.endswith("regularized"):
            regularization = [0.1 * tf.reduce_sum(tf.square(tf.trainable_variables()[0]))]
        return head.create_estimator_spec(
            features=features, mode=mode, logits=logits, labels=labels,
            regularization_losses=regularization,
            train_op_fn=lambda loss: optimizer.minimize(
                loss, global_step=tf.train.get_global_step()))

    def input_fn():
        return tf.data.Dataset.from_tensors(({"x": X, "w": W}, labels_of(kind)))

    estimator = tf.estimator.Estimator(model_fn, model_dir=str(model_dir))
    estimator.train(lambda: input_fn().repeat(), steps=3)
    if eval_batch_size:
        metrics = estimator.evaluate(lambda: input_fn().unbatch().batch(eval_batch_size))
    else:
        metrics = estimator.evaluate(input_fn, steps=1)
    predictions = list(estimator.predict(
        lambda: tf.data.Dataset.from_tensors({"x": X, "w": W})))
    return metrics, predictions[0], estimator.get_variable_value("dense/kernel")


def _key(key):
    return "/".join(key) if isinstance(key, tuple) else key


@pytest.mark.parametrize("name", sorted(ESTIMATOR))
def test_head_in_a_model_fn_gives_the_originals_numbers(name, tmp_path):
    metrics, first, kernel_value = train_evaluate_predict(name, tmp_path)
    expected = ESTIMATOR[name]
    assert metrics.pop("global_step") == 3
    assert sorted(metrics) == sorted(expected["metrics"])
    for key, value in expected["metrics"].items():
        assert metrics[key] == pytest.approx(value, abs=1e-5), key
    assert sorted(_key(k) for k in first) == expected["prediction_keys"]
    for key, value in expected["predictions"].items():
        got = {_key(k): v for k, v in first.items()}[key]
        np.testing.assert_allclose(got, value, atol=1e-5, err_msg=key)
    np.testing.assert_allclose(kernel_value, expected["kernel"], atol=1e-5)


def test_metrics_accumulate_over_the_evaluation_batches(tmp_path):
    # Two batches of 3 give the one batch's metrics (every metric accumulates; the loss is
    # the mean of equal-sized batches' losses).
    metrics, _, _ = train_evaluate_predict("binary", tmp_path, eval_batch_size=3)
    del metrics["global_step"]
    assert metrics == {key: pytest.approx(value, abs=1e-5)
                       for key, value in ESTIMATOR["binary"]["metrics"].items()}


def test_loss_predictions_and_keras_metrics_outside_an_estimator():
    logits = X @ kernel(1) + 0.1
    head = tf.estimator.BinaryClassHead(weight_column="w", thresholds=[0.3])
    features = {"x": X, "w": W}
    assert head.loss_reduction == tf2.losses.Reduction.SUM_OVER_BATCH_SIZE
    assert float(head.loss(LABELS["binary"], logits, features=features)) == pytest.approx(
        EAGER["binary_loss"], abs=1e-5)
    assert float(head.loss(LABELS["binary"], logits, features=features,
                           regularization_losses=[tf.constant(0.25)])) == pytest.approx(
        EAGER["binary_loss_reg"], abs=1e-5)
    metrics = head.update_metrics(head.metrics(regularization_losses=[0.25]), features,
                                  logits, LABELS["binary"],
                                  regularization_losses=[tf.constant(0.25)])
    assert {k: pytest.approx(float(m.result()), abs=1e-5) for k, m in metrics.items()} == (
        EAGER["binary_metrics"])
    assert sorted(head.predictions(logits)) == EAGER["binary_predictions_keys"]
    assert sorted(head.predictions(logits, keys=["logits"])) == ["logits"]
    with pytest.raises(ValueError, match="Prediction key must be in PredictionKeys, given: "
                                         "predictions"):
        head.predictions(logits, keys=["predictions"])

    head = tf.estimator.MultiClassHead(3, label_vocabulary=["a", "b", "c"])
    labels = np.array([["c"], ["a"], ["b"], ["c"], ["b"], ["a"]])
    assert float(head.loss(labels, X @ kernel(3), features=features)) == pytest.approx(
        EAGER["multi_class_loss"], abs=1e-5)
    metrics = head.update_metrics(head.metrics(), features, X @ kernel(3), labels)
    assert {k: pytest.approx(float(m.result()), abs=1e-5) for k, m in metrics.items()} == (
        EAGER["multi_class_metrics"])


def test_head_is_abstract_and_names_its_methods():
    with pytest.raises(TypeError, match="Can't instantiate abstract class Head"):
        tf.estimator.Head()
    assert tf.compat.v1.estimator.MultiHead is tf.estimator.MultiHead
    # TF 2.x programs used exactly these classes: tpu_estimator_compat.v2 serves them too.
    v2 = importlib.import_module("tpu_estimator_compat.v2.estimator")
    assert v2.BinaryClassHead is tf.estimator.BinaryClassHead


ERRORS = {
    "binary_reduction": (lambda: tf.estimator.BinaryClassHead(
        loss_reduction=tf.losses.Reduction.SUM_BY_NONZERO_WEIGHTS),
        "Invalid loss_reduction: weighted_sum_by_nonzero_weights. See `tf.losses.Reduction` "
        "for valid options."),
    "binary_none": (lambda: tf.estimator.BinaryClassHead(loss_reduction="none"),
                    "Invalid loss_reduction: none. See `tf.losses.Reduction` for valid "
                    "options."),
    "binary_thresholds": (lambda: tf.estimator.BinaryClassHead(thresholds=[1.5]),
                          "thresholds not in (0, 1): ((1.5,),)."),
    "binary_vocab": (lambda: tf.estimator.BinaryClassHead(label_vocabulary="ab"),
                     "label_vocabulary should be a list or a tuple. Given type: "
                     "<class 'str'>"),
    "multi_class_n": (lambda: tf.estimator.MultiClassHead(2), "n_classes must be > 2: 2."),
    "multi_class_none": (lambda: tf.estimator.MultiClassHead(None),
                         "n_classes cannot be None"),
    "multi_label_n": (lambda: tf.estimator.MultiLabelHead(1),
                      "n_classes must be > 1 for multi-label classification. Given: 1"),
    "multi_label_thresholds": (lambda: tf.estimator.MultiLabelHead(3, thresholds=[0.0]),
                               "thresholds must be in (0, 1) range. Given: 0.0"),
    "multi_label_vocab_len": (lambda: tf.estimator.MultiLabelHead(3, label_vocabulary=["a"]),
                              "Length of label_vocabulary must be n_classes (3). Given: 1"),
    "multi_label_classes": (lambda: tf.estimator.MultiLabelHead(
        3, classes_for_class_based_metrics=[5]),
        "All classes_for_class_based_metrics must be in range [0, 2]. Given: 5"),
    "regression_dim": (lambda: tf.estimator.RegressionHead(label_dimension=0),
                       "Invalid label_dimension 0."),
    "loss_fn_args": (lambda: tf.estimator.RegressionHead(loss_fn=lambda labels, x: labels),
                     "loss_fn must contain argument: logits. Given arguments: "
                     "('labels', 'x')"),
    "loss_fn_extra": (lambda: tf.estimator.RegressionHead(
        loss_fn=lambda labels, logits, y: labels), "loss_fn has unexpected args: ['y']"),
    "multi_head_empty": (lambda: tf.estimator.MultiHead([]), "Must specify heads. Given: []"),
    "multi_head_weights": (lambda: tf.estimator.MultiHead(
        [tf.estimator.RegressionHead(name="a")], [1., 2.]),
        "heads and head_weights must have the same size. Given len(heads): 1. Given "
        "len(head_weights): 2."),
    "multi_head_unnamed": (lambda: tf.estimator.MultiHead([tf.estimator.RegressionHead()]),
                           "All given heads must have name specified. Given: <"),
    "both_none": (lambda: tf.estimator.RegressionHead().create_estimator_spec(
        features={}, mode="train", logits=tf.zeros([2, 1]), labels=tf.zeros([2, 1])),
        "train_op_fn and optimizer cannot both be None."),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_argument_errors_are_the_originals(case):
    make, message = ERRORS[case]
    with pytest.raises(ValueError) as error:
        make()
    assert str(error.value).startswith(message)


@pytest.mark.parametrize("optimizer", ["keras_legacy", "v1"])
def test_trains_with_a_legacy_keras_or_a_v1_optimizer(optimizer, tmp_path):
    # TF 2.x's heads took a Keras optimizer (`get_updates`, its iterations made the global
    # step: TF 2.15 gives these weights when the model_fn sets that); a v1 optimizer
    # minimizes with the global step here (TF 2.x refused one).
    x = X[:3, :2]
    y = LABELS["poisson"][:3]

    def model_fn(features, labels, mode):
        logits = tf.layers.dense(features["x"], 1,
                                 kernel_initializer=tf.constant_initializer([[0.1], [0.2]]))
        head = tf.estimator.RegressionHead()
        if optimizer == "v1":
            return head.create_estimator_spec(
                features=features, mode=mode, logits=logits, labels=labels,
                optimizer=tf.train.GradientDescentOptimizer(0.1))
        return head.create_estimator_spec(
            features=features, mode=mode, logits=logits, labels=labels,
            optimizer=tf_keras.optimizers.legacy.SGD(0.1),
            trainable_variables=tf.trainable_variables())

    estimator = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path))
    estimator.train(lambda: tf.data.Dataset.from_tensors(({"x": x}, y)).repeat(), steps=3)
    w, b = np.array([[0.1], [0.2]]), 0.0
    for _ in range(3):  # the mean squared error over the batch, by hand
        error = x @ w + b - y
        w, b = w - 0.1 * 2 * x.T @ error / 3, b - 0.1 * 2 * error.sum() / 3
    np.testing.assert_allclose(estimator.get_variable_value("dense/kernel"), w, atol=1e-6)
    np.testing.assert_allclose(estimator.get_variable_value("dense/bias"), [b], atol=1e-6)
    assert estimator.get_variable_value("global_step") == 3


def test_a_keras_optimizer_without_get_updates_names_the_alternatives():
    with pytest.raises(ValueError, match=r"^The given optimizer is not a tf.keras.optimizers."
                                         r"Optimizer instance. Received optimizer of type .*"
                                         r"Use a v1 optimizer \(tf.compat.v1.train.\*\), a "
                                         r"legacy Keras optimizer"):
        tf.estimator.RegressionHead().create_estimator_spec(
            features={}, mode="train", logits=tf.zeros([2, 1]), labels=tf.zeros([2, 1]),
            optimizer=tf_keras.optimizers.SGD(0.1), trainable_variables=[])


def test_tpu_estimator_spec_evaluates_the_keras_metrics_on_the_host(tmp_path):
    # TPUEstimator takes `head._create_tpu_estimator_spec(...)`: eval_metrics is a metric_fn
    # of tensors; the numbers are the Estimator's (the same 3 steps on the same batch).
    import helpers  # pylint: disable=import-outside-toplevel

    head = tf.estimator.BinaryClassHead(weight_column="w", thresholds=[0.3, 0.6])

    def model_fn(features, labels, mode, params):
        del params
        logits = tf.layers.dense(features["x"], 1,
                                 kernel_initializer=tf.constant_initializer(kernel(1)),
                                 bias_initializer=tf.constant_initializer(0.1))
        optimizer = tf.tpu.CrossShardOptimizer(tf.train.GradientDescentOptimizer(0.1))
        return head._create_tpu_estimator_spec(  # pylint: disable=protected-access
            features=features, mode=mode, logits=logits, labels=labels,
            train_op_fn=lambda loss: optimizer.minimize(
                loss, global_step=tf.train.get_global_step()))

    def input_fn(params):
        dataset = tf.data.Dataset.from_tensor_slices(({"x": X, "w": W}, LABELS["binary"]))
        return dataset.repeat().batch(params["batch_size"], drop_remainder=True)

    estimator = helpers.make_estimator(tmp_path, model=model_fn, iterations_per_loop=1,
                                       batch_size=6, use_tpu=False)
    estimator.train(input_fn, steps=3)
    metrics = estimator.evaluate(input_fn, steps=1)
    assert metrics.pop("global_step") == 3
    assert metrics == {key: pytest.approx(value, abs=1e-5)
                       for key, value in ESTIMATOR["binary"]["metrics"].items()}
