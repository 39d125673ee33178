"""The SessionRunHooks' fetches in the traced step: placing them, and resolving fetches.

While the step is traced, `StepHooks` (the host's `hook_placement.TracedHooks`) lets the
call's `HookRun` begin the hooks in the step's graph; the tensors their first before_run()
fetches become step outputs (`ReplicaOutputs.hook_fetches`). Every fetch, then and later
(before_run, `SessionStandIn.run`), resolves to a `Fetch`:

    'output'       a tensor of the step graph: a step output (replica 0's value from the
                   loop's last step); a tensor not placed while tracing raises
                   NotComputedError
    'global_step'  the global step (the variable, its read tensor, e.g. StopAtStepHook's,
                   or its name): read on the host (after_run: the value before the step
                   when hooks run every step, else after the loop; session.run: now)
    'variable'     one of the model's variables (or its name): its current value
    'operation'    None (the step runs whatever it runs)
    'constant'     an eager tensor: its value
    'host'         (session.run only) a tensor or operation of the step graph that needs
                   no step input and is no step output: run on the host now, as TF1's
                   Session ran it (`engine.session_runs`); `value` is the tensor or
                   operation
    'input'        (session.run in TRAIN only) one that needs the step's input and is no
                   step output, or that changes variables (a train op: TF-GAN's
                   RunTrainOpsHook): run now as 'host', fed an input batch of its own, as
                   TF1's Session.run advanced the input iterator (with CPU/GPU semantics
                   on one replica; refused otherwise)

A session.run's fed tensors (`feeds`) are 'constant' when fetched, and cut what a 'host'
fetch needs, as TF1's Session pruned at a feed.
"""
import contextlib
import dataclasses

import numpy as np
import tensorflow as tf

from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.host import fetch_structures
from tpu_estimator_compat.tf1_behaviour.variables import GLOBAL_STEP_NAME
from tpu_estimator_compat.tf1_behaviour.variables import tf1_name
from tpu_estimator_compat.tf_internals import training as tf_training

_v1 = tf.compat.v1
# training_util.GLOBAL_STEP_READ_KEY: where _get_or_create_global_step_read() caches its tensor.
_GLOBAL_STEP_READ_KEY = "global_step_read_op_cache"


FEED_MESSAGE = (
    "tpu_estimator_compat cannot feed values into the traced device loop (a SessionRunArgs "
    "or session.run feed_dict). Produce the values in input_fn or model_fn instead.")


class NotComputedError(ValueError):
    """A hook fetched a tensor of the step's graph that the traced loop does not output."""


@dataclasses.dataclass(frozen=True)
class Fetch:
    """How one fetched leaf gets its value: kind is 'output' (a step output, `key`),
    'global_step', 'variable' (`value` is the variable), 'operation' (None) or 'constant'."""
    kind: str
    key: str = None
    value: object = None


class StepHooks:
    """The step outputs computed for the hooks of one traced step, and its graph.

    Made by `HookRun.new_trace` for each traced step; `enter_replica` and `replica_fetches`
    run in the replica function while the step is traced (once: see `step_graph`). The
    hooks are placed by the first replica: their fetches become step outputs.

    Args:
      run: the `HookRun` whose hooks are placed (it begins them: `begin_in_trace`).
      variables: the engine's `VariableStore` (`global_step`, `named_variables()`).
      session_runs: the engine's `session_runs.SessionRuns` ('host' fetches).
    """

    def __init__(self, run, variables, session_runs):
        self.mode = run.mode
        self.traced_by = run
        self.variables = variables
        self.session_runs = session_runs
        self.graph = None  # the graph the hooks were placed in
        self.spec_hooks = []  # the hooks of the spec model_fn returned in that trace
        self.outputs = {}  # key -> replica-0 tensor of `graph`
        self._keys = {}  # tensor.ref() -> key
        self._first_replica_pending = False

    def enter_replica(self):
        """At the start of the replica function: notes whether this is the first replica."""
        self._first_replica_pending = self.graph is None

    def replica_fetches(self, spec_hooks):
        """`{key: tensor}` to return from the replica function (replica context, traced).

        Replica 0 places the hooks (begin, after_create_session, first before_run) and
        returns their fetches; the other replicas return zeros of the same structure, since
        only replica 0's values are used.
        """
        if not self._first_replica_pending:  # a later replica
            return {key: _zeros_like(tensor) for key, tensor in self.outputs.items()}
        self._first_replica_pending = False
        self.graph = _v1.get_default_graph()
        self.spec_hooks = list(spec_hooks)
        self.outputs, self._keys = {}, {}
        self.traced_by.begin_in_trace(self)
        return dict(self.outputs)

    def hooks_for(self, call_hooks):
        """(hooks HookRun calls, CheckpointSaverHooks) for a call's `hooks=` plus the spec's."""
        hooks = list(call_hooks) + list(self.spec_hooks)
        if self.mode != ModeKeys.TRAIN:
            return hooks, []
        saver_type = _v1.train.CheckpointSaverHook
        return ([h for h in hooks if not isinstance(h, saver_type)],
                [h for h in hooks if isinstance(h, saver_type)])

    def resolve(self, fetches, tracing, feeds=None):
        """`fetches` (any nest of tensors, operations, variables, names) as `Fetch` leaves.

        While tracing, tensors of the step graph become step outputs; afterwards they must be
        among those outputs. `feeds` (session.run: `feeds()`, possibly empty; before_run:
        None) allows 'host' fetches.
        """
        return fetch_structures.map_fetches(
            lambda leaf: self._resolve_leaf(leaf, tracing, feeds), fetches)

    def feeds(self, feed_dict):
        """A session.run's `feed_dict` as [(tensor of the step graph, numpy value)]."""
        fed = []
        for key, value in (feed_dict or {}).items():
            tensor = self._by_name(key) if isinstance(key, str) else key
            if not isinstance(tensor, tf.Tensor) or tensor.graph is not self.graph:
                raise TypeError(
                    f"Cannot feed {key!r}: a feed_dict key must be a tensor of the model's "
                    "graph (e.g. a placeholder a hook built in begin()) or its name.")
            if tensor.op in getattr(self.graph, "step_input_ops", ()):
                raise NotImplementedError(FEED_MESSAGE)
            fed.append((tensor, np.asarray(value, tensor.dtype.as_numpy_dtype)))
        return fed

    def _resolve_leaf(self, leaf, tracing, feeds=None):
        if isinstance(leaf, (str, bytes)):
            leaf = self._by_name(leaf.decode() if isinstance(leaf, bytes) else leaf)
            if isinstance(leaf, Fetch):
                return leaf
        if isinstance(leaf, tf.distribute.DistributedValues) and feeds is not None \
                and not isinstance(leaf, tf.Variable):
            # What an op on a mirrored variable returns in cross-replica code (an assign
            # to every replica's copy): runs every replica's, answers the first's value.
            first, *others = leaf.values
            with self.graph.as_default(), tf.control_dependencies(others):
                leaf = tf.identity(first)
        if isinstance(leaf, tf.Variable) and feeds is not None and self._in_graph(leaf):
            with self.graph.as_default():  # what an assign returned: its read after it
                leaf = tf.convert_to_tensor(leaf)
        if isinstance(leaf, tf.Variable):
            if self._is_global_step(leaf):
                return Fetch("global_step")
            return Fetch("variable", value=leaf)
        if feeds is not None and isinstance(leaf, (tf.Tensor, tf.Operation)) \
                and getattr(leaf, "graph", None) is self.graph:
            fed = [value for tensor, value in feeds if tensor is leaf]
            if fed:
                return Fetch("constant", value=fed[0])
            kind = None if self._is_global_step(leaf) else self.session_runs.kind(
                self.graph, leaf, [tensor for tensor, _ in feeds])
            if isinstance(leaf, tf.Tensor) and leaf.ref() in self._keys \
                    and kind != "input_writes":
                return Fetch("output", key=self._keys[leaf.ref()])  # the last loop's value
            if kind == "host":
                return Fetch("host", value=leaf)
            if kind in ("input", "input_writes") and self.mode == ModeKeys.TRAIN:
                self.session_runs.check_input_runs(leaf)
                return Fetch("input", value=leaf)
        if isinstance(leaf, tf.Operation):
            return Fetch("operation")
        if isinstance(leaf, tf.Tensor):
            if not tf.is_symbolic_tensor(leaf):
                return Fetch("constant", value=leaf.numpy())
            if self._is_global_step(leaf):
                return Fetch("global_step")
            key = self._keys.get(leaf.ref())
            if key is not None:
                return Fetch("output", key=key)
            if tracing and leaf.graph is self.graph:
                key = f"fetch_{len(self.outputs)}"
                self._keys[leaf.ref()] = key
                self.outputs[key] = leaf
                return Fetch("output", key=key)
            if leaf.graph is not self.graph:
                raise ValueError(
                    f"A hook fetched {leaf}, which is not a tensor of the model's step graph "
                    "(tensors of a nested tf.cond/while_loop body, of another graph or of "
                    "another replica cannot be fetched). Fetch a tensor model_fn built at "
                    "its top level, or its name.")
            raise NotComputedError(
                f"A hook fetched {leaf}, which the traced device loop does not compute: "
                "tpu_estimator_compat learns the tensors to compute from each hook's FIRST "
                "before_run() (called when the model's step is traced); later before_run() "
                "calls and session.run() can only get those. Request every tensor you may "
                "need in the first before_run() (e.g. return the same fetches every time and "
                "ignore the values you skip).")
        raise TypeError(
            f"Fetch argument {leaf!r} has invalid type {type(leaf)}: a hook may fetch "
            "tensors, operations, variables or their names.")

    def _in_graph(self, variable):
        """Whether `variable` is a variable of the step graph, not one of the model's (what
        `v.assign(x)` returns in a graph)."""
        try:
            op = variable.op
        except (AttributeError, ValueError, RuntimeError):
            return False
        return (isinstance(op, tf.Operation) and op.graph is self.graph
                and all(variable is not v for v in self.variables.named_variables().values()))

    def _by_name(self, name):
        variables = self.variables.named_variables()
        base = name[:-2] if name.endswith(":0") else name
        if base in variables:
            return Fetch("global_step") if base == GLOBAL_STEP_NAME else \
                Fetch("variable", value=variables[base])
        if self.graph is None:
            raise ValueError(f"Cannot fetch {name!r}: the model's step has not been traced.")
        try:
            return self.graph.as_graph_element(name, allow_tensor=True, allow_operation=True)
        except (KeyError, ValueError) as e:
            raise ValueError(
                f"A hook fetched {name!r}, which names no tensor, operation or variable of "
                f"the model's step graph ({e}).") from None

    def _is_global_step(self, value):
        if isinstance(value, tf.Variable):
            return (value is self.variables.global_step or
                    tf1_name(value) == GLOBAL_STEP_NAME)
        if self.graph is None:
            return False
        return any(value is read for read in self.graph.get_collection(_GLOBAL_STEP_READ_KEY))


def ensure_global_step_read(graph):
    """Puts a plain read of the global step in the graph's global-step-read cache.

    TF1 hooks (StopAtStepHook, StepCounterHook...) fetch `_get_or_create_global_step_read()`,
    which would otherwise build an is-initialized `cond` inside the replica computation. Its
    value is answered on the host anyway.
    """
    reads = graph.get_collection_ref(_GLOBAL_STEP_READ_KEY)
    reads[:] = [t for t in reads if getattr(t, "graph", None) is graph]
    global_step = _v1.train.get_global_step(graph)
    if not reads and global_step is not None:
        with graph.name_scope(None), graph.name_scope("global_step/"):
            reads.append(tf.identity(global_step, name="read_for_hooks"))


@contextlib.contextmanager
def variables_as_graph_elements():
    """Lets LoggingTensorHook take variables (`{'step': get_global_step()}`) in begin().

    TF1 variables were graph elements; ours are created eagerly, so the hook's check that a
    tensor belongs to the current graph would reject them. They are read on the host.
    """
    def taking_variables(check):
        return lambda obj: obj if isinstance(obj, tf.Variable) else check(obj)

    with tf_training.hooks_graph_element_check(taking_variables):
        yield


def _zeros_like(tensor):
    shape = [0 if dim is None else dim for dim in tensor.shape.as_list()] \
        if tensor.shape.rank is not None else []
    return tf.zeros(shape, tensor.dtype)
