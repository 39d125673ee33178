"""TF 1.x's `tf.contrib.rnn.stack_bidirectional_rnn` and `stack_bidirectional_dynamic_rnn`:
layers of bidirectional RNNs, each layer's depth-concatenated forward and backward outputs
the next layer's inputs, variables under `<scope or 'stack_bidirectional_rnn'>/cell_<i>/`
as in TF 1.x (so TF1 checkpoints load).

The cells and the other RNN functions of `tf.contrib.rnn` are TensorFlow's and tf_keras'
(`v1/contrib/rnn.py`).
"""
import tensorflow as tf

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
