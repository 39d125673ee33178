"""The model of tests/test_xla_simulated_tpu.py, and the original's numbers for it.

`python tests/data/xla_reference_model.py` under TF 2.15 with tensorflow-estimator (the
original TPUEstimator, `use_tpu=False`, one CPU, the same global batch) prints the weights
after `STEPS` steps, the evaluation and the predictions that the test holds as constants.
"""
import numpy as np
import tensorflow as tf

GLOBAL_BATCH = 16
STEPS = 6
EVAL_STEPS = 2
LEARNING_RATE = 0.05
FEATURES = (np.arange(64 * 4, dtype=np.float32).reshape(64, 4) % 7 - 3.0) / 3.0
LABELS = (FEATURES @ np.array([[0.5], [-1.0], [0.25], [1.0]], np.float32) > 0).astype(np.float32)

v1 = tf.compat.v1


def input_fn(params):
    dataset = tf.data.Dataset.from_tensor_slices((FEATURES, LABELS))
    return dataset.repeat().batch(params["batch_size"], drop_remainder=True)


def predict_input_fn(params):
    return tf.data.Dataset.from_tensor_slices(FEATURES[:32]).batch(params["batch_size"],
                                                                  drop_remainder=True)


def logits_of(features):
    """Two dense layers from constant initial values (no randomness: XLA's differs)."""
    hidden_init = np.linspace(-0.5, 0.5, 4 * 8, dtype=np.float32).reshape(4, 8)
    with v1.variable_scope("model"):
        w1 = v1.get_variable("w1", initializer=hidden_init)
        b1 = v1.get_variable("b1", [8], initializer=v1.constant_initializer(0.1))
        w2 = v1.get_variable("w2", initializer=np.linspace(0.3, -0.3, 8, dtype=np.float32)
                             .reshape(8, 1))
    return tf.matmul(tf.nn.relu(tf.matmul(features, w1) + b1), w2)


def train_op_of(loss, cross_shard_optimizer):
    optimizer = v1.train.AdamOptimizer(LEARNING_RATE)
    if cross_shard_optimizer is not None:
        optimizer = cross_shard_optimizer(optimizer)
    return optimizer.minimize(loss, global_step=v1.train.get_global_step())


def metric_fn(labels, logits):
    return {"accuracy": v1.metrics.accuracy(labels, tf.cast(logits > 0, tf.float32)),
            "mean_logit": v1.metrics.mean(logits)}


def make_model_fn(spec_class, cross_shard_optimizer=None, logits_hook=None):
    """A TPUEstimator model_fn; `logits_hook(logits, features, mode)` may change the
    logits."""
    def model_fn(features, labels, mode, params):  # pylint: disable=unused-argument
        logits = logits_of(features)
        if logits_hook is not None:
            logits = logits_hook(logits, features, mode)
        if mode == "infer":
            return spec_class(mode, predictions={"logits": logits})
        loss = v1.losses.sigmoid_cross_entropy(labels, logits)
        if mode == "train":
            return spec_class(mode, loss=loss, train_op=train_op_of(loss, cross_shard_optimizer))
        return spec_class(mode, loss=loss, eval_metrics=(metric_fn, [labels, logits]))
    return model_fn


def main():
    import tempfile  # pylint: disable=import-outside-toplevel
    tpu = tf.compat.v1.estimator.tpu
    config = tpu.RunConfig(model_dir=tempfile.mkdtemp(),
                           tpu_config=tpu.TPUConfig(iterations_per_loop=3))
    estimator = tpu.TPUEstimator(make_model_fn(tpu.TPUEstimatorSpec), config=config,
                                 use_tpu=False, train_batch_size=GLOBAL_BATCH,
                                 eval_batch_size=GLOBAL_BATCH, predict_batch_size=GLOBAL_BATCH)
    estimator.train(input_fn, max_steps=STEPS)
    np.set_printoptions(precision=9, floatmode="unique", linewidth=100)
    for name in ("model/w1", "model/b1", "model/w2"):
        print(name, repr(estimator.get_variable_value(name).tolist()))
    print("eval", estimator.evaluate(input_fn, steps=EVAL_STEPS))
    print("predictions", [p["logits"].tolist() for p in estimator.predict(predict_input_fn)])


if __name__ == "__main__":
    main()
