"""The V2 canned-estimator scenarios (TF 2.x's `tf.estimator.DNNClassifier`...) that
tests/test_v2_canned_estimators.py runs here and tests/data/make_v2_canned_reference.py runs
under TF 2.15 + tensorflow-estimator 2.15 (the original, TF2 behaviour): canned_scenarios'
examples, v2 feature columns, the same seed, given the `tf` module (`tensorflow` there,
`tpu_estimator_compat.v2` here)."""
import numpy as np

from canned_scenarios import COLOR, IDS, LABELS, SEED, WEIGHT, X

TRAIN_STEPS = 6
EVAL_STEPS = 3
_FEATURES = {"x": X, "color": COLOR, "id": IDS, "w": WEIGHT}
# TF 2.15's V2 baselines fail on a dataset of several features besides their weights (their
# bias initializer waits on the batch-size checks, so on the uninitialized iterator;
# BaselineRegressor counts its weights too).
_BASELINE_FEATURES = {"baseline_multi_class": ("x", "w"), "baseline_regressor": ("x",),
                      "baseline_estimator_binary": ("x",)}


def _features(scenario):
    if scenario in _BASELINE_FEATURES:
        return {key: _FEATURES[key] for key in _BASELINE_FEATURES[scenario]}
    return dict(_FEATURES)


def input_fn(tf, scenario, labels):
    """Unshuffled batches of 4 of the 12 examples, repeated."""
    def fn():
        return tf.data.Dataset.from_tensor_slices(
            (_features(scenario), LABELS[labels])).batch(4).repeat()
    return fn


def predict_input_fn(tf, scenario):
    return lambda: tf.data.Dataset.from_tensor_slices(_features(scenario)).batch(4)


def estimators(tf, model_dir):
    """`{scenario: (estimator, labels kind)}` over `model_dir/<scenario>`."""
    fc, est = tf.feature_column, tf.estimator
    color = fc.categorical_column_with_vocabulary_list("color", ["a", "b", "c"])
    x = fc.numeric_column("x", shape=[3])
    config = est.RunConfig(tf_random_seed=SEED)
    sgd = tf.keras.optimizers.legacy.SGD

    def where(name):
        return f"{model_dir}/{name}"

    return {
        "dnn_binary": (est.DNNClassifier(
            [4, 3], [x, fc.embedding_column(color, 2)], model_dir=where("dnn_binary"),
            config=config), "binary"),
        "dnn_multi_class": (est.DNNClassifier(
            [5], [x, fc.indicator_column(color)], n_classes=3, weight_column="w",
            optimizer=lambda: sgd(learning_rate=0.1), model_dir=where("dnn_multi_class"),
            config=config), "multi"),
        "dnn_regressor": (est.DNNRegressor(
            [4], [x], weight_column="w", optimizer="Adam", model_dir=where("dnn_regressor"),
            config=config), "regression"),
        "linear_binary": (est.LinearClassifier(
            [x, color], model_dir=where("linear_binary"), config=config), "binary"),
        "linear_regressor": (est.LinearRegressor(
            [x, color], weight_column="w", optimizer=sgd(learning_rate=0.05),
            model_dir=where("linear_regressor"), config=config), "regression"),
        "wide_deep_binary": (est.DNNLinearCombinedClassifier(
            linear_feature_columns=[color], dnn_feature_columns=[x], dnn_hidden_units=[3],
            model_dir=where("wide_deep_binary"), config=config), "binary"),
        "baseline_multi_class": (est.BaselineClassifier(
            n_classes=3, weight_column="w", model_dir=where("baseline_multi_class"),
            config=config), "multi"),
        "baseline_regressor": (est.BaselineRegressor(
            model_dir=where("baseline_regressor"), config=config),
            "regression"),
        "dnn_batch_norm_dropout": (est.DNNRegressor(
            [4, 3], [x], batch_norm=True, dropout=0.3, activation_fn=tf.nn.tanh,
            optimizer="SGD", model_dir=where("dnn_batch_norm_dropout"), config=config),
            "regression"),
        "wide_deep_regressor": (est.DNNLinearCombinedRegressor(
            linear_feature_columns=[x, color],
            dnn_feature_columns=[x, fc.embedding_column(color, 2)], dnn_hidden_units=[4],
            weight_column="w", linear_optimizer=tf.keras.optimizers.legacy.Adagrad(0.1),
            model_dir=where("wide_deep_regressor"), config=config), "regression"),
        "linear_estimator_regression_2d": (est.LinearEstimator(
            head=est.RegressionHead(label_dimension=2, weight_column="w"),
            feature_columns=[x, color], model_dir=where("linear_estimator_regression_2d"),
            config=config), "regression2"),
        "wide_deep_estimator_multi_class": (est.DNNLinearCombinedEstimator(
            head=est.MultiClassHead(3, label_vocabulary=["low", "mid", "high"]),
            linear_feature_columns=[color], dnn_feature_columns=[x], dnn_hidden_units=[3],
            model_dir=where("wide_deep_estimator_multi_class"), config=config), "strings"),
        "baseline_estimator_binary": (est.BaselineEstimator(
            head=est.BinaryClassHead(), model_dir=where("baseline_estimator_binary"),
            config=config), "binary"),
        "dnn_estimator_multi_label": (est.DNNEstimator(
            head=est.MultiLabelHead(3, weight_column="w"), hidden_units=[4],
            feature_columns=[x, fc.embedding_column(color, 2)],
            model_dir=where("dnn_estimator_multi_label"), config=config), "multi_hot"),
    }


def run(tf, scenario, estimator, labels):
    """Trains TRAIN_STEPS steps, evaluates EVAL_STEPS batches, predicts the first batch;
    returns `{"variables": {checkpoint name: (shape, values)}, "metrics": {...},
    "predictions": {key: values of the 4 examples}}`."""
    estimator.train(input_fn(tf, scenario, labels), steps=TRAIN_STEPS)
    reader = tf.train.load_checkpoint(estimator.model_dir)
    variables = {name: np.asarray(reader.get_tensor(name))
                 for name in reader.get_variable_to_shape_map()}
    metrics = estimator.evaluate(input_fn(tf, scenario, labels), steps=EVAL_STEPS)
    predictions = list(estimator.predict(predict_input_fn(tf, scenario)))[:4]
    return {"variables": variables, "metrics": metrics,
            "predictions": {key: [p[key] for p in predictions] for key in predictions[0]}}
