"""TF 1.x's `tf.contrib.rnn` parts that neither TensorFlow nor tf_keras keep, with TF 1.x's
variable names (so TF1 checkpoints load):

- `stack_bidirectional_rnn` and `stack_bidirectional_dynamic_rnn`: layers of bidirectional
  RNNs, each layer's depth-concatenated forward and backward outputs the next layer's inputs,
  variables under `<scope or 'stack_bidirectional_rnn'>/cell_<i>/`;
- `LayerNormBasicLSTMCell`: a basic LSTM whose gates (and new cell state) are layer-normalised
  (Ba et al., "Layer Normalization"), with recurrent dropout on the candidate values.

The other cells and RNN functions of `tf.contrib.rnn` are TensorFlow's and tf_keras'
(`v1/contrib/rnn.py`).
"""
import tensorflow as tf

from tpu_estimator_compat.tf_internals import keras_and_slim

legacy_cells = keras_and_slim.legacy_rnn_cells()

_v1 = tf.compat.v1


def _check_layers(cells_fw, cells_bw, initial_states_fw, initial_states_bw):
    for direction, cells in (("fw", cells_fw), ("bw", cells_bw)):
        if not cells:
            raise ValueError(f"Must specify at least one {direction} cell for BidirectionalRNN.")
        if not isinstance(cells, list):
            raise ValueError(f"cells_{direction} must be a list of RNNCells (one per layer).")
    if len(cells_fw) != len(cells_bw):
        raise ValueError("Forward and Backward cells must have the same depth.")
    for direction, states in (("fw", initial_states_fw), ("bw", initial_states_bw)):
        if states is not None and (not isinstance(states, list) or len(states) != len(cells_fw)):
            raise ValueError(
                f"initial_states_{direction} must be a list of state tensors (one per layer).")


def _layers(cells_fw, cells_bw, initial_states_fw, initial_states_bw):
    """(index, cell_fw, cell_bw, initial_state_fw, initial_state_bw) of every layer."""
    for i, (cell_fw, cell_bw) in enumerate(zip(cells_fw, cells_bw)):
        yield (i, cell_fw, cell_bw, initial_states_fw[i] if initial_states_fw else None,
               initial_states_bw[i] if initial_states_bw else None)


def stack_bidirectional_rnn(cells_fw, cells_bw, inputs, initial_states_fw=None,
                            initial_states_bw=None, dtype=None, sequence_length=None,
                            scope=None):
    """Stacked `tf.nn.static_bidirectional_rnn` layers over the length-T list `inputs`.

    Returns:
      (outputs, states_fw, states_bw): the last layer's T outputs and a tuple of each
      layer's final forward / backward state.
    """
    _check_layers(cells_fw, cells_bw, initial_states_fw, initial_states_bw)
    states_fw, states_bw, layer_inputs = [], [], inputs
    with _v1.variable_scope(scope or "stack_bidirectional_rnn"):
        for i, cell_fw, cell_bw, state_fw, state_bw in _layers(
                cells_fw, cells_bw, initial_states_fw, initial_states_bw):
            with _v1.variable_scope(f"cell_{i}") as cell_scope:
                layer_inputs, state_fw, state_bw = _v1.nn.static_bidirectional_rnn(
                    cell_fw, cell_bw, layer_inputs, initial_state_fw=state_fw,
                    initial_state_bw=state_bw, sequence_length=sequence_length, dtype=dtype,
                    scope=cell_scope)
            states_fw.append(state_fw)
            states_bw.append(state_bw)
    return layer_inputs, tuple(states_fw), tuple(states_bw)


def stack_bidirectional_dynamic_rnn(cells_fw, cells_bw, inputs, initial_states_fw=None,
                                    initial_states_bw=None, dtype=None, sequence_length=None,
                                    parallel_iterations=None, time_major=False, scope=None,
                                    swap_memory=False):
    """Stacked `tf.nn.bidirectional_dynamic_rnn` layers over the tensor `inputs`.

    Returns:
      (outputs, states_fw, states_bw): the last layer's outputs (forward and backward
      concatenated on the last axis) and a tuple of each layer's final states.
    """
    _check_layers(cells_fw, cells_bw, initial_states_fw, initial_states_bw)
    states_fw, states_bw, layer_inputs = [], [], inputs
    with _v1.variable_scope(scope or "stack_bidirectional_rnn"):
        for i, cell_fw, cell_bw, state_fw, state_bw in _layers(
                cells_fw, cells_bw, initial_states_fw, initial_states_bw):
            with _v1.variable_scope(f"cell_{i}"):
                outputs, (state_fw, state_bw) = _v1.nn.bidirectional_dynamic_rnn(
                    cell_fw, cell_bw, layer_inputs, initial_state_fw=state_fw,
                    initial_state_bw=state_bw, sequence_length=sequence_length,
                    parallel_iterations=parallel_iterations, dtype=dtype,
                    swap_memory=swap_memory, time_major=time_major)
                layer_inputs = tf.concat(outputs, 2)
            states_fw.append(state_fw)
            states_bw.append(state_bw)
    return layer_inputs, tuple(states_fw), tuple(states_bw)


class LayerNormBasicLSTMCell(legacy_cells.RNNCell):
    """TF 1.x's `tf.contrib.rnn.LayerNormBasicLSTMCell`.

    With `h, c` the state: `i, j, f, o = split(concat([inputs, h]) @ kernel (+ bias without
    layer_norm), 4)`; with layer_norm each of them is layer-normalised (`input`, `transform`,
    `forget`, `output` scopes, each with `gamma` = norm_gain and `beta` = norm_shift);
    `g = dropout(activation(j), dropout_keep_prob)`;
    `c' = c * sigmoid(f + forget_bias) + sigmoid(i) * g`, layer-normalised (`state`) with
    layer_norm; `h' = activation(c') * sigmoid(o)`.
    """

    def __init__(self, num_units, forget_bias=1.0, input_size=None, activation=tf.tanh,
                 layer_norm=True, norm_gain=1.0, norm_shift=0.0, dropout_keep_prob=1.0,
                 dropout_prob_seed=None, reuse=None):
        super().__init__(_reuse=reuse)
        del input_size  # deprecated in TF 1.x already, and ignored there
        self._num_units = num_units
        self._activation = activation
        self._forget_bias = forget_bias
        self._keep_prob = dropout_keep_prob
        self._seed = dropout_prob_seed
        self._layer_norm = layer_norm
        self._norm_gain = norm_gain
        self._norm_shift = norm_shift

    @property
    def state_size(self):
        return legacy_cells.LSTMStateTuple(self._num_units, self._num_units)

    @property
    def output_size(self):
        return self._num_units

    def _norm(self, values, scope, dtype):
        """Layer normalisation over the last axis, its gamma and beta under `scope`."""
        with _v1.variable_scope(scope):
            gamma = _v1.get_variable("gamma", values.shape[-1:], dtype=dtype,
                                     initializer=_v1.constant_initializer(self._norm_gain))
            beta = _v1.get_variable("beta", values.shape[-1:], dtype=dtype,
                                    initializer=_v1.constant_initializer(self._norm_shift))
        mean, variance = tf.nn.moments(values, [1], keepdims=True)
        return (values - mean) * tf.math.rsqrt(variance + 1e-12) * gamma + beta

    def call(self, inputs, state):  # pylint: disable=arguments-differ
        c, h = state
        args = tf.concat([inputs, h], 1)
        dtype = args.dtype
        gates = tf.matmul(args, _v1.get_variable(
            "kernel", [args.shape[-1], 4 * self._num_units], dtype=dtype))
        if not self._layer_norm:
            gates = tf.nn.bias_add(gates, _v1.get_variable(
                "bias", [4 * self._num_units], dtype=dtype))
        i, j, f, o = tf.split(gates, 4, axis=1)
        if self._layer_norm:
            i, j, f, o = (self._norm(gate, scope, dtype) for gate, scope in zip(
                (i, j, f, o), ("input", "transform", "forget", "output")))
        g = self._activation(j)
        if not isinstance(self._keep_prob, float) or self._keep_prob < 1:
            g = _v1.nn.dropout(g, keep_prob=self._keep_prob, seed=self._seed)
        new_c = c * tf.sigmoid(f + self._forget_bias) + tf.sigmoid(i) * g
        if self._layer_norm:
            new_c = self._norm(new_c, "state", dtype)
        new_h = self._activation(new_c) * tf.sigmoid(o)
        return new_h, legacy_cells.LSTMStateTuple(new_c, new_h)
