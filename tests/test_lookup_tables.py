"""TF1 lookup tables built in model_fn (`tf.contrib.lookup`): initialised before the first
step as TF1's Scaffold did, in train, evaluate, predict and the exported SavedModel, with the
original's numbers; refused on a TPU as the original failed there; TF 1.15's names."""
import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
from helpers import make_estimator
from tpu_estimator_compat import v1 as tf1
from tpu_estimator_compat.cli import inventory
from tpu_estimator_compat.export import receivers

v1 = tf.compat.v1
lookup = tf1.contrib.lookup

VOCABULARY = ["a", "b", "c", "d"]
WORDS = np.array([b"a", b"b", b"c", b"d", b"zz", b"b", b"a", b"q"] * 4)
TARGETS = (np.arange(32, dtype=np.float32).reshape(32, 1) % 5) / 4.0
BATCH = 8

# The original (TF 2.15's TPUEstimator, use_tpu=False, one device) on this model_fn, with
# TF 2.15's lookup_ops (contrib.lookup's functions) and StaticHashTable (its HashTable):
# 6 steps of SGD, evaluate(steps=2), predict on WORDS[:8].
ORIGINAL_EMB = [[0.013510296121239662, 0.11297161877155304, 0.21243290603160858],
                [0.2961975634098053, 0.39604148268699646, 0.49588534235954285],
                [0.5845953822135925, 0.6849223375320435, 0.7852491140365601],
                [0.9027860760688782, 1.0027287006378174, 1.102671504020691],
                [1.1899796724319458, 1.2903025150299072, 1.3906253576278687]]
ORIGINAL_W = [0.1620618849992752, 0.15720722079277039, 0.15235252678394318,
              0.10954393446445465, 0.26494091749191284]
ORIGINAL_EVAL = {"loss": 0.16754912, "mae": 0.33928913, "mean_id": 1.875, "global_step": 6}
ORIGINAL_PREDICTIONS = {  # per word: id, HashTable value, rank in the file, prediction, name
    b"a": (0, 1.0, 3, 0.24134037, b"a"), b"b": (1, 2.0, 2, 0.45788836, b"b"),
    b"c": (2, 3.0, 1, 0.67717594, b"c"), b"d": (3, -1.0, 0, 0.36239427, b"d"),
    b"zz": (4, -1.0, -1, 0.47152248, b"UNK"), b"q": (4, -1.0, -1, 0.47152248, b"UNK")}


def _input_fn(params):
    dataset = tf.data.Dataset.from_tensor_slices(({"word": WORDS}, TARGETS))
    return dataset.repeat().batch(params["batch_size"], drop_remainder=True)


def _first_examples_input_fn(count, labels=True):
    def input_fn(params):
        features = {"word": WORDS[:count]}
        return tf.data.Dataset.from_tensor_slices(
            (features, TARGETS[:count]) if labels else features).batch(params["batch_size"])
    return input_fn


def _model_fn(features, labels, mode, params):
    words = features["word"]
    ids = lookup.index_table_from_tensor(tf.constant(VOCABULARY), num_oov_buckets=1).lookup(
        words)
    scale = lookup.HashTable(lookup.KeyValueTensorInitializer(["a", "b", "c"], [1.0, 2.0, 3.0]),
                             -1.0).lookup(words)
    rank = lookup.index_table_from_file(params["vocab_file"]).lookup(words)
    embeddings = v1.get_variable("emb", [5, 3], initializer=v1.constant_initializer(
        np.arange(15, dtype=np.float32).reshape(5, 3) / 10.0))
    weights = v1.get_variable("w", [5, 1], initializer=v1.constant_initializer(0.25))
    inputs = tf.concat([tf.nn.embedding_lookup(embeddings, ids), tf.reshape(scale, [-1, 1]),
                        tf.reshape(tf.cast(rank, tf.float32) * 0.1, [-1, 1])], 1)
    predictions = tf.matmul(inputs, weights)
    if mode == tec.ModeKeys.PREDICT:
        names = lookup.index_to_string_table_from_tensor(tf.constant(VOCABULARY),
                                                         default_value="UNK")
        return tec.TPUEstimatorSpec(mode, predictions={
            "ids": ids, "scale": scale, "rank": rank, "pred": predictions,
            "name": names.lookup(ids)})
    loss = v1.losses.mean_squared_error(labels, predictions)
    optimizer = v1.train.GradientDescentOptimizer(0.1)
    if params.get("cross_shard"):  # 8 replicas: the mean gradient, as one on the global batch
        optimizer = tec.CrossShardOptimizer(optimizer)
    train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())

    def metric_fn(labels, predictions, ids):
        return {"mae": v1.metrics.mean_absolute_error(labels, predictions),
                "mean_id": v1.metrics.mean(tf.cast(ids, tf.float32))}
    return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op,
                                eval_metrics=(metric_fn, [labels, predictions, ids]))


def _serving_input_receiver_fn():
    word = v1.placeholder(tf.string, [None], name="word")
    return receivers.ServingInputReceiver({"word": word}, {"word": word})


def _vocab_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("d\nc\nb\na\n")
    return str(path)


def _estimator(model_dir, strategy, vocab_file, batch_size=BATCH, **kwargs):
    return make_estimator(model_dir, strategy, _model_fn, batch_size=batch_size, use_tpu=False,
                          params={"vocab_file": vocab_file, **kwargs.pop("params", {})},
                          **kwargs)


def _assert_originals_predictions(predictions, words):
    for prediction, word in zip(predictions, words):
        ids, scale, rank, value, name = ORIGINAL_PREDICTIONS[word]
        assert (prediction["ids"], prediction["scale"], prediction["rank"],
                prediction["name"]) == (ids, scale, rank, name), word
        np.testing.assert_allclose(prediction["pred"], [value], rtol=1e-5)


@pytest.mark.slow  # trains, evaluates and predicts on one and eight replicas
@pytest.mark.parametrize("replicas", [1, 8])
def test_tables_in_model_fn_train_evaluate_predict_to_the_originals_numbers(
        tmp_path, one_device, eight_devices, replicas):
    # use_tpu=False: each replica takes whole batches, so 8 replicas take 8 batches of 1.
    strategy = one_device if replicas == 1 else eight_devices
    estimator = _estimator(tmp_path / "model", strategy, _vocab_file(tmp_path),
                           batch_size=BATCH // replicas, params={"cross_shard": replicas > 1})
    estimator.train(_input_fn, max_steps=6)
    np.testing.assert_allclose(estimator.get_variable_value("emb"), ORIGINAL_EMB, atol=1e-6)
    np.testing.assert_allclose(estimator.get_variable_value("w").ravel(), ORIGINAL_W, atol=1e-6)
    metrics = estimator.evaluate(_first_examples_input_fn(2 * BATCH))  # the original's steps=2
    assert metrics["global_step"] == ORIGINAL_EVAL["global_step"]
    # (On several replicas `loss` is replica 0's, docs/compatibility.md: Known differences.)
    for name in ("loss", "mae", "mean_id") if replicas == 1 else ("mae", "mean_id"):
        np.testing.assert_allclose(metrics[name], ORIGINAL_EVAL[name], rtol=1e-5)
    predictions = list(estimator.predict(_first_examples_input_fn(BATCH, labels=False)))
    assert len(predictions) == BATCH
    _assert_originals_predictions(predictions, WORDS[:BATCH])


# The original on a vocabulary-list embedding column in model_fn (4 steps of SGD, 0.2).
ORIGINAL_COLUMN_WEIGHTS = {
    "input_layer/word_embedding/embedding_weights": [
        0.07480944693088531, 0.1752048134803772, 0.24187535047531128, 0.3420933187007904,
        0.39502376317977905, 0.4950467050075531, 0.6006414294242859, 0.7007057666778564,
        0.7420408725738525, 0.8417769074440002],
    "w": [0.4240943491458893, 0.43604254722595215]}


def _column_model_fn(features, labels, mode, params):
    column = tf.feature_column.embedding_column(
        tf.feature_column.categorical_column_with_vocabulary_list(
            "word", VOCABULARY, num_oov_buckets=1),
        2, initializer=v1.constant_initializer(np.arange(10, dtype=np.float32).reshape(5, 2) / 10))
    inputs = v1.feature_column.input_layer(features, [column])
    weights = v1.get_variable("w", [2, 1], initializer=v1.constant_initializer(0.5))
    loss = v1.losses.mean_squared_error(labels, tf.matmul(inputs, weights))
    train_op = v1.train.GradientDescentOptimizer(0.2).minimize(
        loss, global_step=v1.train.get_global_step())
    return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def test_vocabulary_column_in_model_fn_trains_to_the_originals_weights(tmp_path, one_device):
    estimator = make_estimator(tmp_path, one_device, _column_model_fn, batch_size=BATCH,
                               use_tpu=False)
    estimator.train(_input_fn, max_steps=4)
    for name, value in ORIGINAL_COLUMN_WEIGHTS.items():
        np.testing.assert_allclose(estimator.get_variable_value(name).ravel(), value,
                                   atol=1e-6)


@pytest.mark.slow  # trains, then exports
def test_exported_saved_model_serves_its_tables_initialised(tmp_path, one_device):
    vocab_file = _vocab_file(tmp_path)
    estimator = _estimator(tmp_path / "model", one_device, vocab_file, export_to_tpu=False)
    estimator.train(_input_fn, max_steps=6)
    export_dir = estimator.export_saved_model(str(tmp_path / "export"),
                                              _serving_input_receiver_fn).decode()
    # The vocabulary file travels as an asset, as the original's export copied it.
    assert [p.name for p in (tmp_path / "export").glob("*/assets/*")] == ["vocab.txt"]
    (tmp_path / "vocab.txt").unlink()
    words = [b"c", b"q", b"a", b"d"]
    served = tf.saved_model.load(export_dir, tags=["serve"]).signatures["serving_default"](
        word=tf.constant(words))
    _assert_originals_predictions(
        [{key: value.numpy()[i] for key, value in served.items()} for i in range(len(words))],
        words)


@pytest.mark.slow  # trains, then fails to export
def test_tpu_metagraph_export_of_tables_names_export_to_tpu_false(tmp_path, one_device):
    estimator = _estimator(tmp_path / "model", one_device, _vocab_file(tmp_path))
    estimator.train(_input_fn, max_steps=2)
    with pytest.raises(ValueError, match=r"model_fn built a lookup table \(.*hash_table\), "
                                         r"which the TPU MetaGraph of the export cannot hold.*"
                                         r"export_to_tpu=False"):
        estimator.export_saved_model(str(tmp_path / "export"), _serving_input_receiver_fn)
    assert not list((tmp_path / "export").glob("*"))  # nothing written


def test_tables_in_model_fn_are_refused_on_a_tpu_before_any_step(tmp_path, monkeypatch):
    from tpu_estimator_compat.engine import cluster_resolver  # noqa: PLC0415
    monkeypatch.setenv(cluster_resolver.SIMULATED_TPU_CORES_ENV, "2")
    estimator = tec.TPUEstimator(
        _model_fn, use_tpu=True, train_batch_size=BATCH,
        params={"vocab_file": _vocab_file(tmp_path), "cross_shard": True},
        config=tec.RunConfig(model_dir=str(tmp_path / "model"),
                             tpu_config=tec.TPUConfig(iterations_per_loop=2)))
    with pytest.raises(ValueError, match=r"model_fn built a lookup table \(its initializer "
                                         r".*\), which a TPU program cannot have.*Look the ids "
                                         r"up in input_fn.*or train with use_tpu=False"):
        estimator.train(_input_fn, max_steps=2)
    assert tf.train.latest_checkpoint(str(tmp_path / "model")) is None


def test_contrib_lookup_serves_tf115s_names_with_their_kinds():
    contrib = inventory.walk(["tensorflow.contrib.lookup"])
    assert (contrib.served, contrib.missing, contrib.different) == (
        {"tf.contrib.lookup": 23}, [], [])  # all of TF 1.15's 23 names, each of its kind
    implementation = inventory.walk(["tensorflow.contrib.lookup.lookup_ops"])
    assert not implementation.different
    assert sorted(p.rpartition(".")[2] for p in implementation.missing) == [
        "context", "deprecated", "dtypes", "gen_lookup_ops", "ops"]  # its imports
    names = {}
    exec("from tensorflow.contrib.lookup import HashTable, MutableDenseHashTable\n"  # noqa: S102
         "from tensorflow.contrib.lookup import lookup_ops\n"
         .replace("tensorflow", "tpu_estimator_compat.v1"), names)
    assert names["HashTable"] is lookup.HashTable is names["lookup_ops"].HashTable
    assert names["MutableDenseHashTable"] is tf.lookup.experimental.DenseHashTable
    assert lookup.MutableHashTable is tf.lookup.experimental.MutableHashTable
    assert lookup.KeyValueTensorInitializer is tf.lookup.KeyValueTensorInitializer


def test_contrib_lookup_functions_in_a_tf1_graph():
    with tf.Graph().as_default():
        words = tf.constant(["lake", "emerson", "and", "palmer"])
        mapping = tf.constant(["emerson", "lake", "palmer"])
        table = lookup.HashTable(lookup.KeyValueTensorInitializer(["emerson", "palmer"], [7, 9]),
                                 -1, shared_name="band")
        fetches = {
            "oov": lookup.index_table_from_tensor(mapping, num_oov_buckets=1).lookup(words),
            "string_to_index": lookup.string_to_index(words, mapping),
            "from_tensor": lookup.string_to_index_table_from_tensor(mapping).lookup(words),
            "index_to_string": lookup.index_to_string(
                tf.constant([1, 5], tf.int64), mapping, default_value="UNKNOWN"),
            "hash_table": table.lookup(words)}
        assert table.resource_handle.op.get_attr("shared_name") == b"band"
        assert table.init is table.initializer and table.name == "hash_table"
        with pytest.raises(ValueError, match="requires string"):
            lookup.string_to_index_table_from_tensor(tf.constant([1, 2]))
        with pytest.raises(ValueError, match="mapping must be specified"):
            lookup.index_table_from_tensor(None)
        with v1.Session() as session:
            session.run(v1.tables_initializer())
            values = session.run(fetches)
    assert values["oov"].tolist() == [1, 0, 3, 2]
    assert values["string_to_index"].tolist() == values["from_tensor"].tolist() == [1, 0, -1, 2]
    assert values["index_to_string"].tolist() == [b"lake", b"UNKNOWN"]
    assert values["hash_table"].tolist() == [-1, 7, -1, 9]
