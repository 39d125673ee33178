"""`tf.contrib.crf` (BERT-NER style CRF heads): every number is checked against an exact
reference that enumerates all tag sequences in numpy (contrib.crf is not in TF 2.15)."""
import itertools

import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
import helpers
from helpers import make_estimator
from tpu_estimator_compat import v1 as tf1

v1 = tf.compat.v1
crf = tf1.contrib.crf

RNG = np.random.RandomState(3)
NUM_TAGS = 3
INPUTS = RNG.randn(4, 4, NUM_TAGS).astype(np.float32)  # [batch, max_seq_len, num_tags]
TRANSITIONS = RNG.randn(NUM_TAGS, NUM_TAGS).astype(np.float32)
TAGS = np.array([[0, 2, 1, 1], [2, 0, 0, 0], [1, 1, 0, 0], [2, 0, 0, 0]], np.int32)
LENGTHS = np.array([4, 1, 2, 0], np.int32)


def _score(unary, tags, transitions):
    return (sum(unary[t, tag] for t, tag in enumerate(tags))
            + sum(transitions[a, b] for a, b in zip(tags, tags[1:])))


def _all_sequences(length):
    return list(itertools.product(range(NUM_TAGS), repeat=length))


def _reference(inputs, tags, lengths, transitions):
    """Per sequence: score of `tags`, log partition, best tags (padded with 0; length 0
    decoded as length 1, as TF 1.x does) and best score, by enumeration."""
    out = {"score": [], "log_norm": [], "best": [], "best_score": []}
    for unary, gold, length in zip(inputs.astype(np.float64), tags, lengths):
        scores = [_score(unary, seq, transitions) for seq in _all_sequences(length)]
        out["score"].append(_score(unary, gold[:length], transitions))
        out["log_norm"].append(np.log(np.sum(np.exp(scores))) if length else 0.0)
        decoded = _all_sequences(max(length, 1))
        best = max(decoded, key=lambda seq: _score(unary, seq, transitions))
        out["best"].append(list(best) + [0] * (inputs.shape[1] - len(best)))
        out["best_score"].append(_score(unary, best, transitions))
    return {key: np.array(value) for key, value in out.items()}


@pytest.mark.parametrize("max_seq_len", [4, 1])
def test_scores_log_norm_likelihood_and_decoding_equal_the_enumeration(max_seq_len):
    inputs, tags = INPUTS[:, :max_seq_len], TAGS[:, :max_seq_len]
    lengths = np.minimum(LENGTHS, max_seq_len)
    expected = _reference(inputs, tags, lengths, TRANSITIONS)
    np.testing.assert_allclose(crf.crf_sequence_score(inputs, tags, lengths, TRANSITIONS),
                               expected["score"], atol=1e-5)
    np.testing.assert_allclose(crf.crf_log_norm(inputs, lengths, TRANSITIONS),
                               expected["log_norm"], atol=1e-5)
    likelihood, transitions = crf.crf_log_likelihood(inputs, tags, lengths, TRANSITIONS)
    assert transitions is TRANSITIONS
    np.testing.assert_allclose(likelihood, expected["score"] - expected["log_norm"], atol=1e-5)
    decoded, best_score = crf.crf_decode(inputs, TRANSITIONS, lengths)
    assert decoded.dtype == tf.int32 and decoded.shape == tags.shape
    np.testing.assert_array_equal(decoded, expected["best"])
    np.testing.assert_allclose(best_score, expected["best_score"], atol=1e-5)
    for unary, length, best, score in zip(inputs, lengths, expected["best"],
                                          expected["best_score"]):
        if length:
            viterbi, viterbi_score = crf.viterbi_decode(unary[:length], TRANSITIONS)
            assert viterbi == list(best[:length])
            np.testing.assert_allclose(viterbi_score, score, atol=1e-5)


def test_shapes_known_only_at_run_time_in_a_tf1_graph():
    expected = _reference(INPUTS, TAGS, LENGTHS, TRANSITIONS)
    with tf.Graph().as_default():
        inputs = v1.placeholder(tf.float32, [None, None, NUM_TAGS])
        tags = v1.placeholder(tf.int32, [None, None])
        lengths = v1.placeholder(tf.int32, [None])
        likelihood, _ = crf.crf_log_likelihood(inputs, tags, lengths, TRANSITIONS)
        decoded, best_score = crf.crf_decode(inputs, TRANSITIONS, lengths)
        with v1.Session() as session:
            results = session.run([likelihood, decoded, best_score],
                                  {inputs: INPUTS, tags: TAGS, lengths: LENGTHS})
    np.testing.assert_allclose(results[0], expected["score"] - expected["log_norm"], atol=1e-5)
    np.testing.assert_array_equal(results[1], expected["best"])
    np.testing.assert_allclose(results[2], expected["best_score"], atol=1e-5)


def test_unary_binary_and_multitag_scores():
    expected = _reference(INPUTS, TAGS, LENGTHS, np.zeros_like(TRANSITIONS))
    np.testing.assert_allclose(crf.crf_unary_score(TAGS, LENGTHS, INPUTS), expected["score"],
                               atol=1e-5)
    binary = [_score(np.zeros_like(INPUTS[0]), gold[:n], TRANSITIONS)
              for gold, n in zip(TAGS, LENGTHS)]
    np.testing.assert_allclose(crf.crf_binary_score(TAGS, LENGTHS, TRANSITIONS), binary,
                               atol=1e-5)
    one_hot = np.eye(NUM_TAGS, dtype=bool)[TAGS]
    np.testing.assert_allclose(
        crf.crf_multitag_sequence_score(INPUTS, one_hot, LENGTHS, TRANSITIONS),
        _reference(INPUTS, TAGS, LENGTHS, TRANSITIONS)["score"], atol=1e-5)
    bitmap = one_hot.copy()
    bitmap[0, 1] = [True, False, True]  # the first sequence's step 1 may be tag 0 or 2
    allowed = [seq for seq in _all_sequences(4) if all(bitmap[0, t, tag]
                                                       for t, tag in enumerate(seq))]
    multitag = crf.crf_multitag_sequence_score(INPUTS, bitmap, LENGTHS, TRANSITIONS)
    np.testing.assert_allclose(multitag[0], np.log(sum(
        np.exp(_score(INPUTS[0].astype(np.float64), seq, TRANSITIONS)) for seq in allowed)),
        atol=1e-5)


def test_likelihood_makes_transitions_in_the_variable_scope_and_gradients_are_exact():
    with tf.Graph().as_default():
        inputs = v1.get_variable("inputs", initializer=INPUTS)
        with v1.variable_scope("crf_layer", initializer=v1.constant_initializer(TRANSITIONS)):
            likelihood, transitions = crf.crf_log_likelihood(inputs, TAGS, LENGTHS)
        assert transitions.name == "crf_layer/transitions:0"
        assert transitions.shape == (NUM_TAGS, NUM_TAGS)
        assert transitions in v1.trainable_variables()
        gradients = v1.gradients(tf.reduce_sum(likelihood), [inputs, transitions])
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            grad_inputs, grad_transitions = session.run(gradients)
    # d log p(gold) = gold's unary / pair counts minus their expectations under the CRF.
    want_inputs, want_transitions = np.zeros_like(INPUTS), np.zeros_like(TRANSITIONS)
    for unary, gold, length, out in zip(INPUTS.astype(np.float64), TAGS, LENGTHS, want_inputs):
        sequences = _all_sequences(length)
        weights = np.exp([_score(unary, seq, TRANSITIONS) for seq in sequences])
        for seq, weight in itertools.chain([(gold[:length], -1.0)],
                                           zip(sequences, weights / weights.sum())):
            for t, tag in enumerate(seq):
                out[t, tag] -= weight
            for a, b in zip(seq, seq[1:]):
                want_transitions[a, b] -= weight
    np.testing.assert_allclose(grad_inputs, want_inputs, atol=1e-5)
    np.testing.assert_allclose(grad_transitions, want_transitions, atol=1e-5)


def test_cells_are_tf1_rnn_cells_for_dynamic_rnn():
    assert issubclass(crf.CrfForwardRnnCell, tf1.nn.rnn_cell.RNNCell)
    with tf.Graph().as_default():
        cell = crf.CrfForwardRnnCell(tf.constant(TRANSITIONS))
        assert cell.state_size == cell.output_size == NUM_TAGS
        _, alphas = v1.nn.dynamic_rnn(cell, INPUTS[:3, 1:], sequence_length=LENGTHS[:3] - 1,
                                      initial_state=INPUTS[:3, 0])
        log_norm = tf.reduce_logsumexp(alphas, axis=1)
        backward = crf.CrfDecodeBackwardRnnCell(NUM_TAGS)
        assert backward.state_size == backward.output_size == 1
        with v1.Session() as session:
            log_norm = session.run(log_norm)
    np.testing.assert_allclose(log_norm,
                               _reference(INPUTS, TAGS, LENGTHS, TRANSITIONS)["log_norm"][:3],
                               atol=1e-5)


def test_tf1_module_paths_serve_the_crf():
    names = {}
    exec("from tensorflow.contrib.crf import crf_log_likelihood\n"  # noqa: S102
         "from tensorflow.contrib.crf.python.ops import crf\n"
         "import tensorflow.contrib.crf.python.ops.crf as crf_ops\n"
         .replace("tensorflow", "tpu_estimator_compat.v1"), names)
    assert names["crf_log_likelihood"] is crf.crf_log_likelihood
    assert names["crf"] is names["crf_ops"]
    for name in crf.NAMES:  # TF 1.15's 11 names, from both paths
        assert getattr(names["crf"], name) is getattr(crf, name)


# A tagger: per-token logits from a linear layer, a CRF loss, Viterbi predictions.
SEQ_LEN, FEATURES_DIM, BATCH = 5, 4, 16
TOKENS = RNG.randn(64, SEQ_LEN, FEATURES_DIM).astype(np.float32)
TOKEN_TAGS = np.argmax(TOKENS[..., :NUM_TAGS], axis=-1).astype(np.int32)
TOKEN_LENGTHS = (np.arange(64) % SEQ_LEN + 1).astype(np.int32)


def _tagger_input_fn(params):
    features = {"tokens": TOKENS, "lengths": TOKEN_LENGTHS}
    return tf.data.Dataset.from_tensor_slices((features, TOKEN_TAGS)).repeat().batch(
        params["batch_size"], drop_remainder=True)


def _tagger_model_fn(features, labels, mode, params):
    weights = v1.get_variable("output_weights", [FEATURES_DIM, NUM_TAGS],
                              initializer=v1.constant_initializer(0.1))
    # As BERT's embeddings: a variable read after an assert (on the simulated TPU that read
    # is outside XLA, so the CRF's loops come in a later XLA cluster than the step's start).
    check = v1.assert_less_equal(tf.shape(features["tokens"])[1], SEQ_LEN)
    with tf.control_dependencies([check]):
        logits = tf.einsum("btf,fn->btn", features["tokens"], weights)
    lengths = features["lengths"]
    with v1.variable_scope("crf"):
        if mode == tec.ModeKeys.PREDICT:
            transitions = v1.get_variable("transitions", [NUM_TAGS, NUM_TAGS])
        else:  # crf_log_likelihood makes crf/transitions
            likelihood, transitions = tf1.contrib.crf.crf_log_likelihood(
                logits, labels, lengths)
    tags, _ = tf1.contrib.crf.crf_decode(logits, transitions, lengths)  # in every mode
    if mode == tec.ModeKeys.PREDICT:
        return tec.TPUEstimatorSpec(mode, predictions={"tags": tags})
    loss = -tf.reduce_mean(likelihood)
    return helpers.sgd_spec(mode, loss, 0.5)


@pytest.mark.slow  # trains for several seconds
def test_crf_tagger_trains_alike_on_one_and_eight_replicas_and_predicts_tags(
        tmp_path, one_device, eight_devices):
    weights = {}
    for name, strategy in (("one", one_device), ("eight", eight_devices)):
        estimator = make_estimator(tmp_path / name, strategy, _tagger_model_fn,
                                   batch_size=BATCH, tf_random_seed=5)
        estimator.train(_tagger_input_fn, steps=4)
        weights[name] = {variable: estimator.get_variable_value(variable)
                         for variable in ("output_weights", "crf/transitions")}
    for variable, value in weights["one"].items():
        np.testing.assert_allclose(weights["eight"][variable], value, atol=1e-5)
    assert not np.allclose(weights["one"]["output_weights"], 0.1), "training moved nothing"
    _assert_predicts_the_best_tags(estimator)


def _assert_predicts_the_best_tags(estimator):
    predictions = list(estimator.predict(
        lambda params: _tagger_input_fn(params).take(1), yield_single_examples=False))
    assert len(predictions) == 1
    tags = predictions[0]["tags"]
    assert tags.shape == (BATCH, SEQ_LEN) and tags.dtype == np.int32
    transitions = estimator.get_variable_value("crf/transitions")
    logits = TOKENS[:BATCH] @ estimator.get_variable_value("output_weights")
    for row, unary, length in zip(tags, logits, TOKEN_LENGTHS):
        assert list(row[:length]) == crf.viterbi_decode(unary[:length], transitions)[0]
        assert not row[length:].any()


@pytest.mark.slow  # compiles the step with XLA
def test_crf_tagger_compiles_with_xla_on_the_simulated_tpu(tmp_path, monkeypatch):
    from tpu_estimator_compat.engine import cluster_resolver, runtime  # noqa: PLC0415
    monkeypatch.setenv(cluster_resolver.SIMULATED_TPU_CORES_ENV, "8")
    monkeypatch.delenv(runtime.SIMULATED_TPU_XLA_ENV, raising=False)  # XLA: the default
    estimator = tec.TPUEstimator(
        _tagger_model_fn, use_tpu=True, train_batch_size=BATCH, predict_batch_size=BATCH,
        config=tec.RunConfig(model_dir=str(tmp_path), tf_random_seed=5,
                             tpu_config=tec.TPUConfig(iterations_per_loop=2)))
    estimator.train(_tagger_input_fn, steps=2)
    assert not np.allclose(estimator.get_variable_value("output_weights"), 0.1)
    _assert_predicts_the_best_tags(estimator)
