"""One worker of the multi-worker tests (`test_multi_worker.py`): run it once per TF_CONFIG task.

    TF_CONFIG=... TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES=1 \
        python tests/multi_worker_main.py RUN MODEL_DIR RESULT_JSON [MAX_STEPS]

RUN is one of
  main     TPU semantics (PER_HOST_V2): train 6 steps, evaluate the finite eval set, export;
           then CPU/GPU semantics (use_tpu=False) train 6 steps in MODEL_DIR/cpu.
  forever  TPU semantics: train with a checkpoint every 2 steps until killed.
  resume   TPU semantics: train up to MAX_STEPS (resuming from MODEL_DIR's checkpoint).
  embeddings  TPU semantics: train a TPU embedding table (EmbeddingConfigSpec) on 1 to 3
           ids per example, 2 steps per loop, for EMBEDDING_STEPS steps.
  assigns  TPU semantics: BERT's route (tf.gradients, then CrossShardOptimizer.apply_gradients
           of an optimizer whose own apply_gradients assigns), ASSIGNS_STEPS steps.

No strategy is passed: TF_CONFIG (more than one worker) makes the estimator use a
MultiWorkerMirroredStrategy. Every host reads its own shard of the data, as in the original:
`dataset.shard(context.num_hosts, context.current_host)` with TPU semantics,
`input_context` with CPU/GPU semantics. What the worker saw goes to RESULT_JSON (outside
model_dir); the test process imports this module for the same model and data.
"""
import importlib
import json
import os
import sys

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import helpers  # noqa: E402  pylint: disable=wrong-import-position
import tpu_estimator_compat as tec  # noqa: E402  pylint: disable=wrong-import-position
import tpu_estimator_compat.v1 as tf1  # noqa: E402  pylint: disable=wrong-import-position
from helpers import FEATURES, TARGETS  # noqa: E402  pylint: disable=wrong-import-position
from tpu_estimator_compat.export import receivers  # noqa: E402  pylint: disable=wrong-import-position

v1 = tf.compat.v1
_layers = importlib.import_module("tf_keras.api._v1.keras.__internal__.legacy.layers")

NUM_EVAL_EXAMPLES = 40  # not a multiple of the eval batch: the last batch of a host is padded
GLOBAL_BATCH = 16
ITERATIONS_PER_LOOP = 2
MAIN_STEPS = 6


def _record_context(params):
    context = params["context"]
    _, index, total, consumed = context.current_input_fn_deployment()
    RECORD.setdefault("contexts", []).append({
        "batch_size": params["batch_size"], "num_hosts": context.num_hosts,
        "num_replicas": context.num_replicas, "current_host": context.current_host,
        "deployment": [index, total, consumed]})
    return context


def train_input_fn(params, input_context=None):
    """TPU semantics: shard by host (`params['context']`); CPU/GPU: by `input_context`."""
    dataset = tf.data.Dataset.from_tensor_slices((FEATURES, TARGETS))
    if "context" in params:
        context = _record_context(params)
        dataset = dataset.shard(context.num_hosts, context.current_host)
    elif input_context is not None:
        RECORD.setdefault("input_contexts", []).append(
            [input_context.num_input_pipelines, input_context.input_pipeline_id])
        dataset = dataset.shard(input_context.num_input_pipelines,
                                input_context.input_pipeline_id)
    return dataset.repeat().batch(params["batch_size"], drop_remainder=True)


def eval_input_fn(params):
    dataset = tf.data.Dataset.from_tensor_slices(
        (FEATURES[:NUM_EVAL_EXAMPLES], TARGETS[:NUM_EVAL_EXAMPLES]))
    context = params.get("context")
    if context is not None:
        dataset = dataset.shard(context.num_hosts, context.current_host)
    return dataset.batch(params["batch_size"])


def metric_fn(labels, predictions):
    return {"mae": v1.metrics.mean_absolute_error(labels, predictions),
            "mean_label": v1.metrics.mean(labels)}


def model_fn(features, labels, mode, params, config):
    """dense(3, tanh) -> w [3, 1]; MSE; Adam in CrossShardOptimizer (gradients averaged)."""
    with v1.variable_scope("linear"):
        hidden = _layers.dense(features, 3, activation=tf.nn.tanh, name="hidden",
                               kernel_initializer=v1.constant_initializer(0.1))
        weights = v1.get_variable("w", [3, 1], initializer=v1.constant_initializer(0.5))
        predictions = tf.matmul(hidden, weights)
    if mode == tec.ModeKeys.PREDICT:
        return tec.TPUEstimatorSpec(mode, predictions={"y": predictions})
    loss = v1.losses.mean_squared_error(labels, predictions)
    if mode == tec.ModeKeys.EVAL:
        return tec.TPUEstimatorSpec(mode, loss=loss,
                                    eval_metrics=(metric_fn, [labels, predictions]))
    optimizer = tec.CrossShardOptimizer(v1.train.AdamOptimizer(0.05))
    train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
    host_call = None
    if params.get("with_host_call"):
        host_call = (_host_call_fn(config.model_dir), [tf.reshape(loss, [1])])
    return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op, host_call=host_call)


def _host_call_fn(model_dir):
    def host_call_fn(loss):
        writer = tf.summary.create_file_writer(os.path.join(model_dir, "host_call"))
        with writer.as_default():
            tf.summary.scalar("host_call_loss", loss[0],
                              step=v1.train.get_or_create_global_step())
    return host_call_fn


def serving_input_receiver_fn():
    features = v1.placeholder(tf.float32, [None, 4], name="x")
    return receivers.TensorServingInputReceiver(features, {"x": features})


def make_estimator(model_dir, use_tpu=True, params=None, strategy=None, num_workers=2,
                   model=model_fn):
    """The workers pass no strategy (TF_CONFIG selects it); the test's one-process
    references pass a one-replica strategy and `num_workers=1`."""
    # CPU/GPU semantics: train_batch_size is what each input_fn call (each worker) batches.
    return helpers.make_estimator(
        model_dir, strategy, model, iterations_per_loop=ITERATIONS_PER_LOOP,
        input_mode=tec.InputPipelineConfig.PER_HOST_V2, params=params, use_tpu=use_tpu,
        train_batch_size=GLOBAL_BATCH if use_tpu else GLOBAL_BATCH // num_workers,
        eval_batch_size=GLOBAL_BATCH if use_tpu else None, predict_batch_size=None,
        save_checkpoints_steps=2, keep_checkpoint_max=3, save_summary_steps=2,
        log_step_count_steps=2)


EMBEDDING_STEPS = 4
_VOCABULARY = 50
_rng = np.random.RandomState(3)
_INITIAL_TABLE = _rng.randn(_VOCABULARY, 2).astype(np.float32)
_IDS = [list(_rng.randint(0, _VOCABULARY, size=_rng.randint(1, 4)))
        for _ in range(GLOBAL_BATCH * EMBEDDING_STEPS)]  # each worker's count varies
_X = _rng.randn(GLOBAL_BATCH * EMBEDDING_STEPS, 1).astype(np.float32)


def embedding_input_fn(params):
    """Batches of `{"cat": SparseTensor ids, "x"}`, `y`; each host reads every n-th batch."""
    context = params["context"]
    ids = tf.ragged.constant(_IDS, dtype=tf.int64)
    dataset = tf.data.Dataset.from_tensor_slices(({"cat": ids, "x": _X}, _X * 2.0 + 1.0))
    dataset = dataset.batch(params["batch_size"], drop_remainder=True)
    dataset = dataset.shard(context.num_hosts, context.current_host)
    return dataset.map(lambda features, y: (dict(features, cat=features["cat"].to_sparse()), y))


_EMBEDDING_COLUMN = tf1.tpu.experimental.embedding_column(
    tf.feature_column.categorical_column_with_identity("cat", _VOCABULARY), 2,
    initializer=v1.constant_initializer(_INITIAL_TABLE))


def embedding_model_fn(features, labels, mode, params):
    net = v1.feature_column.input_layer(
        features, [_EMBEDDING_COLUMN, tf.feature_column.numeric_column("x")])
    logits = _layers.dense(net, 1, name="out", kernel_initializer=v1.constant_initializer(0.5))
    loss = v1.losses.mean_squared_error(labels, logits)
    return helpers.sgd_spec(mode, loss)


def make_embedding_estimator(model_dir, strategy=None):
    spec = tf1.estimator.tpu.experimental.EmbeddingConfigSpec(
        feature_columns=[_EMBEDDING_COLUMN],
        optimization_parameters=tf1.tpu.experimental.AdagradParameters(0.5))
    config = tec.RunConfig(model_dir=model_dir, train_distribute=strategy,
                           tpu_config=tec.TPUConfig(iterations_per_loop=ITERATIONS_PER_LOOP))
    return tec.TPUEstimator(embedding_model_fn, config=config, train_batch_size=GLOBAL_BATCH,
                            embedding_config_spec=spec)


ASSIGNS_STEPS = 3
ASSIGNS_LEARNING_RATE = 0.1


class AssignsOptimizer(v1.train.Optimizer):
    """`apply_gradients` overridden with plain assigns (`v -= 0.1 * g`) and its own
    global-step increment, as BERT's AdamWeightDecayOptimizer."""

    def __init__(self):
        super().__init__(use_locking=False, name="Assigns")

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        updates = [v.assign(v - ASSIGNS_LEARNING_RATE * g) for g, v in grads_and_vars]
        with tf.control_dependencies(updates):
            return global_step.assign_add(1)


def assigns_model_fn(features, labels, mode, params):
    """loss = mean(features @ w), w [4, 1] from 0.5: d loss / d w is the batch's mean row."""
    del labels, params
    w = v1.get_variable("w", [4, 1], initializer=v1.constant_initializer(0.5))
    loss = tf.reduce_mean(tf.matmul(features, w))
    optimizer = tec.CrossShardOptimizer(AssignsOptimizer())
    train_op = optimizer.apply_gradients(zip(tf.gradients(loss, [w]), [w]),
                                         v1.train.get_global_step())
    return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


RECORD = {}


def main(run, model_dir, result_path, max_steps=None):
    RECORD.update(pid=os.getpid(), task=json.loads(os.environ["TF_CONFIG"])["task"])
    estimator = make_estimator(model_dir, params={"with_host_call": run == "main"})
    RECORD["is_chief"] = estimator.config.is_chief
    latest = estimator.latest_checkpoint()
    RECORD["start_checkpoint"] = latest

    def write_record():
        with open(result_path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(RECORD, f)
        os.replace(result_path + ".tmp", result_path)

    write_record()
    if run == "forever":
        estimator.train(train_input_fn, max_steps=10**9)
    elif run == "resume":
        estimator.train(train_input_fn, max_steps=int(max_steps))
    elif run == "embeddings":
        make_embedding_estimator(model_dir).train(embedding_input_fn, steps=EMBEDDING_STEPS)
    elif run == "assigns":
        make_estimator(model_dir, model=assigns_model_fn).train(train_input_fn,
                                                                steps=ASSIGNS_STEPS)
    else:
        estimator.train(train_input_fn, steps=MAIN_STEPS)
        results = estimator.evaluate(eval_input_fn)
        RECORD["eval"] = {k: float(v) for k, v in results.items()}
        export = estimator.export_saved_model(os.path.join(model_dir, "export"),
                                              serving_input_receiver_fn)
        RECORD["export"] = export.decode() if isinstance(export, bytes) else export
        cpu_estimator = make_estimator(os.path.join(model_dir, "cpu"), use_tpu=False)
        cpu_estimator.train(train_input_fn, steps=MAIN_STEPS)
    RECORD["final_step"] = int(estimator.get_variable_value("global_step"))
    write_record()


if __name__ == "__main__":
    main(*sys.argv[1:])
