"""TF 1.x's `tf.contrib.crf`: a linear-chain conditional random field, which TensorFlow 2
dropped with contrib.

`inputs` (or `potentials`) are unary scores [batch, max_seq_len, num_tags] and
`transition_params` [num_tags, num_tags] the score of tag i followed by tag j. A tag sequence
`y` of a sequence of length L scores `sum_{t<L} inputs[t, y_t] + sum_{0<t<L}
transition_params[y_{t-1}, y_t]`; positions from L on are ignored. `crf_log_norm` is the
log-sum-exp of that score over all tag sequences (the forward algorithm in log space),
`crf_decode` (in the graph) and `viterbi_decode` (numpy) find the best sequence (Viterbi).
As in TF 1.x, a sequence of length 0 has score and log norm 0, and `crf_decode` decodes it
as one of length 1; its decoded tags are 0 from position max(L, 1) on.
"""
import numpy as np
import tensorflow as tf

from tpu_estimator_compat.tf_internals import keras_and_slim

_RNNCell = keras_and_slim.legacy_rnn_cells().RNNCell


def _mask(sequence_lengths, max_seq_len, dtype):
    return tf.sequence_mask(sequence_lengths, maxlen=max_seq_len, dtype=dtype)


def crf_unary_score(tag_indices, sequence_lengths, inputs):
    """[batch] sums of the unary scores of `tag_indices` [batch, max_seq_len]."""
    inputs = tf.convert_to_tensor(inputs, name="inputs")
    scores = tf.gather(inputs, tag_indices, batch_dims=2)  # [B, T]
    return tf.reduce_sum(
        scores * _mask(sequence_lengths, tf.shape(scores)[1], scores.dtype), axis=1)


def crf_binary_score(tag_indices, sequence_lengths, transition_params):
    """[batch] sums of the transition scores between consecutive `tag_indices`."""
    tag_indices = tf.convert_to_tensor(tag_indices, name="tag_indices")
    transition_params = tf.convert_to_tensor(transition_params, name="transition_params")
    pairs = tf.stack([tag_indices[:, :-1], tag_indices[:, 1:]], axis=-1)  # [B, T-1, 2]
    scores = tf.gather_nd(transition_params, pairs)
    mask = _mask(sequence_lengths, tf.shape(tag_indices)[1], scores.dtype)[:, 1:]
    return tf.reduce_sum(scores * mask, axis=1)


def crf_sequence_score(inputs, tag_indices, sequence_lengths, transition_params):
    """[batch] unnormalised scores of the tag sequences `tag_indices` [batch, max_seq_len]."""
    return (crf_unary_score(tag_indices, sequence_lengths, inputs)
            + crf_binary_score(tag_indices, sequence_lengths, transition_params))


def _run_masked(cell, inputs, sequence_lengths, output_padding=None):
    """Runs `cell` over time steps 1.. of `inputs` [B, T, N] from the state `inputs[:, 0]`,
    each sequence's state kept from its last step on. Returns the final states [B, N] and,
    given `output_padding` (the output past a sequence's end), the outputs [T-1, B, N].

    A while loop reading `inputs` by index (not a scan over it): XLA, as on a TPU, compiles
    its gradient when the shapes are static."""
    max_seq_len = tf.compat.dimension_value(inputs.shape[1]) or tf.shape(inputs)[1]
    lengths = tf.cast(sequence_lengths, tf.int32)[:, None]

    def step(t, state, *outputs):
        output, new_state = cell(inputs[:, t], state)
        live = t < lengths
        if outputs:
            outputs = (outputs[0].write(t - 1, tf.where(live, output, output_padding)),)
        return (t + 1, tf.where(live, new_state, state), *outputs)

    first = inputs[:, 0]
    outputs = () if output_padding is None else (tf.TensorArray(
        output_padding.dtype, size=max_seq_len - 1, element_shape=first.shape),)
    _, state, *outputs = tf.while_loop(lambda t, *_: t < max_seq_len, step,
                                       (tf.constant(1), first, *outputs),
                                       maximum_iterations=max_seq_len - 1)
    return state, (outputs[0].stack() if outputs else None)


def crf_log_norm(inputs, sequence_lengths, transition_params):
    """[batch] log partition functions: log-sum-exp of the scores of all tag sequences."""
    inputs = tf.convert_to_tensor(inputs, name="inputs")
    cell = CrfForwardRnnCell(transition_params)
    alphas, _ = _run_masked(cell, inputs, sequence_lengths)
    log_norm = tf.reduce_logsumexp(alphas, axis=1)
    return tf.where(tf.convert_to_tensor(sequence_lengths) <= 0, tf.zeros_like(log_norm),
                    log_norm)


def crf_multitag_sequence_score(inputs, tag_bitmap, sequence_lengths, transition_params):
    """[batch] log-sum-exp of the scores of all tag sequences whose tag at each step is
    allowed by `tag_bitmap` [batch, max_seq_len, num_tags] (bool)."""
    inputs = tf.convert_to_tensor(inputs, name="inputs")
    impossible = tf.fill(tf.shape(inputs), tf.constant(-np.inf, inputs.dtype))
    allowed = tf.where(tag_bitmap, inputs, impossible)
    return crf_log_norm(allowed, sequence_lengths, transition_params)


def crf_log_likelihood(inputs, tag_indices, sequence_lengths, transition_params=None):
    """(log_likelihood [batch] of `tag_indices`, transition_params). Without
    `transition_params`, makes the variable `transitions` [num_tags, num_tags] with
    `tf.compat.v1.get_variable` in the current variable scope."""
    inputs = tf.convert_to_tensor(inputs, name="inputs")
    if transition_params is None:
        num_tags = tf.compat.dimension_value(inputs.shape[2])
        transition_params = tf.compat.v1.get_variable("transitions", [num_tags, num_tags])
    sequence_scores = crf_sequence_score(inputs, tag_indices, sequence_lengths,
                                         transition_params)
    log_norm = crf_log_norm(inputs, sequence_lengths, transition_params)
    return sequence_scores - log_norm, transition_params


def crf_decode(potentials, transition_params, sequence_length):
    """(decode_tags [batch, max_seq_len] int32, best_score [batch]): the highest scoring tag
    sequences (Viterbi) and their scores."""
    potentials = tf.convert_to_tensor(potentials, name="potentials")
    num_tags = tf.compat.dimension_value(potentials.shape[2])
    forward = CrfDecodeForwardRnnCell(transition_params)
    # Past a sequence's end, each tag points back to itself: the last tag carries through.
    last_score, backpointers = _run_masked(forward, potentials, sequence_length,
                                           tf.range(num_tags)[None])  # [B, N], [T-1, B, N]
    last_tag = tf.argmax(last_score, axis=1, output_type=tf.int32)[:, None]  # [B, 1]
    backward = CrfDecodeBackwardRnnCell(num_tags)
    earlier = tf.scan(lambda tag, pointers: backward(pointers, tag)[1], backpointers,
                      initializer=last_tag, reverse=True)  # [T-1, B, 1]
    tags = tf.transpose(tf.concat([earlier, last_tag[None]], axis=0)[:, :, 0])  # [B, T]
    ends = tf.maximum(tf.cast(sequence_length, tf.int32), 1)
    tags *= _mask(ends, tf.shape(tags)[1], tf.int32)
    return tags, tf.reduce_max(last_score, axis=1)


def viterbi_decode(score, transition_params):
    """(viterbi, viterbi_score) for one sequence's unary scores `score` [seq_len, num_tags]
    (numpy, outside the graph): the best tag sequence as a list, and its score."""
    score = np.asarray(score)
    transition_params = np.asarray(transition_params)
    best = score[0]  # best score of a sequence ending in each tag
    backpointers = []
    for unary in score[1:]:
        candidates = best[:, None] + transition_params  # [previous tag, tag]
        backpointers.append(np.argmax(candidates, axis=0))
        best = unary + np.max(candidates, axis=0)
    tags = [int(np.argmax(best))]
    for pointers in reversed(backpointers):
        tags.append(int(pointers[tags[-1]]))
    return tags[::-1], np.max(best)


class _CrfCell(_RNNCell):
    """An RNN cell of a CRF's recursions, state and output [batch, num_tags]. As in TF 1.x,
    `__call__` is the step itself (not Keras' layer call) and its `scope` is unused."""

    def __init__(self, transition_params):
        super().__init__()
        self._transition_params = tf.convert_to_tensor(
            transition_params, name="transition_params")[None]  # [1, N, N]
        self._num_tags = tf.compat.dimension_value(self._transition_params.shape[1])

    @property
    def state_size(self):
        return self._num_tags

    @property
    def output_size(self):
        return self._num_tags

    def _candidates(self, state):
        """[B, previous tag, tag] scores of extending the state's sequences by one tag."""
        return state[:, :, None] + self._transition_params


class CrfForwardRnnCell(_CrfCell):
    """The forward algorithm's step: `(new_alphas, new_alphas)` from unary scores `inputs`
    [batch, num_tags] and the previous alphas `state` (log-sum-exp over previous tags)."""

    def __call__(self, inputs, state, scope=None):
        new_alphas = inputs + tf.reduce_logsumexp(self._candidates(state), axis=1)
        return new_alphas, new_alphas


class CrfDecodeForwardRnnCell(_CrfCell):
    """Viterbi's forward step: `(backpointers, new_state)` from unary scores `inputs`
    [batch, num_tags] and the previous best scores `state`; backpointers [batch, num_tags]
    (int32) hold each tag's best previous tag."""

    def __call__(self, inputs, state, scope=None):
        candidates = self._candidates(state)
        backpointers = tf.argmax(candidates, axis=1, output_type=tf.int32)
        return backpointers, inputs + tf.reduce_max(candidates, axis=1)


class CrfDecodeBackwardRnnCell(_RNNCell):
    """Viterbi's backtracking step: `(new_tags, new_tags)` [batch, 1], the tags one step
    earlier, from `inputs`, the next step's backpointers [batch, num_tags], and `state`, the
    next step's tags [batch, 1] (int32)."""

    def __init__(self, num_tags):
        super().__init__()
        self._num_tags = num_tags

    @property
    def state_size(self):
        return 1

    @property
    def output_size(self):
        return 1

    def __call__(self, inputs, state, scope=None):
        new_tags = tf.gather(inputs, state, batch_dims=1)
        return new_tags, new_tags
