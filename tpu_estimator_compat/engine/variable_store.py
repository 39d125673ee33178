"""One variable per TF1 name, created on the first trace and reused by every later trace.

A TF1 `model_fn` calls `tf.compat.v1.get_variable`, `tf.compat.v1.layers` and v1 optimizers,
all of which create variables every time the function is traced. While the step is traced a
variable creator (`creating_variables()`, entered eagerly inside `strategy.scope()` around
the whole trace, so that it also sees creations under `tf.init_scope()`, e.g. by
`ExponentialMovingAverage.apply`) intercepts each creation: the first time a TF1 name is
seen the variable is created for real, eagerly (through the strategy, so it is mirrored
across replicas); afterwards the stored one is returned. The creator also files every
variable in the traced graph's v1 collections (`prepare_graph()`), which is where
`compute_gradients`, `tf.compat.v1.trainable_variables()` and savers look for them.
"""
import contextlib
import functools
import sys
import threading

import tensorflow as tf

from tpu_estimator_compat.api import optimizers
from tpu_estimator_compat.engine import step_graph
from tpu_estimator_compat.tf1_behaviour.variables import GLOBAL_STEP_NAME
from tpu_estimator_compat.tf1_behaviour.variables import tf1_name

_v1 = tf.compat.v1


class VariableStore:
    """Owns the model's variables, keyed by TF1 name, across all traces and modes."""

    def __init__(self, strategy):
        """Creates the int64 global step (eagerly, mirrored by `strategy`)."""
        self._strategy = strategy
        with strategy.scope():
            self.global_step = tf.Variable(
                0, dtype=tf.int64, trainable=False, name=GLOBAL_STEP_NAME,
                aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
        self._variables = {GLOBAL_STEP_NAME: self.global_step}
        self._trainable = set()
        self._local = set()  # LOCAL_VARIABLES (metric accumulators): never checkpointed
        self._added = set()  # registered by add_variable (embedding tables)
        self._graph = None  # the graph being traced
        self._resolved_names = {}  # in that trace: requested name -> replica 0's names
        self._name_requests = {}  # replica -> requested name -> how many times requested
        self._creating = threading.local()  # set while this thread creates a variable
        self._sync_hooks = []  # (before_read, after_restore) of variables kept elsewhere

    def named_variables(self):
        """{tf1_name: variable} of the global variables created so far (checkpoint content),
        their values current (a TPU's embedding tables copied back)."""
        for before_read, _ in self._sync_hooks:
            before_read()
        return {name: v for name, v in self._variables.items() if name not in self._local}

    def model_variables(self):
        """{tf1_name: variable} of the global variables the model's code created (not the
        tables registered by `add_variable`), as they are (no sync hook runs)."""
        return {name: v for name, v in self._variables.items()
                if name not in self._local and name not in self._added}

    def all_variables(self):
        """{tf1_name: variable} of every variable (global, local, registered), as they are."""
        return dict(self._variables)

    def add_sync_hooks(self, before_read, after_restore):
        """For variables whose live values are kept elsewhere (a TPU's embedding memory):
        `before_read()` copies them into the variables before `named_variables()` is read,
        `after_restore()` copies restored values back."""
        self._sync_hooks.append((before_read, after_restore))

    def restored(self):
        """Call after restoring values into the variables."""
        for _, after_restore in self._sync_hooks:
            after_restore()

    def reset_local_variables(self):
        """Zeroes the local variables (metric accumulators), as TF1's local initializer did."""
        for name in self._local:
            variable = self._variables[name]
            variable.assign(tf.zeros(variable.shape, variable.dtype))

    def add_variable(self, name, variable):
        """Registers a variable created elsewhere (an embedding table) under its TF1 name: it
        is saved and restored with the others, and filed in no collection."""
        existing = self._variables.setdefault(name, variable)
        self._added.add(name)
        if existing is not variable:
            raise ValueError(f"Two variables are named {name!r}: the model's and an embedding "
                             "table's. Rename the model's variable.")

    def trainable_names(self):
        return sorted(self._trainable)

    def __contains__(self, name):
        return name in self._variables

    def __len__(self):
        """How many variables (global and local) exist so far."""
        return len(self._variables)

    @contextlib.contextmanager
    def creating_variables(self):
        """Enter eagerly, inside `strategy.scope()`, around a trace of the model's step."""
        with _v1.variable_creator_scope(self._creator):
            yield

    @contextlib.contextmanager
    def creating_variables_in_replica(self):
        """Enter in the replica function: intercepts creation before MirroredStrategy's
        per-replica creator (which hands replicas > 0 replica 0's variables unseen), and
        under `tf.init_scope()` too (a replica thread's eager context has no creator)."""
        with contextlib.ExitStack() as stack:
            with tf.init_scope():
                stack.enter_context(_v1.variable_creator_scope(self._creator))
            stack.enter_context(_v1.variable_creator_scope(self._creator))
            yield

    def prepare_graph(self):
        """Call in the graph being traced, before the model code (and in each replica
        function): puts the global step in its GLOBAL_STEP collection (for
        `tf.compat.v1.train.get_global_step()`) and makes it the graph variables are filed
        in."""
        graph = _v1.get_default_graph()
        if graph is not self._graph:  # a new trace
            self._graph, self._resolved_names, self._name_requests = graph, {}, {}
        _file_in_collections(self._graph, self.global_step,
                             [_v1.GraphKeys.GLOBAL_VARIABLES, _v1.GraphKeys.GLOBAL_STEP])

    def _resolve_name(self, graph, requested):
        """The TF1 name of a variable requested as `requested`, the same on every replica.

        Replica 0 (and cross-replica code) names it in the graph as TF1 did (`_graph_name`;
        marked as used whether or not the variable is created here: creation happens outside
        the trace, so the graph would not see the name taken otherwise). Replica r's k-th
        request of a name gets what replica 0's k-th request of it got, as all replicas run
        the same code.
        """
        replica = step_graph.current_replica()
        if replica == 0:
            name = _graph_name(graph, requested)
            self._resolved_names.setdefault(requested, []).append(name)
            return name
        requests = self._name_requests.setdefault(replica, {})
        index = requests.get(requested, 0)
        requests[requested] = index + 1
        resolved = self._resolved_names.get(requested, [])
        if index >= len(resolved):
            raise RuntimeError(
                f"Replica {replica}'s model_fn creates a variable {requested!r} that replica "
                "0's did not: every replica must build the same model.")
        return resolved[index]

    def _creator(self, next_creator, **kwargs):
        if getattr(self._creating, "active", False):  # our creator again, further down
            return next_creator(**kwargs)
        graph = self._graph or _v1.get_default_graph()
        name = self._resolve_name(graph, kwargs.get("name") or "Variable")
        variable = self._variables.get(name)
        if variable is None:
            self._creating.active = True
            try:
                variable = self._create(next_creator, kwargs, graph)
            finally:
                self._creating.active = False
            self._variables[name] = variable
            if _is_trainable(kwargs):
                self._trainable.add(name)
            if _v1.GraphKeys.LOCAL_VARIABLES in (kwargs.get("collections") or ()):
                self._local.add(name)
        optimizers.note_variable_requested(variable)
        collections = list(kwargs.get("collections") or [_v1.GraphKeys.GLOBAL_VARIABLES])
        if name in self._trainable and _v1.GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections.append(_v1.GraphKeys.TRAINABLE_VARIABLES)
        _file_in_collections(graph, variable, collections)
        return variable

    def _create(self, next_creator, kwargs, graph):
        """Creates the variable for real, eagerly, through the strategy (so it is mirrored).

        Initial values are computed outside the trace: a traced tensor is replaced by its
        constant value. An initializer (`get_variable(initializer=...)`, an initial value
        given as a function) is first built in the traced `graph`, as TF1 built it in the
        model's graph: its random ops take TF1's seeds there (graph seed, and the graph's
        count of unseeded random ops for an op given no seed) and draw as graph ops (one
        seeded initializer gives two variables the same values), not as eager ops (where
        a kernel run again with the same seeds continues its sequence). The traced graph
        only runs what the step fetches, so these ops stay out of the step. Zeros, ones and
        constants (most of a model's variables: biases, optimizer slots) take no seed and
        are computed eagerly at once. Where the
        strategy is not in force (a replica thread's eager context, under
        `tf.init_scope()`), the variable is created in its scope.
        """
        if callable(kwargs.get("caching_device")):
            # A device function (`tf.nn.dynamic_rnn` sets one on its variable scope) cannot
            # place an eager variable's reads; it only chose where TF1 graphs cached them.
            kwargs = dict(kwargs, caching_device=None)
        initial_value = kwargs.get("initial_value")
        if _is_constant_initializer(initial_value):
            with tf.init_scope():  # no random op: no op seed to take in the graph
                kwargs = dict(kwargs, initial_value=initial_value())
        elif callable(initial_value) and not hasattr(initial_value, "checkpoint_position"):
            # Outside control dependencies, as TF1's `init_scope` built initializers.
            with graph.as_default(), tf.control_dependencies(None):
                kwargs = dict(kwargs, initial_value=initial_value())
        with tf.init_scope():  # eager_value must run eagerly, not add a call to the trace
            initial_value = kwargs.get("initial_value")
            if isinstance(initial_value, tf.Tensor) and tf.is_symbolic_tensor(initial_value):
                constant = tf.get_static_value(initial_value)
                kwargs = dict(kwargs, initial_value=(
                    step_graph.eager_value(initial_value) if constant is None else constant))
            if tf.distribute.get_strategy() is not self._strategy:
                with self._strategy.scope():
                    return _v1.Variable(**kwargs)
            return next_creator(**kwargs)


def _graph_name(graph, requested):
    """The TF1 name a variable requested as `requested` gets in `graph`.

    `get_variable` asks for its full name at the root name scope (of the graph it builds in,
    maybe one nested in `graph`); `tf.Variable`-style
    creation (tf.compat.v1.metrics, user code) asks for a name relative to the current name
    scope, uniquified as TF1 did ('mean/total', 'mean_1/total'); a trailing '/' means
    absolute. The name is marked as used, so later names are the same in every trace.
    """
    if requested.endswith("/"):
        return requested.rstrip("/")
    current = _v1.get_default_graph()
    if tf.executing_eagerly():
        # Under `tf.init_scope()` (Keras builds its layers there): the name scope is the
        # eager context's, which init_scope set to the traced one's ('sequential/dense').
        scope = tf.get_current_name_scope()
    elif current is graph:
        return graph.unique_name(requested, mark_as_used=True)
    else:
        # Created in a graph nested in the traced one (a `tf.while_loop` body: `dynamic_rnn`'s
        # cells build there): the name scope is that graph's, where `get_variable` reset it.
        scope = current.get_name_scope()
    with graph.name_scope(scope + "/" if scope else ""):
        return graph.unique_name(requested, mark_as_used=True)


def _is_constant_initializer(initial_value):
    """Whether `initial_value` is `get_variable`'s or Keras's call of a zeros, ones or
    constant initializer (their classes exactly: a subclass may draw random numbers)."""
    return (isinstance(initial_value, functools.partial)
            and type(initial_value.func) in _constant_initializer_types())


_TF_CONSTANT_INITIALIZER_TYPES = frozenset(
    type(make()) for make in (_v1.zeros_initializer, _v1.ones_initializer,
                              _v1.constant_initializer, tf.zeros_initializer,
                              tf.ones_initializer, tf.constant_initializer))


def _constant_initializer_types():
    keras = sys.modules.get("tf_keras")  # its initializers, if the program uses it
    if keras is None:
        return _TF_CONSTANT_INITIALIZER_TYPES
    return _TF_CONSTANT_INITIALIZER_TYPES | {
        keras.initializers.Zeros, keras.initializers.Ones, keras.initializers.Constant}


def _is_trainable(creator_kwargs):
    trainable = creator_kwargs.get("trainable")
    if trainable is None:  # the v1 default: trainable unless synchronised on read
        return creator_kwargs.get("synchronization") != tf.VariableSynchronization.ON_READ
    return bool(trainable)


def _file_in_collections(graph, variable, collections):
    for key in collections:
        if not any(existing is variable for existing in graph.get_collection(key)):
            graph.add_to_collection(key, variable)
