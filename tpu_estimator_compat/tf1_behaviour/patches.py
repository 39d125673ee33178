"""TF1 entry points redirected while the model's code runs (tracing model_fn, scaffold_fn).

- `tf.compat.v1.train.init_from_checkpoint` cannot act inside a `tf.function` trace (it sets
  graph initializers); calls are recorded and applied eagerly to the model's variables once
  they exist, and only when model_dir has no checkpoint, as the original's initializers were.
- `tf.compat.v1.tpu.CrossShardOptimizer` / `cross_replica_sum` need a TPU kernel; code that
  imports them from plain TensorFlow gets ours, which work on any tf.distribute strategy.
- `ReplicaContext.merge_call` keeps the caller's `tf.control_dependencies`: TF1 built one
  replica's graph, where `with tf.control_dependencies(update_ops): opt.minimize(loss)`
  made the train op wait for the update ops. Under a strategy, minimize() creates its ops in
  a merge_call, on another thread that does not see the replica's control dependencies; the
  values merge_call returns are passed through an identity (or group) created under them.
  A merge_fn called from TF1 code runs as TF1 code on that thread too (tensors hash and
  compare by identity: the v1 optimizer's `apply_updates not in train_op` when TF-GAN put
  a tensor in TRAIN_OP).
- A TF2 summary writer made in model_fn (TF1 code mixing in `tf.compat.v2.summary`, as
  simclr does) lives as long as the compiled step that writes with it (it is created
  eagerly, and its resource would be destroyed with the Python object), and its `init()`
  (`with tf.control_dependencies([writer.init()])`) gives an op, as in a TF1 graph: the
  writer was initialised when it was created, so the op does nothing.
- `xla.replica_id()` (`tensorflow.compiler.tf2xla.python.xla`; simclr's cross-replica
  concatenation) is the replica's index in the strategy's sync group, an int32 like the
  XLA op's: TensorFlow's op means something only inside a replicated XLA computation (on the
  simulated TPU, XLA compiled it alone and the process crashed).
- `tf.tpu.outside_compilation(fn, ...)` (any alias: TensorFlow's implementation is
  replaced) calls `fn` and marks the ops it builds with TensorFlow's outside-compilation
  attribute, `_xla_outside_compilation`: the simulated TPU's XLA compilation leaves them to
  the host (`engine/xla_step.py`), as a TPU did. TensorFlow's own only warns outside a TPU.
- `tf.compat.v1.train.Optimizer.apply_gradients` does not sum gradients a
  CrossShardOptimizer already summed, and with TPU semantics does not sum those of an
  optimizer used without one (`api/optimizers.py`, `v1_apply_gradients`).
- `tf.compat.v1.train.Saver` built by model_fn or scaffold_fn (typically for
  `Scaffold(saver=...)`) is a `RecordedSaver`: it builds no save/restore ops, and the engine
  restores checkpoints through its var_list, as TF1's session creator did with the
  Scaffold's saver (e.g. `Saver(ema.variables_to_restore())` to evaluate moving averages).
  SessionRunHooks' Savers are `RecordedSaver`s too (`recorded_savers()`): their
  `restore(session, path)` and `save(session, path)` ask the hooks' session stand-in to
  restore or save their var_list. tf-slim's `assign_from_checkpoint_fn` builds the Saver
  of TensorFlow's saver module, which is replaced alike.
"""
import contextlib
import dataclasses
import functools

import numpy as np
import tensorflow as tf

from tpu_estimator_compat.api import optimizers
from tpu_estimator_compat.tf1_behaviour import shapes as tf1_shapes
from tpu_estimator_compat.tf1_behaviour import variables as tf1_variables
from tpu_estimator_compat.tf_internals import distribute
from tpu_estimator_compat.tf_internals import graphs
from tpu_estimator_compat.tf_internals import training
from tpu_estimator_compat.tf_internals import xla as tf_xla


@dataclasses.dataclass(frozen=True)
class InitFromCheckpointCall:
    """One recorded call, with the names of the variables that existed when it was made
    (TF1 mapped only those: a scope map in model_fn does not reach optimizer slots created
    later). `variable_names` is None when every variable existed (scaffold_fn)."""
    ckpt_dir_or_file: str
    assignment_map: dict
    variable_names: frozenset | None


@contextlib.contextmanager
def patched_rebuilt_apis(recorded_calls, kept_alive, per_replica_updates=False,
                         merge_call=None):
    """Within the block, `init_from_checkpoint` calls append to `recorded_calls`, and
    objects that must live as long as the traced step (summary writers) to `kept_alive`;
    `per_replica_updates`: v1 optimizers not wrapped in CrossShardOptimizer apply each
    replica's own gradients (TPU semantics); `merge_call(context, merge_fn, args, kwargs)`
    (default TensorFlow's) makes the merge calls, under the dependencies kept above."""
    def init_from_checkpoint(ckpt_dir_or_file, assignment_map):
        names = None
        if not tf.executing_eagerly():  # inside the model_fn trace
            names = frozenset(tf1_variables.tf1_name(v)
                              for v in tf.compat.v1.global_variables())
        recorded_calls.append(
            InitFromCheckpointCall(ckpt_dir_or_file, dict(assignment_map), names))

    def writer_kept_alive(writer, *args, **kwargs):
        _original_writer_constructor(writer, *args, **kwargs)
        kept_alive.append(writer)

    replacements = [
        (tf.compat.v1.train, "init_from_checkpoint", init_from_checkpoint),
        (tf.compat.v1.tpu, "CrossShardOptimizer", optimizers.CrossShardOptimizer),
        (tf.compat.v1.tpu, "cross_replica_sum", optimizers.cross_replica_sum),
        (tf.compat.v1.train.Optimizer, "apply_gradients",
         optimizers.v1_apply_gradients(per_replica_updates)),
        (distribute.ReplicaContext, "merge_call",
         _merge_call_keeping_dependencies(merge_call or original_merge_call)),
        (tf.compat.v1.train, "Saver", RecordedSaver),  # as recorded_savers()
        (training.saver_module, "Saver", RecordedSaver),
        (distribute.xla_module, "replica_id", _replica_id),
        (training.ResourceSummaryWriter, "init", _writer_init_as_op),
        (training.ResourceSummaryWriter, "__init__", writer_kept_alive),
        (tf_xla.tpu_replication_module, "outside_compilation_impl", _outside_compilation),
    ]
    originals = [(module, name, getattr(module, name)) for module, name, _ in replacements]
    try:
        for module, name, value in replacements:
            setattr(module, name, value)
        yield
    finally:
        for module, name, value in originals:
            setattr(module, name, value)


@contextlib.contextmanager
def recorded_savers(init_from_checkpoint):
    """Within the block, `tf.compat.v1.train.Saver` (and the module's own name, which
    tf-slim's `assign_from_checkpoint_fn` uses) is `RecordedSaver`, and
    `tf.compat.v1.train.init_from_checkpoint` is `init_from_checkpoint` (for hooks' code)."""
    replacements = [(tf.compat.v1.train, "Saver", RecordedSaver),
                    (training.saver_module, "Saver", RecordedSaver),
                    (tf.compat.v1.train, "init_from_checkpoint", init_from_checkpoint)]
    originals = [(module, name, getattr(module, name)) for module, name, _ in replacements]
    for module, name, value in replacements:
        setattr(module, name, value)
    try:
        yield
    finally:
        for module, name, value in originals:
            setattr(module, name, value)


original_merge_call = distribute.ReplicaContext.merge_call


def _replica_id():
    """`xla.replica_id()`: this replica's index in its sync group (0 outside replicas)."""
    context = tf.distribute.get_replica_context()
    return tf.cast(0 if context is None else context.replica_id_in_sync_group, tf.int32)


def _outside_compilation(is_map, computation, *args, **kwargs):  # pylint: disable=unused-argument
    """`outside_compilation(computation, *args, **kwargs)`: calls it, marking its ops."""
    return on_the_host(computation, *args, **kwargs)


def on_the_host(computation, *args, **kwargs):
    """`computation(*args, **kwargs)`, its ops marked to run outside XLA (see above)."""
    if tf.executing_eagerly():
        return computation(*args, **kwargs)
    graph = tf.compat.v1.get_default_graph()
    existing = len(graph.get_operations())  # in creation order
    result = computation(*args, **kwargs)
    for op in graph.get_operations()[existing:]:
        tf_xla.mark_outside_compilation(op)
    return result


_original_writer_init = training.ResourceSummaryWriter.init
_original_writer_constructor = training.ResourceSummaryWriter.__init__


def _writer_init_as_op(self):
    init = _original_writer_init(self)
    if init is None and not tf.executing_eagerly():
        return tf.no_op()
    return init


def _merge_call_keeping_dependencies(inner_merge_call):
    def merge_call(self, merge_fn, args=(), kwargs=None):
        if tf1_shapes.entered():
            merge_fn = _as_tf1_code(merge_fn)
        result = inner_merge_call(self, merge_fn, args, kwargs)
        graph = tf.compat.v1.get_default_graph()
        if tf.executing_eagerly() or not graphs.has_control_dependencies(graph):
            return result
        return tf.nest.map_structure(_under_current_dependencies, result)
    return merge_call


def _as_tf1_code(merge_fn):
    """`merge_fn` running as TF1 code on whichever thread the strategy merges on."""
    @functools.wraps(merge_fn)
    def tf1_merge_fn(*args, **kwargs):
        with tf1_shapes.tf1_shapes():
            return merge_fn(*args, **kwargs)
    return tf1_merge_fn


def _under_current_dependencies(value):
    if isinstance(value, tf.Operation):
        return tf.group(value)
    if isinstance(value, tf.Tensor):
        return tf.identity(value)
    return value


class RecordedSaver:
    """A `tf.compat.v1.train.Saver` made in the model's code: remembers what it restores
    and saves.

    Takes the Saver's arguments; `var_list` (None: every global variable when it is made)
    and `max_to_keep` (how many of its saves are kept and listed in the state file) have
    an effect.
    """

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5,
                 *args, **kwargs):  # pylint: disable=unused-argument
        if var_list is None:
            var_list = tf.compat.v1.global_variables()
        if isinstance(var_list, dict):
            self._by_name = dict(var_list)
        else:
            self._by_name = {tf1_variables.tf1_name(v): v for v in var_list}
        self._max_to_keep = max_to_keep
        self._saved = []  # the prefixes this Saver wrote, oldest first

    def restore_map(self):
        """`{checkpoint name: variable}`."""
        return {name: _as_variable(value) for name, value in self._by_name.items()}

    def restore(self, sess, save_path):
        """Restores the var_list from `save_path` through `sess`, which must be able to
        (the session stand-in SessionRunHooks get: see host/hooks.py)."""
        restore_variables = getattr(sess, "restore_variables", None)
        if restore_variables is None:
            raise NotImplementedError(
                f"A tf.compat.v1.train.Saver built in the model's code restores through the "
                f"session that SessionRunHooks get (after_create_session, before_run, end); "
                f"got {sess!r}. Restore from a hook, or return the Saver in "
                "Scaffold(saver=...) to have the estimator restore through it.")
        restore_variables(self.restore_map(), save_path)

    def save(self, sess, save_path, global_step=None, latest_filename=None,
             meta_graph_suffix="meta", write_meta_graph=True, write_state=True,
             *args, **kwargs):  # pylint: disable=unused-argument
        """Writes the var_list to `save_path` (`-<global_step>` appended when given, a
        number or the global step's variable or tensor) through `sess`, and names it in
        the directory's `checkpoint` file; returns the prefix. No `.meta` is written."""
        save_variables = getattr(sess, "save_variables", None)
        if save_variables is None:
            raise NotImplementedError(
                f"A tf.compat.v1.train.Saver built in the model's code saves through the "
                f"session that SessionRunHooks get; got {sess!r}.")
        if global_step is not None:
            if not isinstance(global_step, (int, np.integer)):
                global_step = sess.run(global_step)
            save_path = f"{save_path}-{int(global_step)}"
        saved = [path for path in self._saved if path != save_path] + [save_path]
        kept = saved[-self._max_to_keep:] if self._max_to_keep else saved
        self._saved = kept
        return save_variables(self.restore_map(), save_path,
                              kept if write_state else None, saved[:len(saved) - len(kept)])


def _as_variable(value):
    if isinstance(value, (list, tuple)) and len(value) == 1:  # a one-part partitioned list
        return value[0]
    return value
