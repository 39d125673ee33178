"""One variable per TF1 name, created on the first trace and reused by every later trace.

A TF1 `model_fn` calls `tf.compat.v1.get_variable`, `tf.compat.v1.layers` and v1 optimizers,
all of which create variables every time the function is traced. Inside our `tf.function`s a
variable creator (entered in the traced body, inside `strategy.scope()`) intercepts each
creation: the first time a TF1 name is seen the variable is created for real (through the
strategy, so it is mirrored across replicas); afterwards the stored one is returned. The
creator also files every variable in the traced graph's v1 collections, which is where
`compute_gradients`, `tf.compat.v1.trainable_variables()` and savers look for them.
"""
import contextlib

import tensorflow as tf

_v1 = tf.compat.v1
GLOBAL_STEP_NAME = "global_step"
_PER_TRACE_COLLECTIONS = (
    _v1.GraphKeys.GLOBAL_VARIABLES, _v1.GraphKeys.LOCAL_VARIABLES,
    _v1.GraphKeys.TRAINABLE_VARIABLES, _v1.GraphKeys.GLOBAL_STEP,
    ("__variable_store",), ("__varscope",))  # tf.compat.v1 variable_scope's own stores


def tf1_name(variable_or_name):
    """The TF1 graph name of a variable: no ':0' suffix, no trailing '/'.

    v1 optimizer slots arrive as 'dense/kernel/Adam/'; TF1 wrote 'dense/kernel/Adam'.
    """
    name = variable_or_name if isinstance(variable_or_name, str) else variable_or_name.name
    name = name.rstrip("/")
    return name[:-2] if name.endswith(":0") else name


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

    def named_variables(self):
        """{tf1_name: variable} of the global variables created so far (checkpoint content)."""
        return {name: v for name, v in self._variables.items() if name not in self._local}

    def reset_local_variables(self):
        """Zeroes the local variables (metric accumulators), as TF1's local initializer did."""
        for name in self._local:
            variable = self._variables[name]
            variable.assign(tf.zeros(variable.shape, variable.dtype))

    def trainable_names(self):
        return sorted(self._trainable)

    def __contains__(self, name):
        return name in self._variables

    def __len__(self):
        """How many variables (global and local) exist so far."""
        return len(self._variables)

    @contextlib.contextmanager
    def scope(self):
        """Enter in a traced body (inside `strategy.scope()`) around the model code.

        Puts the global step in the graph's GLOBAL_STEP collection, so that
        `tf.compat.v1.train.get_global_step()` finds it, and intercepts variable creation.
        """
        graph = _v1.get_default_graph()
        for key in _PER_TRACE_COLLECTIONS:
            # A FuncGraph shares these with the outer (eager) graph; detach them so every
            # trace starts with TF1's empty collections and a fresh v1 variable store.
            graph.clear_collection(key)
        _file_in_collections(graph, self.global_step,
                             [_v1.GraphKeys.GLOBAL_VARIABLES, _v1.GraphKeys.GLOBAL_STEP])
        with _v1.variable_creator_scope(self._creator):
            yield

    def _creator(self, next_creator, **kwargs):
        # Marked as used in this graph whether or not the variable is created here: creation
        # happens outside the trace, so this graph would not see the name taken otherwise.
        name = _graph_name(kwargs.get("name") or "Variable")
        variable = self._variables.get(name)
        if variable is None:
            variable = self._create(next_creator, kwargs)
            self._variables[name] = variable
            if _is_trainable(kwargs):
                self._trainable.add(name)
            if _v1.GraphKeys.LOCAL_VARIABLES in (kwargs.get("collections") or ()):
                self._local.add(name)
        collections = list(kwargs.get("collections") or [_v1.GraphKeys.GLOBAL_VARIABLES])
        if name in self._trainable and _v1.GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections.append(_v1.GraphKeys.TRAINABLE_VARIABLES)
        _file_in_collections(_v1.get_default_graph(), variable, collections)
        return variable


    @staticmethod
    def _create(next_creator, kwargs):
        """Creates the variable for real through the strategy's creator (so it is mirrored).

        Only the first trace of a `tf.function` may create variables; the engine traces each
        of its functions exactly once. Initial values are computed outside the trace: a traced
        tensor is replaced by its constant value; one that is not constant is left for
        tf.function to lift (which works for single-device variables).
        """
        initial_value = kwargs.get("initial_value")
        if isinstance(initial_value, tf.Tensor) and tf.is_symbolic_tensor(initial_value):
            constant = tf.get_static_value(initial_value)
            if constant is None:
                return next_creator(**kwargs)
            kwargs = dict(kwargs, initial_value=constant)
        with tf.init_scope():
            return next_creator(**kwargs)


def _graph_name(requested):
    """The TF1 name a variable requested as `requested` gets in the current graph.

    `get_variable` asks for its full name at the root name scope; `tf.Variable`-style
    creation (tf.compat.v1.metrics, user code) asks for a name relative to the current name
    scope, uniquified as TF1 did ('mean/total', 'mean_1/total'); a trailing '/' means
    absolute. The name is marked as used, so later names are the same in every trace.
    """
    if requested.endswith("/"):
        return requested.rstrip("/")
    return _v1.get_default_graph().unique_name(requested, mark_as_used=True)


def _is_trainable(creator_kwargs):
    trainable = creator_kwargs.get("trainable")
    if trainable is None:  # the v1 default: trainable unless synchronised on read
        return creator_kwargs.get("synchronization") != tf.VariableSynchronization.ON_READ
    return bool(trainable)


def _file_in_collections(graph, variable, collections):
    for key in collections:
        if not any(existing is variable for existing in graph.get_collection(key)):
            graph.add_to_collection(key, variable)
