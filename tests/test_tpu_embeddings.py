"""TPU embeddings (`TPUEstimator(embedding_config_spec=...)`): the original's numbers with
use_tpu=False, TPU semantics on the simulated TPU (activations in features, tables trained by
the spec's optimizer), checkpoints both ways, export, the public names and messages."""
import pathlib

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

import tpu_estimator_compat as tec
import tpu_estimator_compat.v1 as tf1
from tpu_estimator_compat.api import embedding_spec
from tpu_estimator_compat.engine import cluster_resolver
from tpu_estimator_compat.engine import embeddings
from tpu_estimator_compat.engine import step_graph
from tpu_estimator_compat.engine import tpu_embedding
import helpers

v1 = tf.compat.v1
TABLE = np.arange(10, dtype=np.float32).reshape(5, 2) / 10.0
TABLE_NAME = "input_layer/cat_embedding/embedding_weights"


def _columns():
    cat = tf.feature_column.categorical_column_with_identity("cat", 5)
    return [tf1.tpu.experimental.embedding_column(
        cat, 2, initializer=v1.constant_initializer(TABLE))]


def _make_model_fn(optimizer_fn, columns, seen=None):
    def model_fn(features, labels, mode, params):
        if seen is not None:
            seen.append((features["cat"].dtype, features["cat"].shape.as_list()))
        net = v1.feature_column.input_layer(
            features, columns + [tf.feature_column.numeric_column("x")])
        with v1.variable_scope("out"):
            kernel = v1.get_variable("kernel", [3, 1], initializer=v1.constant_initializer(0.5))
            bias = v1.get_variable("bias", [1], initializer=v1.zeros_initializer())
        logits = tf.matmul(net, kernel) + bias
        if mode == tec.ModeKeys.PREDICT:
            return tec.TPUEstimatorSpec(mode, predictions={"logits": logits})
        loss = v1.losses.mean_squared_error(labels, logits)
        train_op = optimizer_fn().minimize(loss, v1.train.get_global_step())
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)
    return model_fn


def _input_fn(ids, x, y):
    def input_fn(params):
        dataset = tf.data.Dataset.from_tensor_slices(({"cat": ids, "x": x}, y))
        return dataset.repeat().batch(params["batch_size"], drop_remainder=True)
    return input_fn


def _estimator(model_fn, model_dir, parameters, use_tpu, batch_size, columns=None,
               gradient_multiplier_fn=None):
    spec = tf1.estimator.tpu.experimental.EmbeddingConfigSpec(
        feature_columns=columns or _columns(), optimization_parameters=parameters,
        experimental_gradient_multiplier_fn=gradient_multiplier_fn)
    config = tec.RunConfig(model_dir=str(model_dir),
                           tpu_config=tec.TPUConfig(iterations_per_loop=1))
    return tec.TPUEstimator(model_fn, config=config, use_tpu=use_tpu, train_batch_size=batch_size,
                            predict_batch_size=batch_size, embedding_config_spec=spec)


def _values(estimator):
    return {name: estimator.get_variable_value(name) for name in estimator.get_variable_names()}


@pytest.fixture
def simulated_tpu(monkeypatch):
    monkeypatch.setenv(cluster_resolver.SIMULATED_TPU_CORES_ENV, "8")


# -- use_tpu=False: the original's variables and numbers -----------------------------------

CPU_IDS = np.array([[0, 1], [2, 2], [4, 3], [1, 0]], np.int64)
CPU_X = np.array([[1.], [2.], [3.], [4.]], np.float32)
CPU_Y = np.array([[1.], [0.], [1.], [0.]], np.float32)

# The original (TF 2.15.1, tensorflow-estimator 2.15, use_tpu=False), after 3 steps of batch 4.
ORIGINAL_CPU = {
    "sgd": {
        TABLE_NAME: [[-0.005050930194556713, 0.09358490258455276],
                     [0.19494907557964325, 0.2935848832130432],
                     [0.3484988510608673, 0.4481413662433624],
                     [0.5918473601341248, 0.6911007165908813],
                     [0.7918473482131958, 0.8911007046699524]],
        "out/bias": [-0.12552136182785034],
        "out/kernel": [[0.4401857256889343], [0.42772409319877625], [-0.12099891901016235]]},
    "adagrad": {
        TABLE_NAME: [[-0.09410402923822403, 0.006179190240800381],
                     [0.10589597374200821, 0.2061791867017746],
                     [0.2591131627559662, 0.35960516333580017],
                     [0.5269109606742859, 0.6271424293518066],
                     [0.7269109487533569, 0.8271424174308777]],
        TABLE_NAME + "/Adagrad": [[0.16229932010173798, 0.16212880611419678],
                                  [0.16229932010173798, 0.16212880611419678],
                                  [0.29368463158607483, 0.2926638722419739],
                                  [0.1303381621837616, 0.13025082647800446],
                                  [0.1303381621837616, 0.13025082647800446]],
        "out/bias": [-0.1798810362815857], "out/bias/Adagrad": [7.611953258514404],
        "out/kernel": [[0.3408088684082031], [0.3343793749809265], [0.3084770441055298]],
        "out/kernel/Adagrad": [[0.9887557029724121], [1.5786970853805542], [91.76866149902344]]},
}
MODEL_OPTIMIZERS = {"sgd": lambda: v1.train.GradientDescentOptimizer(0.1),
                    "adagrad": lambda: v1.train.AdagradOptimizer(0.1)}


@pytest.mark.slow  # trains or evaluates for several seconds
@pytest.mark.parametrize("optimizer", ["sgd", "adagrad"])
def test_cpu_tables_are_the_models_variables_with_the_originals_values(optimizer, tmp_path):
    """use_tpu=False: input_layer looks the ids up in `input_layer/cat_embedding/
    embedding_weights`, trained by the model's optimizer (the spec's SGD(0.5) is unused)."""
    seen = []
    estimator = _estimator(_make_model_fn(MODEL_OPTIMIZERS[optimizer], _columns(), seen),
                           tmp_path, tf1.tpu.experimental.StochasticGradientDescentParameters(0.5),
                           use_tpu=False, batch_size=4)
    estimator.train(_input_fn(CPU_IDS, CPU_X, CPU_Y), max_steps=3)
    values = _values(estimator)
    assert sorted(values) == sorted([*ORIGINAL_CPU[optimizer], "global_step"])
    for name, expected in ORIGINAL_CPU[optimizer].items():
        np.testing.assert_allclose(values[name], expected, rtol=1e-5, err_msg=name)
    assert seen[0] == (tf.int64, [4, 2])  # model_fn gets the ids


# -- TPU semantics on the simulated TPU -----------------------------------------------------

TPU_IDS = np.random.RandomState(0).randint(0, 5, size=(16, 2)).astype(np.int64)
TPU_X = np.random.RandomState(1).randn(16, 1).astype(np.float32)
TPU_Y = np.random.RandomState(2).randn(16, 1).astype(np.float32)
REPLICAS, DENSE_LR = 8, 0.1


def _tpu_reference(rule, steps=3, ids=None, combiner="mean", batches=None, table=TABLE):
    """TPU semantics in numpy: per replica (2 rows) a mean squared error; the dense weights
    get CrossShardOptimizer's mean gradient, each table row the gradient summed over every
    replica, updated by `rule(table, grad, rows, slots)`. `ids`: each example's ids, by
    default TPU_IDS without its zeros (the original's dense-to-sparse conversion), combined
    by `combiner` ('mean' or 'sum'); `batches`: each step's (ids, x, y) instead."""
    table, kernel, bias, slots = table.copy(), np.full((3, 1), 0.5), np.zeros(1), {}
    per_replica = len(TPU_IDS) // REPLICAS
    ids = [row[row != 0] for row in TPU_IDS] if ids is None else ids
    for ids, x, y in batches or [(ids, TPU_X, TPU_Y)] * steps:
        scale = [1 / len(i) if combiner == "mean" and len(i) else 1.0 for i in ids]
        activations = np.stack([table[i].sum(0) * s for i, s in zip(ids, scale)])
        net = np.concatenate([activations, x], 1)
        d_logits = 2 * (net @ kernel + bias - y) / per_replica
        d_activations = d_logits @ kernel[:2].T
        grad = np.zeros_like(table)
        for row, row_ids in enumerate(ids):
            for i in row_ids:
                grad[i] += d_activations[row] * scale[row]
        rows = np.unique(np.concatenate(ids))
        kernel = kernel - DENSE_LR * net.T @ d_logits / REPLICAS
        bias = bias - DENSE_LR * d_logits.sum(0) / REPLICAS
        table = rule(table, grad, rows, slots)
    return table, kernel, bias, slots


def _sgd(table, grad, rows, slots):
    del slots
    table = table.copy()
    table[rows] -= 0.5 * grad[rows]
    return table


def _adagrad(table, grad, rows, slots):
    accumulator = slots.setdefault("Adagrad", np.full_like(table, 0.1))
    table = table.copy()
    accumulator[rows] += grad[rows] ** 2
    table[rows] -= 0.5 * grad[rows] / np.sqrt(accumulator[rows])
    return table


def _adam(table, grad, rows, slots):
    m = slots.setdefault("Adam/m", np.zeros_like(table))
    v = slots.setdefault("Adam/v", np.zeros_like(table))
    table = table.copy()
    m[rows] = 0.9 * m[rows] + 0.1 * grad[rows]
    v[rows] = 0.999 * v[rows] + 0.001 * grad[rows] ** 2
    table[rows] -= 0.5 * m[rows] / np.sqrt(v[rows] + 1e-8 ** 2)
    return table


def _ftrl(table, grad, rows, slots):
    """TensorFlow's FTRL-proximal (learning_rate_power -0.5, l1 0.01, l2 0.1)."""
    accumulator = slots.setdefault("Ftrl", np.full_like(table, 0.1))
    linear = slots.setdefault("Ftrl_1", np.zeros_like(table))
    table, g = table.copy(), grad[rows]
    new_accumulator = accumulator[rows] + g ** 2
    linear[rows] += g - (np.sqrt(new_accumulator) - np.sqrt(accumulator[rows])) / 0.5 * table[rows]
    accumulator[rows] = new_accumulator
    quadratic = np.sqrt(new_accumulator) / 0.5 + 2 * 0.1
    table[rows] = np.where(np.abs(linear[rows]) > 0.01,
                           (np.sign(linear[rows]) * 0.01 - linear[rows]) / quadratic, 0.0)
    return table


def _sgd_doubled_and_clipped(table, grad, rows, slots):
    """SGD(0.5) of gradients times 2 (experimental_gradient_multiplier_fn), rows clipped to
    at most 0.6 (clip_weight_max)."""
    table = _sgd(table, 2 * grad, rows, slots)
    table[rows] = np.minimum(table[rows], 0.6)
    return table


@pytest.mark.slow  # trains or evaluates for several seconds
@pytest.mark.parametrize("parameters, rule, multiplier_fn", [
    (tf1.tpu.experimental.StochasticGradientDescentParameters(0.5), _sgd, None),
    (tf1.tpu.experimental.AdagradParameters(0.5), _adagrad, None),
    (tf1.tpu.experimental.AdamParameters(0.5), _adam, None),
    (tf1.tpu.experimental.FtrlParameters(0.5, l1_regularization_strength=0.01,
                                         l2_regularization_strength=0.1), _ftrl, None),
    (tf1.tpu.experimental.StochasticGradientDescentParameters(0.5, clip_weight_max=0.6),
     _sgd_doubled_and_clipped, lambda global_step: 2.0),
], ids=["sgd", "adagrad", "adam", "ftrl", "sgd_multiplied_clipped"])
def test_simulated_tpu_trains_tables_with_the_spec_optimizer(parameters, rule, multiplier_fn,
                                                              simulated_tpu, tmp_path):
    seen = []
    model_fn = _make_model_fn(
        lambda: tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(DENSE_LR)),
        _columns(), seen)
    estimator = _estimator(model_fn, tmp_path, parameters, use_tpu=True, batch_size=16,
                           gradient_multiplier_fn=multiplier_fn)
    estimator.train(_input_fn(TPU_IDS, TPU_X, TPU_Y), max_steps=3)
    table, kernel, bias, slots = _tpu_reference(rule)
    values = _values(estimator)
    assert sorted(values) == sorted(
        ["global_step", "out/bias", "out/kernel", TABLE_NAME]
        + [f"{TABLE_NAME}/{slot}" for slot in slots])
    np.testing.assert_allclose(values[TABLE_NAME], table, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(values["out/kernel"], kernel, rtol=1e-5)
    np.testing.assert_allclose(values["out/bias"], bias, rtol=1e-5, atol=1e-7)
    for slot, expected in slots.items():
        np.testing.assert_allclose(values[f"{TABLE_NAME}/{slot}"], expected, rtol=1e-5,
                                   atol=1e-9)
    assert seen[0] == (tf.float32, [2, 2])  # model_fn gets the activations, per replica


@pytest.mark.slow  # trains for several seconds
def test_simulated_tpu_takes_variable_length_sparse_ids(simulated_tpu, tmp_path):
    """Ids as a `SparseTensor` whose rows vary in length (a `VarLenFeature` parsed and
    batched: dense shape [batch, None]) went to the original's embedding engine, not its
    infeed, so no static shape was required: the same numbers as the dense ids."""
    def input_fn(params):
        dataset = tf.data.Dataset.from_tensor_slices(({"cat": TPU_IDS, "x": TPU_X}, TPU_Y))
        dataset = dataset.repeat().batch(params["batch_size"], drop_remainder=True)
        return dataset.map(lambda features, y: (dict(features, cat=tf.ragged.boolean_mask(
            features["cat"], tf.not_equal(features["cat"], 0)).to_sparse()), y))

    model_fn = _make_model_fn(
        lambda: tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(DENSE_LR)), _columns())
    estimator = _estimator(model_fn, tmp_path, tf1.tpu.experimental.
                           StochasticGradientDescentParameters(0.5), use_tpu=True, batch_size=16)
    estimator.train(input_fn, max_steps=3)
    table, kernel, _, _ = _tpu_reference(_sgd)
    values = _values(estimator)
    np.testing.assert_allclose(values[TABLE_NAME], table, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(values["out/kernel"], kernel, rtol=1e-5)


@pytest.mark.slow  # trains for several seconds
@pytest.mark.parametrize("ids_kind", ["sparse", "one_per_example"])
def test_simulated_tpu_combiner_none_as_the_originals_embedding_engine(ids_kind, simulated_tpu,
                                                                       tmp_path):
    """combiner=None: the original's engine summed a SparseTensor's ids and took dense ids
    one sample each (id 0 looked up like any other id)."""
    if ids_kind == "sparse":
        ids = [row[row != 0] for row in TPU_IDS]
        to_feature = lambda cat: tf.ragged.boolean_mask(  # noqa: E731
            cat, tf.not_equal(cat, 0)).to_sparse()
        cat_values = TPU_IDS
    else:
        ids = [row[:1] for row in TPU_IDS]
        to_feature = lambda cat: cat  # noqa: E731
        cat_values = TPU_IDS[:, 0]

    def input_fn(params):
        dataset = tf.data.Dataset.from_tensor_slices(({"cat": cat_values, "x": TPU_X}, TPU_Y))
        dataset = dataset.repeat().batch(params["batch_size"], drop_remainder=True)
        return dataset.map(lambda features, y: (dict(features, cat=to_feature(features["cat"])),
                                                y))

    columns = [tf1.tpu.experimental.embedding_column(
        tf.feature_column.categorical_column_with_identity("cat", 5), 2, combiner=None,
        initializer=v1.constant_initializer(TABLE))]
    model_fn = _make_model_fn(
        lambda: tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(DENSE_LR)), columns)
    estimator = _estimator(model_fn, tmp_path, tf1.tpu.experimental.
                           StochasticGradientDescentParameters(0.5), use_tpu=True,
                           batch_size=16, columns=columns)
    estimator.train(input_fn, max_steps=3)
    table, kernel, _, _ = _tpu_reference(_sgd, ids=ids, combiner="sum")
    values = _values(estimator)
    np.testing.assert_allclose(values[TABLE_NAME], table, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(values["out/kernel"], kernel, rtol=1e-5)
    if ids_kind == "one_per_example":
        assert not np.allclose(table[0], TABLE[0])  # id 0 was looked up and trained


def test_combiner_none_dense_ids_that_are_not_one_per_example_name_the_fix():
    with pytest.raises(ValueError, match=r"shape \(4, 2\) .* combiner=None, which looks up "
                                         r"one id per example: give it ids of shape \[batch\]"):
        embeddings.enqueued_ids("cat", tf.constant(CPU_IDS), None, None)
    with pytest.raises(ValueError, match="Found weights w for weighted_categorical_column, "
                                         "which is not compatible with sparse feature cat "
                                         "enqueued as dense tensor"):
        embeddings.enqueued_ids("cat", tf.constant(CPU_IDS[:, 0]), None, "w")
    one_column = embeddings.enqueued_ids("cat", tf.constant(CPU_IDS[:, :1]), None, None)
    assert one_column.shape.as_list() == [4]


@pytest.mark.slow  # trains for several seconds
def test_simulated_tpu_names_tables_of_keras_dense_features_as_replica_0(simulated_tpu,
                                                                        tmp_path):
    """`tf.keras.layers.DenseFeatures(columns)` unnamed in model_fn (tensorflow/tpu's
    embedding sample): Keras numbers the layers of each replica's call on in the one graph
    (`dense_features_1`...), where TF1 traced one replica: the table keeps replica 0's name."""
    import tpu_estimator_compat.v1 as tf1_namespace  # noqa: PLC0415

    def model_fn(features, labels, mode, params):
        net = tf1_namespace.keras.layers.DenseFeatures(
            _columns() + [tf.feature_column.numeric_column("x")])(features)
        with v1.variable_scope("out"):
            kernel = v1.get_variable("kernel", [3, 1], initializer=v1.constant_initializer(0.5))
            bias = v1.get_variable("bias", [1], initializer=v1.zeros_initializer())
        loss = v1.losses.mean_squared_error(labels, tf.matmul(net, kernel) + bias)
        return helpers.sgd_spec(mode, loss, DENSE_LR)

    estimator = _estimator(model_fn, tmp_path, tf1.tpu.experimental.
                           StochasticGradientDescentParameters(0.5), use_tpu=True, batch_size=16)
    estimator.train(_input_fn(TPU_IDS, TPU_X, TPU_Y), max_steps=3)
    table, kernel, _, _ = _tpu_reference(_sgd)
    values = _values(estimator)
    assert sorted(values) == ["dense_features/cat_embedding/embedding_weights",
                              "global_step", "out/bias", "out/kernel"]
    np.testing.assert_allclose(values["dense_features/cat_embedding/embedding_weights"], table,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(values["out/kernel"], kernel, rtol=1e-5)


@pytest.mark.slow  # trains for several seconds
def test_simulated_tpu_sums_table_gradients_whose_rows_vary_from_step_to_step(simulated_tpu,
                                                                             tmp_path):
    """Each step's ids (a `SparseTensor` of 1 to 3 ids per example) give each replica a
    different number of gradient rows, changing from step to step inside one device loop:
    TensorFlow's collective all-gather of them failed there ("Shape mismatch in the
    collective instance"; tensorflow/tpu's embedding sample)."""
    rng = np.random.RandomState(3)
    steps, vocabulary = 8, 50
    initial_table = rng.randn(vocabulary, 2).astype(np.float32)
    ids = [rng.randint(0, vocabulary, size=rng.randint(1, 4)) for _ in range(16 * steps)]
    x = rng.randn(16 * steps, 1).astype(np.float32)
    y = rng.randn(16 * steps, 1).astype(np.float32)

    def input_fn(params):
        ragged = tf.ragged.constant([list(i) for i in ids], dtype=tf.int64)
        dataset = tf.data.Dataset.from_tensor_slices(({"cat": ragged, "x": x}, y))
        return dataset.batch(params["batch_size"], drop_remainder=True).map(
            lambda features, y: (dict(features, cat=features["cat"].to_sparse()), y))

    columns = [tf1.tpu.experimental.embedding_column(
        tf.feature_column.categorical_column_with_identity("cat", vocabulary), 2,
        initializer=v1.constant_initializer(initial_table))]
    model_fn = _make_model_fn(
        lambda: tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(DENSE_LR)), columns)
    spec = tf1.estimator.tpu.experimental.EmbeddingConfigSpec(
        feature_columns=columns,
        optimization_parameters=tf1.tpu.experimental.StochasticGradientDescentParameters(0.5))
    estimator = tec.TPUEstimator(
        model_fn, use_tpu=True, train_batch_size=16, embedding_config_spec=spec,
        config=tec.RunConfig(model_dir=str(tmp_path),
                             tpu_config=tec.TPUConfig(iterations_per_loop=steps)))
    estimator.train(input_fn, max_steps=steps)
    batches = [(ids[16 * s:16 * (s + 1)], x[16 * s:16 * (s + 1)], y[16 * s:16 * (s + 1)])
               for s in range(steps)]
    table, kernel, bias, _ = _tpu_reference(_sgd, batches=batches, table=initial_table)
    values = _values(estimator)
    np.testing.assert_allclose(values[TABLE_NAME], table, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(values["out/kernel"], kernel, rtol=1e-5)
    np.testing.assert_allclose(values["out/bias"], bias, rtol=1e-5, atol=1e-7)


@pytest.mark.slow  # trains and evaluates for several seconds
def test_simulated_tpu_evaluates_variable_length_ids_to_the_end_of_the_input(simulated_tpu,
                                                                             tmp_path):
    """Evaluation pads the last partial batch and adds stop batches: a `SparseTensor` of ids
    gets rows without ids (zero activations, masked out), every real example counted once."""
    rng = np.random.RandomState(4)
    ids = [rng.randint(0, 5, size=rng.randint(1, 4)) for _ in range(20)]
    x, y = rng.randn(20, 1).astype(np.float32), rng.randn(20, 1).astype(np.float32)

    def input_fn(params):
        ragged = tf.ragged.constant([list(i) for i in ids], dtype=tf.int64)
        dataset = tf.data.Dataset.from_tensor_slices(({"cat": ragged, "x": x}, y))
        return dataset.batch(params["batch_size"]).map(  # a last batch of 4
            lambda features, y: (dict(features, cat=features["cat"].to_sparse()), y))

    def model_fn(features, labels, mode, params):
        net = v1.feature_column.input_layer(
            features, _columns() + [tf.feature_column.numeric_column("x")])
        kernel = v1.get_variable("kernel", [3, 1], initializer=v1.constant_initializer(0.5))
        logits = tf.matmul(net, kernel)
        loss = v1.losses.mean_squared_error(labels, logits)
        return tec.TPUEstimatorSpec(mode, loss=loss, eval_metrics=(
            lambda labels, logits, x: {"mse": v1.metrics.mean_squared_error(labels, logits),
                                       "mean_x": v1.metrics.mean(x)},
            [labels, logits, features["x"]]))

    spec = tf1.estimator.tpu.experimental.EmbeddingConfigSpec(
        feature_columns=_columns(),
        optimization_parameters=tf1.tpu.experimental.StochasticGradientDescentParameters(0.5))
    estimator = tec.TPUEstimator(model_fn, config=tec.RunConfig(model_dir=str(tmp_path)),
                                 use_tpu=True, train_batch_size=16, eval_batch_size=16,
                                 embedding_config_spec=spec)
    metrics = estimator.evaluate(input_fn)
    activations = np.stack([TABLE[i].mean(0) for i in ids])
    logits = np.concatenate([activations, x], 1) @ np.full((3, 1), 0.5)
    np.testing.assert_allclose(metrics["mse"], ((logits - y) ** 2).mean(), rtol=1e-5)
    np.testing.assert_allclose(metrics["mean_x"], x.mean(), rtol=1e-5)  # 20 rows, no padding


# -- checkpoints both ways, export ------------------------------------------------------------

@pytest.mark.slow  # trains or evaluates for several seconds
def test_checkpoints_move_between_cpu_and_simulated_tpu(simulated_tpu, tmp_path):
    """The table has the same name both ways: training continues from the other's values."""
    model_fn = _make_model_fn(
        lambda: tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(DENSE_LR)), _columns())
    parameters = tf1.tpu.experimental.StochasticGradientDescentParameters(0.5)
    input_fn = _input_fn(TPU_IDS, TPU_X, TPU_Y)
    on_tpu = _estimator(model_fn, tmp_path, parameters, use_tpu=True, batch_size=16)
    on_tpu.train(input_fn, max_steps=1)
    after_tpu = on_tpu.get_variable_value(TABLE_NAME)
    on_cpu = _estimator(model_fn, tmp_path, parameters, use_tpu=False, batch_size=16)
    on_cpu.train(input_fn, max_steps=2)  # restores the TPU-trained table, trains it further
    after_cpu = on_cpu.get_variable_value(TABLE_NAME)
    rows = np.unique(TPU_IDS)  # the CPU lookup uses id 0 too
    assert not np.allclose(after_cpu[rows], after_tpu[rows])
    on_tpu.train(input_fn, max_steps=3)
    assert on_tpu.get_variable_value("global_step") == 3
    assert not np.allclose(on_tpu.get_variable_value(TABLE_NAME), after_cpu)
    # What the CPU step did to the table started from the TPU's values: one SGD(0.1) step.
    assert np.abs(after_cpu - after_tpu).max() < 0.2


@pytest.mark.slow  # trains or evaluates for several seconds
def test_export_serves_the_lookups_on_cpu(simulated_tpu, tmp_path):
    model_fn = _make_model_fn(
        lambda: tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(DENSE_LR)), _columns())
    estimator = _estimator(model_fn, tmp_path / "model",
                           tf1.tpu.experimental.AdagradParameters(0.5), use_tpu=True,
                           batch_size=16)
    estimator.train(_input_fn(TPU_IDS, TPU_X, TPU_Y), max_steps=2)
    values = _values(estimator)
    table, kernel, bias = values[TABLE_NAME], values["out/kernel"], values["out/bias"]
    # predict with TPU semantics: the activations of the ids (a dense tensor's zeros dropped)
    predictions = np.array([p["logits"] for p in estimator.predict(
        lambda params: tf.data.Dataset.from_tensor_slices({"cat": TPU_IDS, "x": TPU_X}).batch(
            params["batch_size"], drop_remainder=True))])
    activations = np.stack([table[row[row != 0]].mean(0) if (row != 0).any() else np.zeros(2)
                            for row in TPU_IDS])
    np.testing.assert_allclose(predictions, np.concatenate([activations, TPU_X], 1) @ kernel
                               + bias, rtol=1e-5)
    receiver_fn = tf1.estimator.export.build_raw_serving_input_receiver_fn(
        {"cat": tf.TensorSpec([None, 2], tf.int64), "x": tf.TensorSpec([None, 1], tf.float32)})
    export_dir = estimator.export_saved_model(str(tmp_path / "export"), receiver_fn)
    serve = tf.saved_model.load(export_dir, tags=["serve"]).signatures["serving_default"]
    logits = serve(cat=tf.constant(CPU_IDS), x=tf.constant(CPU_X))["logits"].numpy()
    # The CPU graph: input_layer's lookup (mean of the ids' rows; id 0 is an id there).
    expected = np.concatenate([table[CPU_IDS].mean(1), CPU_X], 1) @ kernel + bias
    np.testing.assert_allclose(logits, expected, rtol=1e-5)
    # The TPU MetaGraph looks the ids up on the host, as the original's TPU inference did.
    saved_model = saved_model_pb2.SavedModel.FromString(
        (pathlib.Path(export_dir.decode() if isinstance(export_dir, bytes) else export_dir)
         / "saved_model.pb").read_bytes())
    tpu_graph = next(m for m in saved_model.meta_graphs if "tpu" in m.meta_info_def.tags)
    outside = [node.op for function in tpu_graph.graph_def.library.function
               for node in function.node_def if "_xla_outside_compilation" in node.attr]
    assert any("Gather" in op or "SparseSegment" in op for op in outside), outside


# -- bad input: the original's messages -----------------------------------------------------

@pytest.mark.slow  # trains or evaluates for several seconds
def test_model_fn_that_does_not_use_the_columns_on_tpu(simulated_tpu, tmp_path):
    def model_fn(features, labels, mode, params):
        del features, params
        weight = v1.get_variable("w", [1], initializer=v1.zeros_initializer())
        loss = tf.reduce_mean(tf.square(labels - weight))
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=tec.CrossShardOptimizer(
            v1.train.GradientDescentOptimizer(0.1)).minimize(loss, v1.train.get_global_step()))
    estimator = _estimator(model_fn, tmp_path,
                           tf1.tpu.experimental.StochasticGradientDescentParameters(0.1),
                           use_tpu=True, batch_size=16)
    with pytest.raises(RuntimeError, match="Embedding feature column did not capture any thing. "
                                           "Make sure the feature columns passed to TPUEstimator "
                                           "constructor is properly used in model_fn."):
        estimator.train(_input_fn(TPU_IDS, TPU_X, TPU_Y), max_steps=1)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(), ValueError, "Exactly one of `feature_columns` and the pair `feature_to_config_dict` "
                         "and `table_to_config_dict` must be be specified."),
    (dict(feature_columns="columns", partition_strategy="x"), ValueError,
     'Invalid partition_strategy x. Must be one of "mod" or "div".'),
    (dict(feature_columns="columns", optimization_parameters=v1.train.AdamOptimizer()),
     ValueError, "optimization_parameters must be an instance of type"),
    (dict(feature_columns=[tf.feature_column.categorical_column_with_identity("c", 3)],
          optimization_parameters=embedding_spec.AdagradParameters(0.1)),
     TypeError, "All feature columns must be supported types in"),
    (dict(feature_to_config_dict={"a": 1}, table_to_config_dict={"t": 1}), ValueError,
     "describe the tables with feature_columns"),
])
def test_embedding_config_spec_validation(kwargs, error, message):
    if kwargs.get("feature_columns") == "columns":
        kwargs["feature_columns"] = _columns()
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        tf1.estimator.tpu.experimental.EmbeddingConfigSpec(**kwargs)


@pytest.mark.parametrize("make, message", [
    (lambda: tf1.tpu.experimental.AdagradParameters(0.1, initial_accumulator=0),
     "Adagrad initial_accumulator must be greater than zero. Received: 0."),
    (lambda: tf1.tpu.experimental.AdamParameters(0.1, beta1=1.0),
     "beta1 must be between 0. and 1; got 1.0."),
    (lambda: tf1.tpu.experimental.AdamParameters(0.1, use_gradient_accumulation=False,
                                                 lazy_adam=False),
     "When disabling Lazy Adam, gradient accumulation must be used."),
    (lambda: tf1.tpu.experimental.FtrlParameters(0.1, learning_rate_power=0.5),
     "learning_rate_power must be less than or equal to 0. got 0.5."),
    (lambda: tf1.tpu.experimental.StochasticGradientDescentParameters(
        0.1, use_gradient_accumulation=False, clip_gradient_max=1.0),
     "When using gradient clipping limits, gradient  accumulation must be enabled."),
])
def test_optimization_parameters_validation(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_estimator_checks_input_mode_and_mod_sharding(tmp_path):
    spec = embedding_spec.EmbeddingConfigSpec(
        feature_columns=_columns(), partition_strategy="mod",
        optimization_parameters=embedding_spec.AdagradParameters(0.1))
    model_fn = _make_model_fn(MODEL_OPTIMIZERS["sgd"], _columns())
    with pytest.raises(ValueError, match="Only PER_HOST_V1 and PER_HOST_V2 is supported when "
                                         "using TPU Embedding; got 1."):
        tec.TPUEstimator(model_fn, config=tec.RunConfig(
            model_dir=str(tmp_path), tpu_config=tec.TPUConfig(
                per_host_input_for_training=tec.InputPipelineConfig.PER_SHARD_V1)),
            train_batch_size=8, embedding_config_spec=spec)
    with pytest.raises(ValueError, match="Mod sharding of embedding tables not supported on CPU."):
        tec.TPUEstimator(model_fn, config=tec.RunConfig(model_dir=str(tmp_path)), use_tpu=False,
                         train_batch_size=8, embedding_config_spec=spec)


@pytest.mark.parametrize("path", [
    "estimator.tpu.experimental.EmbeddingConfigSpec",
    "compat.v1.estimator.tpu.experimental.EmbeddingConfigSpec",
    "contrib.tpu.experimental.EmbeddingConfigSpec",
    "contrib.tpu.experimental.AdagradParameters",
    "tpu.experimental.AdagradParameters", "tpu.experimental.AdamParameters",
    "tpu.experimental.FtrlParameters", "tpu.experimental.StochasticGradientDescentParameters",
    "python.estimator.tpu._tpu_estimator_embedding.EmbeddingConfigSpec",
    "python.estimator.tpu.tpu_estimator.AdamParameters",
    "python.tpu.tpu_embedding.AdagradParameters",
])
def test_public_names(path):
    value = tf1
    for part in path.split("."):
        value = getattr(value, part)
    assert value is getattr(embedding_spec, path.rpartition(".")[2])
    assert tf1.tpu.experimental.embedding_column is tf.compat.v1.tpu.experimental.embedding_column


# -- on a TPU: TensorFlow 2's TPUEmbedding ------------------------------------------------------

def test_tpu_embedding_configuration_for_a_tpu():
    a, b, c = (tf.feature_column.categorical_column_with_identity(key, 7) for key in "abc")
    columns = tf1.tpu.experimental.shared_embedding_columns([a, b], 3, combiner=None) + [
        tf1.tpu.experimental.embedding_column(c, 2, learning_rate_fn=lambda step: 0.25)]
    parameters = tf1.tpu.experimental.AdamParameters(
        0.5, beta1=0.8, epsilon=1e-6, lazy_adam=False, clip_gradient_max=2.0)
    spec = embedding_spec.EmbeddingConfigSpec(feature_columns=columns,
                                              optimization_parameters=parameters)
    tables = {key: table for key, (table, _) in
              embeddings.TpuEmbeddings(spec, store=None).features.items()}
    configs = tpu_embedding.feature_config(tables, parameters, global_step=tf.constant(3))
    assert sorted(configs) == ["a", "b", "c"]
    assert configs["a"].table is configs["b"].table  # one shared table
    shared, single = configs["a"].table, configs["c"].table
    assert (shared.vocabulary_size, shared.dim, shared.combiner, shared.optimizer) == (
        7, 3, "sum", None)  # combiner=None: the original's engine summed
    assert (single.vocabulary_size, single.dim, single.combiner, single.name) == (
        7, 2, "mean", "c")
    assert single.optimizer.learning_rate() == 0.25  # the column's learning_rate_fn
    optimizer = tpu_embedding.tpu_optimizer(parameters)
    assert isinstance(optimizer, tf.tpu.experimental.embedding.Adam)
    assert (optimizer.learning_rate, optimizer.beta_1, optimizer.epsilon, optimizer.lazy_adam,
            optimizer.clip_gradient_max) == (0.5, 0.8, 1e-6, False, 2.0)
    for kind, expected in [(tf1.tpu.experimental.AdagradParameters(0.1, 0.3), "Adagrad"),
                           (tf1.tpu.experimental.FtrlParameters(0.1, beta=0.5), "FTRL"),
                           (tf1.tpu.experimental.StochasticGradientDescentParameters(0.1), "SGD")]:
        assert type(tpu_embedding.tpu_optimizer(kind)).__name__ == expected
    embedding = tpu_embedding.create(tf.distribute.get_strategy(), tables, parameters,
                                     tf.constant(0))
    assert isinstance(embedding, tf.tpu.experimental.embedding.TPUEmbedding)


class _StandInTPUEmbedding:
    """Stands in for `tf.tpu.experimental.embedding.TPUEmbedding` on the simulated TPU: the
    engine's calls are recorded; lookups are ordinary, gradients are not applied."""

    def __init__(self, strategy, tables_by_feature, parameters, global_step):
        del parameters, global_step
        self.strategy, self.tables_by_feature = strategy, tables_by_feature
        self.calls, self._ids = [], None

    def build(self, per_replica_batch_size):
        self.calls.append(("build", per_replica_batch_size))
        with self.strategy.scope():
            self._variables = {table.key: {
                "parameters": tf.Variable(TABLE), "accumulators": tf.Variable(TABLE * 0 + 0.1)}
                for table in self.tables_by_feature.values()}

    def enqueue(self, ids, weights, training):
        self.calls.append(("enqueue", sorted(ids), weights, training))
        self._ids = ids

    def dequeue(self):
        # outside_compilation: the TPU's embedding engine, not its XLA program, looks up (the
        # simulated TPU compiles the step with XLA, which has no sparse ops)
        replica = step_graph.current_replica()
        return {key: tf.compat.v1.tpu.outside_compilation(
            tf.nn.safe_embedding_lookup_sparse, self._variables[table.key]["parameters"],
            self.strategy.experimental_local_results(self._ids[key])[replica])
            for key, table in self.tables_by_feature.items()}

    def apply_gradients(self, gradients):
        self.calls.append(("apply_gradients", {k: g.shape.as_list() for k, g in gradients.items()}))
        return tf.no_op()

    def _retrieve_variables(self):
        self.calls.append("retrieve")

    def _load_variables(self):
        self.calls.append("load")


@pytest.mark.slow  # trains or evaluates for several seconds
def test_tpu_embedding_driven_by_the_engine(simulated_tpu, monkeypatch, tmp_path):
    """On a TPU: ids enqueued before the replicas, activations dequeued into features,
    gradients sent, the host's tables saved under the original's names (retrieved first) and
    loaded after a restore (the TPUEmbedding replaced by a stand-in, the TPU by 8 CPUs)."""
    stand_ins = []
    monkeypatch.setattr(tpu_embedding, "runs_on_tpu", lambda strategy: True)
    monkeypatch.setattr(tpu_embedding.TpuEmbeddingOnTpu, "make_embedding", staticmethod(
        lambda *args: stand_ins.append(_StandInTPUEmbedding(*args)) or stand_ins[-1]))
    seen = []
    model_fn = _make_model_fn(
        lambda: tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(DENSE_LR)),
        _columns(), seen)
    estimator = _estimator(model_fn, tmp_path, tf1.tpu.experimental.AdagradParameters(0.5),
                           use_tpu=True, batch_size=16)
    estimator.train(_input_fn(TPU_IDS, TPU_X, TPU_Y), max_steps=2)
    calls = stand_ins[0].calls
    assert calls[0] == ("build", 2)
    assert ("enqueue", ["cat"], {"cat": None}, True) in calls
    assert ("apply_gradients", {"cat": [2, 2]}) in calls
    assert "retrieve" in calls  # before the checkpoint was written
    assert seen[0] == (tf.float32, [2, 2])
    values = _values(estimator)
    assert {TABLE_NAME, TABLE_NAME + "/Adagrad"} <= set(values)
    np.testing.assert_allclose(values[TABLE_NAME], TABLE)  # the stand-in applies nothing
    predictions = list(_estimator(model_fn, tmp_path, tf1.tpu.experimental.AdagradParameters(
        0.5), use_tpu=True, batch_size=16).predict(
            lambda params: tf.data.Dataset.from_tensor_slices({"cat": TPU_IDS, "x": TPU_X}).batch(
                params["batch_size"], drop_remainder=True)))
    assert len(predictions) == 16
    assert ("enqueue", ["cat"], {"cat": None}, False) in stand_ins[1].calls
    assert "load" in stand_ins[1].calls  # after the checkpoint was restored


# -- shared tables (shared_embedding_columns need DenseFeatures, as in the original) -----------

CPU_IDS_2 = np.array([[3, 3], [0, 4], [1, 1], [2, 0]], np.int64)
SHARED_NAME = "cat_cat2_shared_embedding"
# The original, use_tpu=False, model Adagrad(0.1), after 3 steps of batch 4.
ORIGINAL_SHARED_CPU = {
    SHARED_NAME: [[-0.16637398302555084, -0.06566131860017776],
                  [0.05133237689733505, 0.15184561908245087],
                  [0.23041702806949615, 0.3310616612434387],
                  [0.5322765707969666, 0.6320490837097168],
                  [0.6597132086753845, 0.7603234052658081]],
    SHARED_NAME + "/Adagrad": [[1.165149450302124, 1.1589528322219849],
                               [0.7336143255233765, 0.7314912676811218],
                               [0.9814064502716064, 0.9762287139892578],
                               [0.17136971652507782, 0.17130926251411438],
                               [0.3429620862007141, 0.3417215049266815]],
    "out/kernel": [[0.3661186099052429], [0.35078489780426025], [0.345166951417923],
                   [0.3373737633228302], [0.3106873333454132]],
}


def _shared_model_fn(optimizer_fn, columns, seen):
    def model_fn(features, labels, mode, params):
        seen.append({key: features[key].dtype for key in ("cat", "cat2")})
        net = tf1.keras.layers.DenseFeatures(
            columns + [tf.feature_column.numeric_column("x")])(features)
        with v1.variable_scope("out"):
            kernel = v1.get_variable("kernel", [5, 1], initializer=v1.constant_initializer(0.5))
            bias = v1.get_variable("bias", [1], initializer=v1.zeros_initializer())
        loss = v1.losses.mean_squared_error(labels, tf.matmul(net, kernel) + bias)
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=optimizer_fn().minimize(
            loss, v1.train.get_global_step()))
    return model_fn


def _shared_columns():
    cat, cat2 = (tf.feature_column.categorical_column_with_identity(key, 5)
                 for key in ("cat", "cat2"))
    return tf1.tpu.experimental.shared_embedding_columns(
        [cat, cat2], 2, initializer=v1.constant_initializer(TABLE))


@pytest.mark.slow  # trains or evaluates for several seconds
@pytest.mark.parametrize("use_tpu", [False, True], ids=["cpu", "simulated_tpu"])
def test_shared_embedding_columns(use_tpu, simulated_tpu, tmp_path):
    seen, columns = [], _shared_columns()
    optimizer_fn = (lambda: tec.CrossShardOptimizer(v1.train.AdagradOptimizer(0.1))) if use_tpu \
        else MODEL_OPTIMIZERS["adagrad"]
    estimator = _estimator(_shared_model_fn(optimizer_fn, columns, seen), tmp_path,
                           tf1.tpu.experimental.AdagradParameters(0.5), use_tpu=use_tpu,
                           batch_size=16 if use_tpu else 4, columns=columns)

    def input_fn(params):
        dataset = tf.data.Dataset.from_tensor_slices(
            ({"cat": CPU_IDS, "cat2": CPU_IDS_2, "x": CPU_X}, CPU_Y))
        return dataset.repeat().batch(params["batch_size"], drop_remainder=True)
    estimator.train(input_fn, max_steps=3)
    values = _values(estimator)
    assert {SHARED_NAME, SHARED_NAME + "/Adagrad"} <= set(values)  # one table, both ways
    if not use_tpu:
        for name, expected in ORIGINAL_SHARED_CPU.items():
            np.testing.assert_allclose(values[name], expected, rtol=1e-5, err_msg=name)
        assert seen[0] == {"cat": tf.int64, "cat2": tf.int64}
    else:  # both features' activations, one table trained by the spec's Adagrad(0.5)
        assert seen[0] == {"cat": tf.float32, "cat2": tf.float32}
        assert not np.allclose(values[SHARED_NAME], TABLE)
        assert values[SHARED_NAME + "/Adagrad"].min() >= 0.1


@pytest.mark.slow  # trains or evaluates for several seconds
def test_evaluate_on_the_simulated_tpu_and_the_meta_graph(simulated_tpu, tmp_path):
    """Evaluation looks the activations up too (the tables are not trained), and the
    checkpoint's .meta graph is the CPU TRAIN graph with the table under its name."""
    model_fn = _make_model_fn(
        lambda: tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(DENSE_LR)), _columns())
    spec = tf1.estimator.tpu.experimental.EmbeddingConfigSpec(
        feature_columns=_columns(),
        optimization_parameters=tf1.tpu.experimental.AdagradParameters(0.5))
    estimator = tec.TPUEstimator(
        model_fn, config=tec.RunConfig(model_dir=str(tmp_path)), train_batch_size=16,
        eval_batch_size=16, embedding_config_spec=spec)
    input_fn = _input_fn(TPU_IDS, TPU_X, TPU_Y)
    estimator.train(input_fn, max_steps=2)
    values = _values(estimator)
    metrics = estimator.evaluate(input_fn, steps=1)
    activations = np.stack([values[TABLE_NAME][row[row != 0]].mean(0) if (row != 0).any()
                            else np.zeros(2) for row in TPU_IDS])
    logits = np.concatenate([activations, TPU_X], 1) @ values["out/kernel"] + values["out/bias"]
    per_replica_losses = ((logits - TPU_Y) ** 2).reshape(REPLICAS, -1).mean(1)
    # the evaluation loss is replica 0's, as the original's (docs/compatibility.md); its rows' activations
    np.testing.assert_allclose(metrics["loss"], per_replica_losses[0], rtol=1e-5)
    np.testing.assert_allclose(estimator.get_variable_value(TABLE_NAME), values[TABLE_NAME])
    # eval_on_tpu=False: the original evaluated on the CPU, input_layer looking the ids up
    # (id 0 included) in the restored table, over the whole batch.
    on_cpu = tec.TPUEstimator(
        model_fn, config=tec.RunConfig(model_dir=str(tmp_path)), train_batch_size=16,
        eval_batch_size=16, eval_on_tpu=False, embedding_config_spec=spec)
    cpu_logits = (np.concatenate([values[TABLE_NAME][TPU_IDS].mean(1), TPU_X], 1)
                  @ values["out/kernel"] + values["out/bias"])
    np.testing.assert_allclose(on_cpu.evaluate(input_fn, steps=1)["loss"],
                               ((cpu_logits - TPU_Y) ** 2).mean(), rtol=1e-5)
    with tf.Graph().as_default():
        v1.train.import_meta_graph(str(tmp_path / "model.ckpt-2.meta"))
        assert TABLE_NAME in [v.op.name for v in v1.global_variables()]


def test_unsupported_columns_under_tpu_semantics_name_the_fix():
    cat = tf.feature_column.categorical_column_with_identity("cat", 5)
    for column, message in [
            (tf1.tpu.experimental.embedding_column(
                tf.feature_column.sequence_categorical_column_with_identity("s", 5), 2,
                max_sequence_length=3), "sequence embedding columns are not supported")]:
        spec = embedding_spec.EmbeddingConfigSpec(
            feature_columns=[column],
            optimization_parameters=embedding_spec.AdagradParameters(0.1))
        with pytest.raises(ValueError, match=message):
            embeddings.TpuEmbeddings(spec, store=None)
