"""`tf.contrib.rnn` and `tf.nn.rnn_cell` in TF1 graphs: TF1 variable names and the original's
outputs. Expected values: the same graph on TF 2.15's `tf.compat.v1.nn.rnn_cell` (the
original's environment), `stack_bidirectional_dynamic_rnn` spelled out there as TF 1.15's
source defines it (bidirectional_dynamic_rnn per layer under `cell_<i>`, outputs concatenated)."""
import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat.v1 as v1

X = (np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 12) / 10

# TF 2.15, tf.compat.v1.nn.rnn_cell, initializer random_uniform(-0.5, 0.5, seed=7).
MULTI_LAST_OUTPUT = [[0.033053, -0.03479, 0.008729], [0.000158, -0.022322, 0.005384]]
MULTI_LSTM_C = [[-0.224001, -0.511213, 0.313521, -0.119643],
                [0.006735, 0.386626, -0.606842, -0.21744]]
STATIC_LAST_OUTPUT = [[-0.163472, 0.304353], [0.151728, -0.137663]]
STACKED_LAST_OUTPUT = [[0.004839, 0.003435, -0.000498, 0.000901],
                       [-0.037723, -0.003311, -0.018361, -0.005386]]
NAMES = ["m/rnn/multi_rnn_cell/cell_0/lstm_cell/kernel:0",
         "m/rnn/multi_rnn_cell/cell_0/lstm_cell/bias:0",
         "m/rnn/multi_rnn_cell/cell_1/gru_cell/gates/kernel:0",
         "m/rnn/multi_rnn_cell/cell_1/gru_cell/gates/bias:0",
         "m/rnn/multi_rnn_cell/cell_1/gru_cell/candidate/kernel:0",
         "m/rnn/multi_rnn_cell/cell_1/gru_cell/candidate/bias:0",
         "m/rnn/basic_lstm_cell/kernel:0", "m/rnn/basic_lstm_cell/bias:0"] + [
    f"m/stack_bidirectional_rnn/cell_{i}/bidirectional_rnn/{d}/gru_cell/{part}:0"
    for i in range(2) for d in ("fw", "bw")
    for part in ("gates/kernel", "gates/bias", "candidate/kernel", "candidate/bias")]


def test_contrib_rnn_cells_and_functions_match_tf1():
    rnn = v1.contrib.rnn
    with tf.Graph().as_default():
        with v1.variable_scope("m", initializer=v1.random_uniform_initializer(-0.5, 0.5, seed=7)):
            x = tf.constant(X)
            cell = rnn.MultiRNNCell([rnn.DropoutWrapper(rnn.LSTMCell(4), output_keep_prob=1.0),
                                     v1.nn.rnn_cell.GRUCell(3)])
            outputs, state = v1.nn.dynamic_rnn(cell, x, dtype=tf.float32)
            static_outputs, _ = rnn.static_rnn(rnn.BasicLSTMCell(2), tf.unstack(x, axis=1),
                                               dtype=tf.float32)
            stacked, states_fw, states_bw = rnn.stack_bidirectional_dynamic_rnn(
                [rnn.GRUCell(2), rnn.GRUCell(2)], [rnn.GRUCell(2), rnn.GRUCell(2)], x,
                dtype=tf.float32)
        assert [v.name for v in v1.global_variables()] == NAMES
        assert isinstance(state[0], rnn.LSTMStateTuple)
        assert len(states_fw) == len(states_bw) == 2
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            out, c, static_last, stacked = session.run(
                [outputs[:, -1], state[0].c, static_outputs[-1], stacked[:, -1]])
    np.testing.assert_allclose(out, MULTI_LAST_OUTPUT, atol=2e-6)
    np.testing.assert_allclose(c, MULTI_LSTM_C, atol=2e-6)
    np.testing.assert_allclose(static_last, STATIC_LAST_OUTPUT, atol=2e-6)
    np.testing.assert_allclose(stacked, STACKED_LAST_OUTPUT, atol=2e-6)


def test_stack_bidirectional_checks_and_unserved_cells_name_what_is_served():
    rnn = v1.contrib.rnn
    with pytest.raises(ValueError, match="Forward and Backward cells must have the same depth"):
        rnn.stack_bidirectional_rnn([rnn.GRUCell(2)], [rnn.GRUCell(2)] * 2, [tf.zeros([1, 2])])
    with pytest.raises(ValueError, match="initial_states_fw must be a list of state tensors"):
        rnn.stack_bidirectional_dynamic_rnn([rnn.GRUCell(2)], [rnn.GRUCell(2)],
                                            tf.zeros([1, 2, 2]), initial_states_fw=[1, 2])
    with pytest.raises(AttributeError, match="LSTMBlockCell.*contrib's other cells"):
        rnn.LSTMBlockCell  # noqa: B018


def _sine_initializer(shape, dtype=tf.float32, partition_info=None):  # deterministic, no seed
    return tf.constant(0.3 * np.sin(np.arange(np.prod(shape))).reshape(shape), dtype)


# The original TPUEstimator (TF 2.15, tf.compat.v1.nn.rnn_cell, use_tpu=False), 3 SGD steps.
ORIGINAL_LSTM_KERNEL = [[0.00006, 0.252452, 0.272755], [0.273958, 0.251003, -0.002699]]
ORIGINAL_DENSE_KERNEL = [[-0.000366, 0.252808], [0.273075, 0.04205], [-0.226356, -0.288362],
                         [-0.083352, 0.196624]]


def test_dynamic_rnn_of_contrib_cells_in_tpu_estimator_trains_as_the_original(tmp_path):
    """An image-captioning model's decoder: `tf.contrib.rnn` cells run by dynamic_rnn, whose
    while loop builds the variables (names as TF1 gave them, not under `rnn/while/`)."""
    import tpu_estimator_compat as tec  # noqa: PLC0415
    x = (np.arange(16 * 3 * 4, dtype=np.float32).reshape(16, 3, 4) % 7) / 7
    y = (np.arange(16) % 2).astype(np.int64)

    def input_fn(params):
        return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(
            params["batch_size"], drop_remainder=True)

    def model_fn(features, labels, mode, params):
        rnn = v1.contrib.rnn
        with v1.variable_scope("captions", initializer=_sine_initializer):
            cell = rnn.MultiRNNCell([rnn.DropoutWrapper(rnn.LSTMCell(5), output_keep_prob=1.0),
                                     rnn.GRUCell(4)])
            outputs, _ = v1.nn.dynamic_rnn(cell, features, dtype=tf.float32)
            logits = v1.layers.dense(outputs[:, -1], 2, kernel_initializer=_sine_initializer)
        loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
        train_op = v1.train.GradientDescentOptimizer(0.5).minimize(
            loss, global_step=v1.train.get_global_step())
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    estimator = tec.TPUEstimator(model_fn, train_batch_size=8, use_tpu=False,
                                 config=tec.RunConfig(model_dir=str(tmp_path)))
    estimator.train(input_fn, max_steps=3)
    assert [n for n in estimator.get_variable_names() if n.startswith("captions")] == [
        "captions/dense/bias", "captions/dense/kernel",
        "captions/rnn/multi_rnn_cell/cell_0/lstm_cell/bias",
        "captions/rnn/multi_rnn_cell/cell_0/lstm_cell/kernel",
        "captions/rnn/multi_rnn_cell/cell_1/gru_cell/candidate/bias",
        "captions/rnn/multi_rnn_cell/cell_1/gru_cell/candidate/kernel",
        "captions/rnn/multi_rnn_cell/cell_1/gru_cell/gates/bias",
        "captions/rnn/multi_rnn_cell/cell_1/gru_cell/gates/kernel"]
    lstm = estimator.get_variable_value("captions/rnn/multi_rnn_cell/cell_0/lstm_cell/kernel")
    np.testing.assert_allclose(lstm[:2, :3], ORIGINAL_LSTM_KERNEL, atol=2e-6)
    np.testing.assert_allclose(estimator.get_variable_value("captions/dense/kernel"),
                               ORIGINAL_DENSE_KERNEL, atol=2e-6)


def _layer_norm_lstm_reference(x, kernel, units, gain, shift, forget_bias=1.0):
    """TF 1.15's LayerNormBasicLSTMCell (contrib/rnn/python/ops/rnn_cell.py) in numpy."""
    def norm(v):
        mean, var = v.mean(axis=1, keepdims=True), v.var(axis=1, keepdims=True)
        return (v - mean) / np.sqrt(var + 1e-12) * gain + shift

    def sigmoid(v):
        return 1 / (1 + np.exp(-v))

    c = h = np.zeros((x.shape[0], units))
    for t in range(x.shape[1]):
        i, j, f, o = np.split(np.concatenate([x[:, t], h], 1) @ kernel, 4, axis=1)
        i, j, f, o = norm(i), norm(j), norm(f), norm(o)
        c = norm(c * sigmoid(f + forget_bias) + sigmoid(i) * np.tanh(j))
        h = np.tanh(c) * sigmoid(o)
    return h, c


def test_layer_norm_basic_lstm_cell_follows_tf115s_formula_and_names():
    with tf.Graph().as_default():
        with v1.variable_scope("m", initializer=_sine_initializer):
            cell = v1.contrib.rnn.LayerNormBasicLSTMCell(3, norm_gain=1.5, norm_shift=0.1)
            _, state = v1.nn.dynamic_rnn(cell, tf.constant(X), dtype=tf.float32)
        names = [v.name for v in v1.global_variables()]
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            h, c = session.run([state.h, state.c])
    prefix = "m/rnn/layer_norm_basic_lstm_cell/"
    assert names == [prefix + "kernel:0"] + [
        f"{prefix}{scope}/{var}:0" for scope in ("input", "transform", "forget", "output", "state")
        for var in ("gamma", "beta")]
    kernel = 0.3 * np.sin(np.arange(7 * 12)).reshape(7, 12)
    h_ref, c_ref = _layer_norm_lstm_reference(X.astype(np.float64), kernel, 3, 1.5, 0.1)
    np.testing.assert_allclose(h, h_ref, atol=1e-5)
    np.testing.assert_allclose(c, c_ref, atol=1e-5)
