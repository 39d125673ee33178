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
    with pytest.raises(AttributeError, match="LayerNormBasicLSTMCell.*contrib's own cells"):
        rnn.LayerNormBasicLSTMCell  # noqa: B018
