"""What several test modules share: a TPUEstimator maker, the small regression model and data
of the checkpoint, fault-tolerance and multi-worker tests, and a model_dir's checkpoint steps.

Test modules import it as `helpers` (pytest puts tests/ on sys.path); the scripts the tests
start as subprocesses (`train_then_kill.py`, `multi_worker_main.py`) import it the same way
(their directory is their sys.path[0]), so a killed trainer and the test that resumes it build
exactly the same model.
"""
import importlib
import inspect

import numpy as np
import tensorflow as tf

import tpu_estimator_compat as tec

v1 = tf.compat.v1
_layers = importlib.import_module("tf_keras.api._v1.keras.__internal__.legacy.layers")

NUM_EXAMPLES = 160  # ten steps of a global batch of 16: the data repeats every 10 steps
FEATURES = (np.arange(NUM_EXAMPLES * 4, dtype=np.float32).reshape(NUM_EXAMPLES, 4) % 7 - 3) / 3
TARGETS = (FEATURES @ np.array([[1.0], [-2.0], [3.0], [0.5]], np.float32) + 0.1).astype(np.float32)
HIDDEN_KERNEL_INIT = (np.arange(12, dtype=np.float32).reshape(4, 3) - 6.0) / 10.0


def input_fn(params):
    """Deterministic, unshuffled, repeated (features [B, 4], targets [B, 1])."""
    dataset = tf.data.Dataset.from_tensor_slices((FEATURES, TARGETS))
    return dataset.repeat().batch(params["batch_size"], drop_remainder=True)


def model_fn(features, labels, mode, params):
    """dense(3, tanh) -> w [3, w_columns] -> sum over columns; fixed initializers.

    params: `optimizer` ('adam' default, or 'sgd'), `learning_rate` (0.05), `w_name` ('w'),
    `w_columns` (1), `extra` (False: adds `linear/extra` [1] to the predictions).
    """
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


def sgd_spec(mode, loss, learning_rate=0.1):
    """The spec most tests' model_fns end with: `loss` minimized by plain SGD in a
    CrossShardOptimizer (the replicas' mean gradient), advancing the global step."""
    optimizer = tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(learning_rate))
    train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
    return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def make_estimator(model_dir, strategy=None, model=model_fn, *, iterations_per_loop=2,
                   batch_size=8, input_mode=None, **kwargs):
    """A TPUEstimator of `model` in `model_dir` on `strategy`.

    `batch_size` is the train, eval and predict batch size unless one is given by name;
    `input_mode` is TPUConfig's `per_host_input_for_training`; of `kwargs`, TPUEstimator's
    arguments (`params`, `use_tpu`, `warm_start_from`, `export_to_tpu`...) go to it, the rest
    to RunConfig.
    """
    estimator_args = inspect.signature(tec.TPUEstimator).parameters
    estimator_kwargs = {name: kwargs.pop(name) for name in list(kwargs)
                        if name in estimator_args}
    for mode in ("train", "eval", "predict"):
        estimator_kwargs.setdefault(f"{mode}_batch_size", batch_size)
    tpu_config = tec.TPUConfig(iterations_per_loop=iterations_per_loop)
    if input_mode is not None:
        tpu_config = tec.TPUConfig(iterations_per_loop=iterations_per_loop,
                                   per_host_input_for_training=input_mode)
    config = tec.RunConfig(model_dir=str(model_dir), train_distribute=strategy,
                           tpu_config=tpu_config, **kwargs)
    return tec.TPUEstimator(model, config=config, **estimator_kwargs)


def checkpoint_steps(model_dir):
    """The global steps of the checkpoints model_dir's `checkpoint` file lists, ascending."""
    state = tf.train.get_checkpoint_state(str(model_dir))
    return sorted(int(path.rsplit("-", 1)[1]) for path in state.all_model_checkpoint_paths)
