"""A small TF1-style regression model, and a script that trains it until it is killed.

The test modules import `model_fn`, `input_fn`, `make_estimator` and the data from here, so the
process that is killed and the test process that resumes train exactly the same model.

    python tests/train_then_kill.py MODEL_DIR

trains with TPU semantics on a MirroredStrategy over 2 logical CPUs (a simulated 2-core TPU),
with a checkpoint after every loop of `ITERATIONS_PER_LOOP` steps and a `max_steps` it never
reaches: it runs until the parent sends SIGKILL.
"""
import importlib
import sys

import numpy as np
import tensorflow as tf

v1 = tf.compat.v1
_layers = importlib.import_module("tf_keras.api._v1.keras.__internal__.legacy.layers")

NUM_EXAMPLES = 160  # ten steps of a global batch of 16: the data repeats every 10 steps
FEATURES = (np.arange(NUM_EXAMPLES * 4, dtype=np.float32).reshape(NUM_EXAMPLES, 4) % 7 - 3) / 3
TARGETS = (FEATURES @ np.array([[1.0], [-2.0], [3.0], [0.5]], np.float32) + 0.1).astype(np.float32)
HIDDEN_KERNEL_INIT = (np.arange(12, dtype=np.float32).reshape(4, 3) - 6.0) / 10.0
VARIABLE_NAMES = {
    "adam": ["beta1_power", "beta2_power", "global_step",
             "linear/hidden/bias", "linear/hidden/bias/Adam", "linear/hidden/bias/Adam_1",
             "linear/hidden/kernel", "linear/hidden/kernel/Adam", "linear/hidden/kernel/Adam_1",
             "linear/w", "linear/w/Adam", "linear/w/Adam_1"],
    "sgd": ["global_step", "linear/hidden/bias", "linear/hidden/kernel", "linear/w"],
}
ITERATIONS_PER_LOOP = 2
BATCH_SIZE = 8


def input_fn(params):
    """Deterministic, unshuffled, repeated (features [B, 4], targets [B, 1])."""
    dataset = tf.data.Dataset.from_tensor_slices((FEATURES, TARGETS))
    return dataset.repeat().batch(params["batch_size"], drop_remainder=True)


def model_fn(features, labels, mode, params):
    """dense(3, tanh) -> w [3, w_columns] -> sum over columns; fixed initializers.

    params: `optimizer` ('adam' default, or 'sgd'), `learning_rate` (0.05), `w_name` ('w'),
    `w_columns` (1), `extra` (False: adds `linear/extra` [1] to the predictions).
    """
    import tpu_estimator_compat as tec  # pylint: disable=import-outside-toplevel
    with v1.variable_scope("linear"):
        hidden = _layers.dense(features, 3, activation=tf.nn.tanh, name="hidden",
                               kernel_initializer=v1.constant_initializer(HIDDEN_KERNEL_INIT))
        weights = v1.get_variable(params.get("w_name", "w"), [3, params.get("w_columns", 1)],
                                  initializer=v1.constant_initializer(0.5))
        predictions = tf.reduce_sum(tf.matmul(hidden, weights), axis=1, keepdims=True)
        if params.get("extra"):
            predictions += v1.get_variable("extra", [1], initializer=v1.zeros_initializer())
    loss = v1.losses.mean_squared_error(labels, predictions)
    learning_rate = params.get("learning_rate", 0.05)
    if params.get("optimizer", "adam") == "adam":
        optimizer = v1.train.AdamOptimizer(learning_rate)
    else:
        optimizer = v1.train.GradientDescentOptimizer(learning_rate)
    if params.get("use_tpu"):
        optimizer = tec.CrossShardOptimizer(optimizer)
    train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
    return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def w_sum_model_fn(features, labels, mode, params):
    """Predicts the sum of model_fn's `linear/w` for every example (restores only that)."""
    import tpu_estimator_compat as tec  # pylint: disable=import-outside-toplevel
    del labels, params
    with v1.variable_scope("linear"):
        weights = v1.get_variable("w", [3, 1])
    return tec.TPUEstimatorSpec(mode, predictions=tf.reduce_sum(weights) + 0 * features[:, 0])


def predict_input_fn(params):
    """The first 4 examples' features, one batch."""
    del params
    return tf.data.Dataset.from_tensor_slices(FEATURES[:4]).batch(4)


def make_estimator(model_dir, strategy=None, *, model=model_fn, params=None,
                   iterations_per_loop=ITERATIONS_PER_LOOP, use_tpu=True, batch_size=16,
                   eval_batch_size=None, warm_start_from=None, **config_kwargs):
    """A TPUEstimator of `model` in `model_dir` with PER_HOST_V2 input; `config_kwargs` go to
    RunConfig."""
    import tpu_estimator_compat as tec  # pylint: disable=import-outside-toplevel
    tpu_config = tec.TPUConfig(iterations_per_loop=iterations_per_loop,
                               per_host_input_for_training=tec.InputPipelineConfig.PER_HOST_V2)
    config = tec.RunConfig(model_dir=str(model_dir), train_distribute=strategy,
                           tpu_config=tpu_config, **config_kwargs)
    return tec.TPUEstimator(model, config=config, params=params, use_tpu=use_tpu,
                            train_batch_size=batch_size, eval_batch_size=eval_batch_size,
                            warm_start_from=warm_start_from)


def main(model_dir):
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    estimator = make_estimator(model_dir, strategy, batch_size=BATCH_SIZE,
                               save_checkpoints_steps=1, keep_checkpoint_max=3)
    estimator.train(input_fn, max_steps=10**9)


if __name__ == "__main__":
    main(sys.argv[1])
