"""The original's numbers of tests/test_keras_estimator.py: run with TF 2.15 +
tensorflow-estimator 2.15 (`python tests/data/keras_estimator_reference.py >
tests/data/keras_estimator_reference.jsonl`, and with `--tf1` into
keras_estimator_reference_tf1.jsonl); the test runs the same scenarios with this package. One JSON line per scenario: predictions before training (the warm start from the
Keras model's weights), the evaluation, predictions and weights after training, for a
Sequential (Dense, Dropout) and a functional model with two named inputs, both through
`tf.keras.estimator.model_to_estimator` (checkpoint_format='saver': name-based checkpoints,
whose variable names both sides share)."""
import json
import sys
import tempfile

import numpy as np

ROWS = 48


def data():
    rng = np.random.RandomState(7)
    return {"x": rng.rand(ROWS, 4).astype(np.float32),
            "a": rng.rand(ROWS, 3).astype(np.float32),
            "b": rng.rand(ROWS, 2).astype(np.float32),
            "y": rng.randint(0, 3, size=ROWS).astype(np.int64),
            "t": rng.rand(ROWS, 1).astype(np.float32),
            "w": rng.rand(ROWS).astype(np.float32)}


def scenarios(tf, keras):
    """{scenario: numbers} of the three scenarios, `tf` being TensorFlow (or this package's
    namespace) and `keras` its Keras 2."""
    sgd, adam = keras.optimizers.legacy.SGD, keras.optimizers.legacy.Adam
    return {
        "sequential_dropout": run(tf, sequential(keras, adam, 0.3), {"hidden_input": "x"},
                                  "y", 1),
        "sequential": run(tf, sequential(keras, adam, 0.0), {"hidden_input": "x"}, "y", 12),
        "functional": run(tf, functional(keras, sgd), {"a": "a", "b": "b"}, "t", 12),
        "two_outputs": run(tf, two_outputs(keras, adam), {"a": "a", "b": "b"},
                           {"reg": "t", "cls": "y"}, 6, sample_weights="w"),
        "batch_norm": run(tf, batch_norm(keras, sgd), {"hidden_input": "x"}, "t", 5),
        "checkpoint_format_default": run(tf, functional(keras, sgd), {"a": "a", "b": "b"},
                                         "t", 3, checkpoint_format="checkpoint")}


def set_weights(model):
    """Deterministic initial weights (independent of the initializers' random streams)."""
    rng = np.random.RandomState(3)
    model.set_weights([rng.uniform(-0.5, 0.5, w.shape).astype(np.float32)
                       for w in model.get_weights()])


def sequential(keras, optimizer, dropout):
    model = keras.Sequential([keras.layers.Dense(8, activation="relu", input_shape=(4,),
                                                 name="hidden"),
                              keras.layers.Dropout(dropout, name="dropout"),
                              keras.layers.Dense(3, name="logits")])
    model.compile(optimizer(0.05),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    set_weights(model)
    return model


def functional(keras, optimizer):
    a = keras.Input((3,), name="a")
    b = keras.Input((2,), name="b")
    hidden = keras.layers.Dense(5, activation="tanh", name="hidden")(
        keras.layers.concatenate([a, b]))
    out = keras.layers.Dense(1, name="out")(hidden)
    model = keras.Model([a, b], out)
    model.compile(optimizer(0.1, momentum=0.5), "mse", metrics=["mae"])
    set_weights(model)
    return model


def two_outputs(keras, optimizer):
    """Two named inputs, a regression and a classification output: per-output losses,
    loss weights and metrics (trained with sample weights)."""
    a = keras.Input((3,), name="a")
    b = keras.Input((2,), name="b")
    hidden = keras.layers.Dense(4, activation="relu", name="hidden")(
        keras.layers.concatenate([a, b]))
    model = keras.Model([a, b], [keras.layers.Dense(1, name="reg")(hidden),
                                 keras.layers.Dense(3, activation="softmax", name="cls")(a)])
    model.compile(optimizer(0.05), loss={"reg": "mse", "cls": "sparse_categorical_crossentropy"},
                  loss_weights={"reg": 1.0, "cls": 0.5},
                  metrics={"reg": ["mae"], "cls": ["accuracy"]})
    set_weights(model)
    return model


def batch_norm(keras, optimizer):
    """BatchNormalization (its moving statistics updated in training) and a metric object."""
    model = keras.Sequential([keras.layers.Dense(3, input_shape=(4,), name="hidden"),
                              keras.layers.BatchNormalization(name="bn"),
                              keras.layers.Dense(1, name="out")])
    model.compile(optimizer(0.1), "mse", metrics=[keras.metrics.RootMeanSquaredError()])
    set_weights(model)
    gamma, beta, mean, variance = model.get_layer("bn").get_weights()
    model.get_layer("bn").set_weights([gamma, beta, mean, np.abs(variance) + 0.5])
    return model


def run(tf, model, features, labels, steps, batch=8, sample_weights=None,
        checkpoint_format="saver"):
    """Trains, evaluates and predicts through model_to_estimator (`checkpoint_format=None`:
    the function's default)."""
    values = data()
    def input_fn():
        inputs = {k: values[v] for k, v in features.items()}
        if sample_weights:
            inputs = {"features": inputs,
                      "sample_weights": {k: values[sample_weights] for k in labels}}
        targets = ({k: values[v] for k, v in labels.items()} if isinstance(labels, dict)
                   else values[labels])
        return tf.data.Dataset.from_tensor_slices((inputs, targets)).batch(batch).repeat()
    def predict_fn():
        return tf.data.Dataset.from_tensor_slices(
            {k: values[v] for k, v in features.items()}).batch(batch)
    kwargs = {} if checkpoint_format is None else {"checkpoint_format": checkpoint_format}
    estimator = tf.keras.estimator.model_to_estimator(
        keras_model=model, model_dir=tempfile.mkdtemp(),
        config=tf.estimator.RunConfig(tf_random_seed=1), **kwargs)
    before = [p for _, p in zip(range(2), estimator.predict(predict_fn))]
    estimator.train(input_fn, steps=steps)
    result = estimator.evaluate(input_fn, steps=ROWS // batch)
    after = [p for _, p in zip(range(2), estimator.predict(predict_fn))]
    names = [n for n in estimator.get_variable_names()
             if n.endswith(("/kernel", "/bias", "/gamma", "/beta", "/moving_mean",
                            "/moving_variance")) and not n.startswith("training")]
    if checkpoint_format not in ("saver", None):  # object-based checkpoints on the original
        names = []
    return {"predict_before": {k: v.tolist() for p in before[:1] for k, v in p.items()},
            "predict_after": [{k: v.tolist() for k, v in p.items()} for p in after],
            "eval": {k: float(v) for k, v in result.items()},
            "weights": {n: estimator.get_variable_value(n).tolist() for n in sorted(names)}}


def tf1_scenarios(tf):
    """TF 1.x code (graph mode; `tf` TF1's API or this package's v1 namespace): a model
    compiled with a `tf.train` optimizer and string metrics, through TF 1.x's
    `tf.keras.estimator.model_to_estimator` (name-based checkpoints by default)."""
    keras = tf.keras
    model = keras.Sequential([keras.layers.Dense(3, input_shape=(4,), name="hidden"),
                              keras.layers.Dense(1, name="out")])
    model.compile(tf.train.AdamOptimizer(0.05), "mse", metrics=["mae", "mse"])
    set_weights(model)
    return {"tf1_graph": run(tf, model, {"hidden_input": "x"}, "t", 5, checkpoint_format=None)}


def main():
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    if "--tf1" in sys.argv:  # the TF1 scenario, in TF 1.x's graph mode
        tf = tf.compat.v1
        tf.disable_v2_behavior()
        numbers = tf1_scenarios(tf)
    else:
        numbers = scenarios(tf, tf.keras)
    for name, value in numbers.items():
        print(json.dumps({name: value}))


if __name__ == "__main__":
    main()
