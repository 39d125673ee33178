"""TF1 `Dimension`s for TF1 code, TF2 ints for all other code in the same process.

TensorFlow decides per call whether `TensorShape.__getitem__` / `__iter__` give TF1
`Dimension`s (`shape[-1].value`) or TF2 ints: it reads the module global
`tensor_shape._TENSORSHAPE_V2_OVERRIDE` (True after `import tensorflow`; reached through
`tf_internals.tensors`) and uses its truth value. `install()` puts a policy object there
whose truth value ("use TF2 shapes") is False only where TF1 code is being built:

- on a thread inside `tf1_shapes()` (the engine enters it around its calls to the user's
  model_fn, input_fn, metric_fn, host_call and scaffold_fn, which run in `tf.function`
  traces or eagerly);
- while building a graph in TF1 graph mode: a `tf.Graph().as_default()` block, or the
  global graph after `disable_eager_execution()`, including functions traced inside such a
  graph (`tf.data` map functions, `tf.cond`/`tf.while_loop` bodies).

Eager code and `tf.function` traces of plain TF2 code keep ints and `None`.
"""
import contextlib
import threading

import tensorflow as tf

from tpu_estimator_compat.tf_internals import tensors


class _ThreadState(threading.local):
    depth = 0


_STATE = _ThreadState()
_ANSWER_ATTRIBUTE = "_tpu_estimator_compat_v2_shapes"
_executing_eagerly = tf.executing_eagerly
_default_graph = tf.compat.v1.get_default_graph


class _ShapePolicy:
    """Stands in for True in `_TENSORSHAPE_V2_OVERRIDE`; truthy means "TF2 shapes"."""

    def __bool__(self):
        if _STATE.depth:
            return False
        if _executing_eagerly():
            return True
        graph = _default_graph()
        if not graph.building_function:
            return False  # A tf.Graph in graph mode: TF1 code.
        # A function graph: TF2 if traced from eager code. Fixed for the graph's life, and
        # costly to find out, so it is remembered on the graph.
        answer = getattr(graph, _ANSWER_ATTRIBUTE, None)
        if answer is None:
            answer = tf.compat.v1.executing_eagerly_outside_functions()
            setattr(graph, _ANSWER_ATTRIBUTE, answer)
        return answer

    def __repr__(self):
        return "<tpu_estimator_compat TF1-shapes-for-TF1-code policy>"


POLICY = _ShapePolicy()


def install():
    """Installs the policy unless the process chose a shape behaviour explicitly.

    An explicit `tf.compat.v1.disable_v2_tensorshape()` (or `disable_v2_behavior()`) made
    before this is left alone; one made after it replaces the policy, as it should.
    """
    if tensors.shape_override() in (True, None):
        tensors.set_shape_override(POLICY)


def entered():
    """Whether this thread is inside `tf1_shapes()` (building TF1 code)."""
    return _STATE.depth > 0


def building_tf1_code():
    """Whether the code running now builds TF1 code (a TF1 graph, or a trace inside
    `tf1_shapes()`): not eager, and TF1 shapes in force."""
    return not tf.executing_eagerly() and not POLICY


def installed():
    """Whether the policy is what TensorFlow currently consults."""
    return tensors.shape_override() is POLICY


@contextlib.contextmanager
def tf1_shapes():
    """Within the block, on this thread, shapes index to TF1 `Dimension`s.

    Re-entrant. Per thread: under MirroredStrategy enter it inside the replica function
    (around the model_fn call), which runs on the replica's own thread.
    """
    _STATE.depth += 1
    try:
        yield
    finally:
        _STATE.depth -= 1
