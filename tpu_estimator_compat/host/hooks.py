"""TF1 `SessionRunHook`s driven once per device loop, as the original drove them once per
`Session.run` (and a TPU `Session.run` ran a whole loop).

One `HookRun` serves one train/evaluate/predict call; its hooks are the `hooks=` argument
followed by the spec's `training_hooks`/`evaluation_hooks`/`prediction_hooks`:

    begin()                         in the step's graph: while the step is traced, or, when
                                    the trace is cached, in that graph re-entered (TF1 allows
                                    a second begin() on the same graph)
    after_create_session(s, coord)  s: a `SessionStandIn`; coord: a real Coordinator
    per device loop (on the host):
      before_run(ctx)               -> SessionRunArgs whose fetches are extra outputs of the
                                       traced step: replica 0's values from the loop's last
                                       step (eval/predict: its last step with real examples)
      <the loop runs>
      after_run(ctx, SessionRunValues(results=numpy, options, run_metadata))
                                    (eval/predict: not for a loop that only saw the end of
                                    the input, as TF1's run that hit OutOfRange)
      ctx.request_stop() / coord.request_stop() -> the call stops after this loop
    end(s)                          after the last loop, unless an error ended the call

Train runs a loop per `iterations_per_loop` steps (plain Estimator: per step), evaluate one
loop in all, predict a loop per `iterations_per_loop` batches. Every callback runs with the
step's graph as the default graph, so `tf.compat.v1.train.get_global_step()` works in each.

The traced step can only compute what it was traced with, so the fetches are learned at
trace time: each hook's begin(), after_create_session() and FIRST before_run() are called
inside the trace, and that before_run() serves the first loop (every hook still sees one
before_run per loop). Later before_run() calls may return any subset of those fetches. New
`hooks=` objects on a signature traced before are first begun in that cached trace: if it
computes all they fetch (the global step, or what earlier hooks fetched) nothing is traced;
otherwise the model is traced again and their begin(), after_create_session() and first
before_run() run once more there. Hooks must not create variables.

Not every fetch is a step output: the global step (the variable or its read tensor, e.g.
StopAtStepHook's) and the model's variables are read on the host when asked (the value after
the loop), `tf.Operation`s give None (the step runs whatever it runs), eager tensors give
their value. A `feed_dict` cannot be honoured and raises. `SessionStandIn.run` answers the
same fetches and nothing else. In TRAIN, `CheckpointSaverHook`s are not called: the
training loop saves on their schedule instead (see training.py).
"""
import contextlib
import dataclasses

import numpy as np
import tensorflow as tf
from tensorflow.python.training import basic_session_run_hooks

from tpu_estimator_compat.state import checkpoints
from tpu_estimator_compat import log as logging
from tpu_estimator_compat.tf1 import shapes as tf1_shapes
from tpu_estimator_compat.engine import variable_store
from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.api.spec import validate_hooks  # noqa: F401  (part of this module's API)

_v1 = tf.compat.v1
# training_util.GLOBAL_STEP_READ_KEY: where _get_or_create_global_step_read() caches its tensor.
_GLOBAL_STEP_READ_KEY = "global_step_read_op_cache"


def validate_saving_listeners(listeners):
    listeners = tuple(listeners or ())
    for listener in listeners:
        if not isinstance(listener, _v1.train.CheckpointSaverListener):
            raise TypeError(
                f"saving_listeners must be a list of CheckpointSaverListener, given: {listener}")
    return listeners


class NotComputedError(ValueError):
    """A hook fetched a tensor of the step's graph that the traced loop does not output."""


@dataclasses.dataclass(frozen=True)
class _Fetch:
    """How one fetched leaf gets its value: kind is 'output' (a step output, `key`),
    'global_step', 'variable' (`value` is the variable), 'operation' (None) or 'constant'."""
    kind: str
    key: str = None
    value: object = None


class StepHooks:
    """The step outputs computed for the hooks of one traced step, and its graph.

    Made by the engine for each compiled step; `enter_replica` and `replica_outputs` run in
    the replica function while the step is traced (once: see `step_graph`). The hooks are
    placed by the first replica: their fetches become step outputs.
    """

    def __init__(self, run, engine):
        self.mode = run.mode
        self.traced_by = run
        self.store = engine.store
        self.graph = None  # the graph the hooks were placed in
        self.spec_hooks = []  # the hooks of the spec model_fn returned in that trace
        self.outputs = {}  # key -> replica-0 tensor of `graph`
        self._keys = {}  # tensor.ref() -> key
        self._first_replica_pending = False

    def enter_replica(self):
        """At the start of the replica function: notes whether this is the first replica."""
        self._first_replica_pending = self.graph is None

    def replica_outputs(self, spec_hooks):
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

    def resolve(self, fetches, tracing):
        """`fetches` (any nest of tensors, operations, variables, names) as `_Fetch` leaves.

        While tracing, tensors of the step graph become step outputs; afterwards they must be
        among those outputs.
        """
        return tf.nest.map_structure(lambda leaf: self._resolve_leaf(leaf, tracing), fetches)

    def _resolve_leaf(self, leaf, tracing):
        if isinstance(leaf, (str, bytes)):
            leaf = self._by_name(leaf.decode() if isinstance(leaf, bytes) else leaf)
            if isinstance(leaf, _Fetch):
                return leaf
        if isinstance(leaf, tf.Variable):
            if self._is_global_step(leaf):
                return _Fetch("global_step")
            return _Fetch("variable", value=leaf)
        if isinstance(leaf, tf.Operation):
            return _Fetch("operation")
        if isinstance(leaf, tf.Tensor):
            if not tf.is_symbolic_tensor(leaf):
                return _Fetch("constant", value=leaf.numpy())
            if self._is_global_step(leaf):
                return _Fetch("global_step")
            key = self._keys.get(leaf.ref())
            if key is not None:
                return _Fetch("output", key=key)
            if tracing and leaf.graph is self.graph:
                key = f"fetch_{len(self.outputs)}"
                self._keys[leaf.ref()] = key
                self.outputs[key] = leaf
                return _Fetch("output", key=key)
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

    def _by_name(self, name):
        variables = self.store.named_variables()
        base = name[:-2] if name.endswith(":0") else name
        if base in variables:
            return _Fetch("global_step") if base == variable_store.GLOBAL_STEP_NAME else \
                _Fetch("variable", value=variables[base])
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
            return (value is self.store.global_step or
                    variable_store.tf1_name(value) == variable_store.GLOBAL_STEP_NAME)
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
def _variables_as_graph_elements():
    """Lets LoggingTensorHook take variables (`{'step': get_global_step()}`) in begin().

    TF1 variables were graph elements; ours are created eagerly, so the hook's check that a
    tensor belongs to the current graph would reject them. They are read on the host.
    """
    original = getattr(basic_session_run_hooks, "_as_graph_element", None)
    if original is None:
        yield
        return

    def as_graph_element(obj):
        return obj if isinstance(obj, tf.Variable) else original(obj)

    basic_session_run_hooks._as_graph_element = as_graph_element  # pylint: disable=protected-access
    try:
        yield
    finally:
        basic_session_run_hooks._as_graph_element = original  # pylint: disable=protected-access


def _zeros_like(tensor):
    shape = [0 if dim is None else dim for dim in tensor.shape.as_list()] \
        if tensor.shape.rank is not None else []
    return tf.zeros(shape, tensor.dtype)


class SessionStandIn:
    """What hooks get where TF1 gave them its `tf.compat.v1.Session`.

    `run()` answers only what the host has: the global step, the model's variables (current
    values), and the step outputs the hooks requested (values from the last loop). Anything
    else raises, since no graph can be run outside the traced device loop.
    """

    def __init__(self, hook_run):
        self._hook_run = hook_run

    @property
    def graph(self):
        """The traced step's graph (a FuncGraph), where the hooks' tensors live."""
        step_hooks = self._hook_run.step_hooks
        return step_hooks.graph if step_hooks is not None else None

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        del options, run_metadata
        if feed_dict:
            raise NotImplementedError(_FEED_MESSAGE)
        resolved = self._hook_run.step_hooks.resolve(fetches, tracing=False)
        return self._hook_run.values_of(resolved)

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False


_FEED_MESSAGE = (
    "tpu_estimator_compat cannot feed values into the traced device loop (a SessionRunArgs "
    "or session.run feed_dict). Produce the values in input_fn or model_fn instead.")


class HookRun:
    """The hooks of one train/evaluate/predict call, on the host; see the module docstring.

    Args:
      mode: a ModeKeys value.
      hooks: the call's `hooks=` argument (validated; `SessionRunHook`s).
      checkpoint_path: the checkpoint the call restores, or None. Before the restore (while
        the step is traced) a hook reading the global step gets its value from there.
    """

    def __init__(self, mode, hooks, checkpoint_path=None):
        self.mode = mode
        self.call_hooks = validate_hooks(hooks)
        self.coord = _v1.train.Coordinator()
        self.session = SessionStandIn(self)
        self.step_hooks = None
        self.hooks = []  # the hooks this call calls, in order
        self.checkpoint_saver_hooks = []  # TRAIN: saved on their schedule by training.py
        self._begun = False
        self._checkpoint_path = checkpoint_path
        self._tracing_engine = None
        self._engine = None
        self._values = None  # {key: numpy} of the last loop that ran
        self._context = None
        self._requests = None  # [(hook, args, resolved fetches)] of the current loop
        self._pending = None  # the first loop's requests, made before the loop

    @property
    def trace_key(self):
        """Part of the engine's cache key: traces are per set of `hooks=` objects."""
        return tuple(id(hook) for hook in self.call_hooks)

    def new_step_hooks(self, engine):
        """The StepHooks for a new trace of the step on `engine` (called by the engine)."""
        self._tracing_engine = engine
        return StepHooks(self, engine)

    def begin_in_trace(self, step_hooks):
        """While the step is traced: begin(), after_create_session(), first before_run()."""
        self._use(step_hooks)
        if self.hooks:
            self._begin(tracing=True)

    def try_attach(self, engine, step_hooks):
        """Places this call's hooks in an already traced step, if it computes everything
        their first before_run() fetches; returns whether it does (else the caller traces
        the model again, and these hooks are begun a second time there).
        """
        self._tracing_engine = engine
        self._use(step_hooks)
        if not self.hooks:
            return True
        try:
            with self._in_step_graph():
                self._begin(tracing=False)
        except NotComputedError as e:
            logging.info("Tracing the model again for the hooks: %s", str(e).split(":")[0])
            self._begun, self._pending = False, None
            return False
        return True

    def _use(self, step_hooks):
        self.step_hooks = step_hooks
        self.hooks, self.checkpoint_saver_hooks = step_hooks.hooks_for(self.call_hooks)

    def _begin(self, tracing):
        ensure_global_step_read(self.step_hooks.graph)
        with _variables_as_graph_elements():
            for hook in self.hooks:
                hook.begin()
        for hook in self.hooks:
            hook.after_create_session(self.session, self.coord)
        self._pending = self._before_run(tracing=tracing)
        self._begun = True

    def start(self, engine, step_hooks):
        """Once the variables hold their checkpoint values: begin() and
        after_create_session() for a call whose hooks were not placed while compiling (the
        trace and its hooks were cached)."""
        self._engine = engine
        if self._begun or step_hooks is None:
            return
        self._use(step_hooks)
        if not self.hooks:
            return
        with self._in_step_graph(), _variables_as_graph_elements():
            ensure_global_step_read(step_hooks.graph)
            for hook in self.hooks:
                hook.begin()
            for hook in self.hooks:
                hook.after_create_session(self.session, self.coord)
        self._begun = True

    def _in_step_graph(self):
        """Hooks are called with the step's graph as the default graph, as TF1 called them
        with the model's graph (so `get_global_step()` works in every callback); the host
        work they do is Python and numpy, and the stand-in session reads eagerly."""
        stack = contextlib.ExitStack()
        stack.enter_context(tf1_shapes.tf1_shapes())  # TF1 code: hashable variables...
        if self.step_hooks is not None and self.step_hooks.graph is not None:
            stack.enter_context(self.step_hooks.graph.as_default())
        return stack

    def before_loop(self):
        """before_run() of every hook, for the loop about to run."""
        if self._pending is not None:
            self._requests, self._pending = self._pending, None
        else:
            with self._in_step_graph():
                self._requests = self._before_run(tracing=False)

    def _before_run(self, tracing):
        self._context = _v1.train.SessionRunContext(
            original_args=_v1.train.SessionRunArgs(None), session=self.session)
        requests = []
        for hook in self.hooks:
            args = hook.before_run(self._context)
            fetches = None
            if args is not None:
                if args.feed_dict:
                    raise NotImplementedError(f"{hook}: {_FEED_MESSAGE}")
                fetches = self.step_hooks.resolve(args.fetches, tracing=tracing)
            requests.append((hook, args, fetches))
        return requests

    def after_loop(self, hook_values):
        """after_run() of every hook with the loop's values; returns whether to stop."""
        self._values = {key: _to_numpy(value) for key, value in (hook_values or {}).items()}
        options = _v1.RunOptions()
        for _, args, _ in self._requests or ():
            if args is not None and args.options is not None:
                options.MergeFrom(args.options)
        with self._in_step_graph():
            for hook, args, fetches in self._requests or ():
                results = None if fetches is None else self.values_of(fetches)
                hook.after_run(self._context, _v1.train.SessionRunValues(
                    results=results, options=options, run_metadata=_v1.RunMetadata()))
        self._requests = None
        return self.stop_requested

    def skip_after_loop(self):
        """The loop saw only the end of the input: as TF1's run that hit OutOfRange, the
        hooks get no after_run()."""
        self._requests = None

    @property
    def stop_requested(self):
        return bool((self._context is not None and self._context.stop_requested)
                    or self.coord.should_stop())

    def end(self):
        with self._in_step_graph():
            for hook in self.hooks:
                hook.end(self.session)

    def global_step(self):
        with tf.init_scope():  # hooks may be running in the step's graph
            if self._engine is not None:
                return np.int64(self._engine.global_step)
            # Still tracing: the variables do not hold the checkpoint's values yet.
            if self._checkpoint_path is not None:
                return np.int64(checkpoints.load_variable(self._checkpoint_path, "global_step"))
            return np.int64(self._tracing_engine.global_step)

    def values_of(self, resolved):
        return tf.nest.map_structure(self._value, resolved)

    def _value(self, fetch):
        if fetch.kind == "output":
            if self._values is None:
                raise RuntimeError(
                    "The model's tensors have no values before the first device loop has run "
                    "(only the global step and variables can be read in begin/"
                    "after_create_session).")
            return self._values[fetch.key]
        if fetch.kind == "global_step":
            return self.global_step()
        if fetch.kind == "variable":
            with tf.init_scope():
                return fetch.value.read_value().numpy()
        return fetch.value  # 'operation' (None) or 'constant'


def _to_numpy(value):
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)
