"""The canned-estimator scenarios that tests/test_canned_estimators.py runs here and
tests/data/make_canned_reference.py runs under TF 2.15 + tensorflow-estimator 2.15 (the
original): the same data, feature columns, estimators and seed, given the `estimator`
module (`tf.compat.v1.estimator` there, `tpu_estimator_compat.v1.estimator` here)."""
import numpy as np
import tensorflow as tf

SEED = 7
TRAIN_STEPS = 6
EVAL_STEPS = 3
_rs = np.random.RandomState(0)
X = _rs.randn(12, 3).astype(np.float32)
COLOR = np.array([b"a", b"b", b"c"] * 4)
IDS = np.arange(12, dtype=np.int64) % 3
CITY = np.array([b"paris", b"rome", b"oslo", b"lima", b"paris", b"kyiv"] * 2)
WEIGHT = (1.0 + np.arange(12) % 3).astype(np.float32)
LABELS = {
    "binary": (X[:, 0] + 0.5 * X[:, 1] > 0).astype(np.int64),
    "multi": np.digitize(X[:, 0], [-0.5, 0.5]).astype(np.int64),
    "strings": np.array([b"low", b"mid", b"high"])[np.digitize(X[:, 0], [-0.5, 0.5])],
    "two_strings": np.array([b"low", b"mid"])[(X[:, 0] > 0).astype(int)],
    "regression": (X @ np.array([1.0, -2.0, 0.5], np.float32) + 0.3).astype(np.float32),
    "multi_hot": np.stack([X[:, 0] > 0, X[:, 1] > 0, X[:, 2] > 0.5], 1).astype(np.int64),
    "regression2": np.stack([X @ [1.0, -2.0, 0.5], X @ [0.2, 0.3, -1.0]], 1).astype(
        np.float32),
}
LABELS["multi_and_regression"] = {"cls": LABELS["multi"], "reg": LABELS["regression"]}


def input_fn(labels):
    """Unshuffled batches of 4 of the 12 examples, repeated."""
    def fn():
        features = {"x": X, "color": COLOR, "city": CITY, "id": IDS, "w": WEIGHT}
        return tf.compat.v1.data.Dataset.from_tensor_slices(
            (features, LABELS[labels])).batch(4).repeat()
    return fn


def predict_input_fn():
    return tf.compat.v1.data.Dataset.from_tensor_slices(
        {"x": X, "color": COLOR, "city": CITY, "id": IDS, "w": WEIGHT}).batch(4)


def _logit_fns_model_fn(estimator, feature_columns):
    """A model_fn of one's own on `tf.estimator.experimental`'s logit functions."""
    experimental = estimator.experimental
    v1 = tf.compat.v1

    def model_fn(features, labels, mode, params, config):
        dnn = experimental.dnn_logit_fn_builder(
            units=1, hidden_units=[3], feature_columns=feature_columns,
            activation_fn=tf.nn.relu, dropout=None, input_layer_partitioner=None,
            batch_norm=False)
        linear = experimental.linear_logit_fn_builder(units=1, feature_columns=feature_columns)
        with v1.variable_scope("deep"):
            logits = experimental.call_logit_fn(dnn, features, mode, params, config)
        with v1.variable_scope("wide"):
            logits += experimental.call_logit_fn(linear, features, mode, params, config)
        loss = v1.losses.mean_squared_error(tf.reshape(labels, [-1, 1]), logits)
        train_op = v1.train.GradientDescentOptimizer(0.05).minimize(
            loss, global_step=v1.train.get_global_step())
        return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                       predictions={"logits": logits})

    return model_fn


def estimators(estimator, model_dir):
    """`{scenario: (estimator, labels kind)}` over `model_dir/<scenario>`."""
    fc = tf.compat.v1.feature_column
    color = fc.categorical_column_with_vocabulary_list("color", ["a", "b", "c"])
    x = fc.numeric_column("x", shape=[3])
    config = estimator.RunConfig(tf_random_seed=SEED)

    def where(name):
        return f"{model_dir}/{name}"

    return {
        "dnn_binary": (estimator.DNNClassifier(
            [4, 3], [x, fc.embedding_column(color, 2)], model_dir=where("dnn_binary"),
            config=config), "binary"),
        "dnn_multi_class": (estimator.DNNClassifier(
            [5], [x, fc.indicator_column(color)], n_classes=3, weight_column="w",
            model_dir=where("dnn_multi_class"), config=config), "multi"),
        "dnn_regressor": (estimator.DNNRegressor(
            [4], [x], weight_column="w", model_dir=where("dnn_regressor"), config=config),
            "regression"),
        "linear_binary": (estimator.LinearClassifier(
            [x, color], model_dir=where("linear_binary"), config=config), "binary"),
        "linear_regressor": (estimator.LinearRegressor(
            [x, color], weight_column="w", model_dir=where("linear_regressor"),
            config=config), "regression"),
        "wide_deep_binary": (estimator.DNNLinearCombinedClassifier(
            linear_feature_columns=[color], dnn_feature_columns=[x],
            dnn_hidden_units=[3], model_dir=where("wide_deep_binary"), config=config),
            "binary"),
        "wide_deep_regressor": (estimator.DNNLinearCombinedRegressor(
            linear_feature_columns=[x, color],
            dnn_feature_columns=[x, fc.embedding_column(color, 2)],
            dnn_hidden_units=[4], weight_column="w", model_dir=where("wide_deep_regressor"),
            config=config), "regression"),
        "linear_vocabulary": (estimator.LinearClassifier(
            [x, color], n_classes=3, label_vocabulary=["low", "mid", "high"],
            weight_column=fc.numeric_column("w"), optimizer="Adagrad",
            model_dir=where("linear_vocabulary"), config=config), "strings"),
        "dnn_binary_vocabulary": (estimator.DNNClassifier(
            [3], [x], label_vocabulary=["low", "mid"], loss_reduction="weighted_mean",
            model_dir=where("dnn_binary_vocabulary"), config=config), "two_strings"),
        "census_style_wide_deep": (estimator.DNNLinearCombinedClassifier(
            linear_feature_columns=[fc.bucketized_column(x, [-1.0, 0.0, 1.0]),
                                    fc.crossed_column([color, "city"], 11)],
            dnn_feature_columns=[
                x, fc.embedding_column(fc.categorical_column_with_hash_bucket("city", 7), 3),
                fc.indicator_column(fc.categorical_column_with_identity("id", 3))],
            dnn_hidden_units=[4, 2], model_dir=where("census_style_wide_deep"), config=config),
            "binary"),
        "dnn_batch_norm": (estimator.DNNRegressor(
            [4, 3], [x], batch_norm=True, activation_fn=tf.nn.tanh, optimizer="Adam",
            model_dir=where("dnn_batch_norm"), config=config), "regression"),
        "dnn_dropout": (estimator.DNNRegressor(
            [5, 4], [x], dropout=0.3, model_dir=where("dnn_dropout"), config=config),
            "regression"),
        "logit_fns": (estimator.Estimator(
            _logit_fns_model_fn(estimator, [x]), model_dir=where("logit_fns"),
            config=config), "regression"),
        "baseline_multi_class": (estimator.BaselineClassifier(
            n_classes=3, model_dir=where("baseline_multi_class"), config=config), "multi"),
        "baseline_regressor": (estimator.BaselineRegressor(
            weight_column="w", model_dir=where("baseline_regressor"), config=config),
            "regression"),
    }


def head_estimators(estimator, contrib, model_dir):
    """`{scenario: (estimator, labels kind)}`: each `*Estimator` class with a contrib head."""
    fc = tf.compat.v1.feature_column
    color = fc.categorical_column_with_vocabulary_list("color", ["a", "b", "c"])
    x = fc.numeric_column("x", shape=[3])
    config = estimator.RunConfig(tf_random_seed=SEED)

    def where(name):
        return f"{model_dir}/{name}"

    return {
        "dnn_estimator_multi_label": (estimator.DNNEstimator(
            head=contrib.multi_label_head(3, weight_column="w", thresholds=[0.3]),
            hidden_units=[4], feature_columns=[x, fc.embedding_column(color, 2)],
            model_dir=where("dnn_estimator_multi_label"), config=config), "multi_hot"),
        "linear_estimator_regression_2d": (estimator.LinearEstimator(
            head=contrib.regression_head(weight_column="w", label_dimension=2),
            feature_columns=[x, color], model_dir=where("linear_estimator_regression_2d"),
            config=config), "regression2"),
        "linear_estimator_multi_head": (estimator.LinearEstimator(
            head=contrib.multi_head([contrib.multi_class_head(3, name="cls"),
                                     contrib.regression_head(name="reg")],
                                    head_weights=[1.0, 0.5]),
            feature_columns=[x], optimizer="Adagrad",
            model_dir=where("linear_estimator_multi_head"), config=config),
            "multi_and_regression"),
        "wide_deep_estimator_multi_class": (estimator.DNNLinearCombinedEstimator(
            head=contrib.multi_class_head(3, label_vocabulary=["low", "mid", "high"]),
            linear_feature_columns=[color], dnn_feature_columns=[x], dnn_hidden_units=[3],
            model_dir=where("wide_deep_estimator_multi_class"), config=config), "strings"),
        "baseline_estimator_binary": (estimator.BaselineEstimator(
            head=contrib.binary_classification_head(
                weight_column="w", loss_reduction=tf.compat.v1.losses.Reduction.SUM),
            model_dir=where("baseline_estimator_binary"), config=config), "binary"),
    }


def mirrored_dnn_classifier(estimator, model_dir, strategy):
    """dnn_binary's DNNClassifier trained under `RunConfig(train_distribute=strategy)`
    (unpartitioned variables, as TF 1.x's strategies made them), evaluated on one device."""
    fc = tf.compat.v1.feature_column
    color = fc.categorical_column_with_vocabulary_list("color", ["a", "b", "c"])
    return estimator.DNNClassifier(
        [4, 3], [fc.numeric_column("x", shape=[3]), fc.embedding_column(color, 2)],
        model_dir=model_dir,
        config=estimator.RunConfig(tf_random_seed=SEED, train_distribute=strategy))


def train_and_evaluate(estimator, labels):
    """Trains TRAIN_STEPS steps; returns `(trained variables {name: values}, every
    checkpoint tensor name, eval metrics over EVAL_STEPS batches)`."""
    estimator.train(input_fn(labels), steps=TRAIN_STEPS)
    reader = tf.train.load_checkpoint(estimator.model_dir)
    names = sorted(reader.get_variable_to_shape_map())
    trained = {name: reader.get_tensor(name) for name in names
               if name != "global_step" and not name.endswith(("Adagrad", "Ftrl", "Ftrl_1"))}
    return trained, names, estimator.evaluate(input_fn(labels), steps=EVAL_STEPS)


def train_evaluate_and_predict(estimator, labels):
    """`train_and_evaluate`'s, then the predictions of the 12 examples `{key: [values of
    each]}` (multi_head's `(head, key)` keys as 'head/key')."""
    trained, names, metrics = train_and_evaluate(estimator, labels)
    predictions = list(estimator.predict(predict_input_fn))
    return trained, names, metrics, {
        "/".join(key) if isinstance(key, tuple) else key: [p[key] for p in predictions]
        for key in predictions[0]}
