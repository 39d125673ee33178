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

`HookRun` is the engine's `hook_placement.HookPlacement`: the engine traces with it and
never imports this code. How fetches are placed and resolved (not every fetch is a step
output: the global step and the model's variables are read on the host when asked) is in
`hook_fetches.py`. A SessionRunArgs `feed_dict` cannot be honoured and raises.

`SessionStandIn.run(fetches, feed_dict)` is what TF1's Session.run did outside the device
loop: the ops hooks, Scaffolds or program code built on the model's graph (assigns, reads,
placeholders, fed or with defaults) run on the host (`engine.session_runs`), their writes
reaching every replica's copy of the model's variables; fetches that need the step's input
are the step outputs hooks requested, as in before_run, and cannot be fed, except in
training, where ops that need it and are no such output, or that write (a train op run by
a hook, as TF-GAN's RunTrainOpsHook), run so on an input batch of their own, as TF1's
Session.run advanced the input iterator (one replica, CPU/GPU semantics only); the end of
the input met there ends training, as TF1's MonitoredSession did. Savers made in hooks'
code (`tf.compat.v1.train.Saver`, tf-slim's `assign_from_checkpoint_fn`) restore and save
through it (`legacy_patches.RecordedSaver`).

The first after_create_session() (and before_run()) of a traced step runs while the model
is traced, before the estimator restores the checkpoint; TF1 ran it after. There, session
runs read the values the variables will hold (the checkpoint's), and what they change
(writes, restores, saves) is undone and done again, in order: after_create_session()'s right
after the restore (`start()`), the first before_run()'s right before the first loop (after
the initial checkpoint, which TF1 saved before it), so the model and its checkpoints see
what TF1's order gave them.

In TRAIN, `CheckpointSaverHook`s are not called: the training loop saves on their schedule
instead (see checkpoint_saves.py).
"""
import contextlib
from typing import Any, Callable, Optional, Sequence

import numpy as np
import tensorflow as tf

from tpu_estimator_compat.state import checkpoints
from tpu_estimator_compat.state import warm_start
from tpu_estimator_compat import log as logging
from tpu_estimator_compat.tf1_behaviour import fed_iterators
from tpu_estimator_compat.tf1_behaviour import patches as legacy_patches
from tpu_estimator_compat.tf1_behaviour import shapes as tf1_shapes
from tpu_estimator_compat.tf1_behaviour import variables as tf1_variables
from tpu_estimator_compat.host import fetch_structures
from tpu_estimator_compat.host import hook_fetches
from tpu_estimator_compat.api.spec import validate_hooks  # noqa: F401  (part of this module's API)

_v1 = tf.compat.v1
_GLOBAL_STEP_FETCH = hook_fetches.Fetch("global_step")


def validate_saving_listeners(listeners):
    listeners = tuple(listeners or ())
    for listener in listeners:
        if not isinstance(listener, _v1.train.CheckpointSaverListener):
            raise TypeError(
                f"saving_listeners must be a list of CheckpointSaverListener, given: {listener}")
    return listeners


class SessionStandIn:
    """What hooks get where TF1 gave them its `tf.compat.v1.Session`.

    `run()` answers the global step, the model's variables (current values), the step
    outputs the hooks requested (values from the last loop), and runs on the host what
    needs no step input, fed `feed_dict` (see the module docstring).
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
        return self._hook_run.session_run(fetches, feed_dict)

    def restore_variables(self, restore_map, save_path):
        """What a hook's `Saver.restore(session, save_path)` does (`legacy_patches.
        RecordedSaver`): `{checkpoint name: variable}` restored from `save_path`."""
        self._hook_run.restore_variables(restore_map, save_path)

    def save_variables(self, save_map, save_path, listed, dropped):
        """What a hook's `Saver.save(session, save_path)` does: `{checkpoint name:
        variable}` written to `save_path`, the directory's state file naming `listed`
        (None: not written), the checkpoints `dropped` deleted; returns `save_path`."""
        return self._hook_run.save_variables(save_map, save_path, listed, dropped)

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False


_FEED_MESSAGE = hook_fetches.FEED_MESSAGE


class HookRun:
    """The hooks of one train/evaluate/predict call, on the host; see the module docstring.

    Args:
      mode: a ModeKeys value.
      hooks: the call's `hooks=` argument (validated; `SessionRunHook`s).
      checkpoint_path: the checkpoint the call restores, or None. Before the restore (while
        the step is traced) a hook reading the global step gets its value from there.
      on_variables_restored: called after a hook's Saver changed the variables (the
        engine's `mark_changed`).
      read_input: returns the next step input of the call's input iterator (for a
        session.run of ops that need it: a train op run by a hook).
    """

    def __init__(self, mode: str, hooks: Optional[Sequence[Any]],
                 checkpoint_path: Optional[str] = None,
                 on_variables_restored: Optional[Callable[[], None]] = None,
                 read_input: Optional[Callable[[], Any]] = None):
        self.mode = mode
        self.call_hooks = validate_hooks(hooks)
        self.coord = _v1.train.Coordinator()
        self.session = SessionStandIn(self)
        self.step_hooks = None  # the hook_fetches.StepHooks of the trace this call runs
        self.hooks = []  # the hooks this call calls, in order
        self.checkpoint_saver_hooks = []  # TRAIN: saved on their schedule by checkpoint_saves.py
        self._begun = False
        self._started = False  # the variables hold their checkpoint values
        self._checkpoint_path = checkpoint_path
        self._values = None  # {key: numpy} of the last loop that ran
        self._context = None
        self._requests = None  # [(hook, args, resolved fetches)] of the current loop
        self._pending = None  # the first loop's requests, made before the loop
        self._loop_start_step = None  # the global step before the current loop, if fetched
        # What hooks changed before start(), done again after the checkpoint's restore (the
        # first before_run()'s: before the first loop):
        # ("restore", map, path), ("save", map, path, listed, dropped), ("run", subgraph, feeds,
        # {id(variable): value written}).
        self._deferred = []
        self._first_run_from = None  # where the first before_run()'s items start in _deferred
        self._first_loop_redo = []  # those items, done again before the first loop
        # Hooks' init_from_checkpoint calls made before start().
        self._init_from_checkpoint_calls = []
        self.on_variables_restored = on_variables_restored or (lambda: None)
        self._read_input = read_input
        self._input_ended = False  # a session.run met the end of the input
        # Set by start(): each loop is one step, as each Session.run of an Estimator
        # (CPU/GPU semantics), not one TPU loop.
        self.every_step = False

    @property
    def trace_key(self):
        """Part of the engine's cache key: traces are per set of `hooks=` objects."""
        return tuple(id(hook) for hook in self.call_hooks)

    def new_trace(self, variables, session_runs):
        """The StepHooks for a new trace of the step (called by the engine)."""
        return hook_fetches.StepHooks(self, variables, session_runs)

    def begin_in_trace(self, step_hooks):
        """While the step is traced: begin(), after_create_session(), first before_run()."""
        self._use(step_hooks)
        if self.hooks:
            with _tf1_code(self._init_from_checkpoint):
                self._begin(tracing=True)

    def reuse(self, traced):
        """Places this call's hooks in an already traced step, if it computes everything
        their first before_run() fetches; returns whether it does (else the engine traces
        the model again, and these hooks are begun a second time there). A trace made
        without hooks (`hook_placement.NO_HOOKS`) has no graph to place them in.
        """
        if not isinstance(traced, hook_fetches.StepHooks):
            return False
        self._use(traced)
        if not self.hooks:
            return True
        deferred = len(self._deferred)
        try:
            with self._in_step_graph():
                self._begin(tracing=False)
        except hook_fetches.NotComputedError as e:
            logging.info("Tracing the model again for the hooks: %s", str(e).split(":")[0])
            self._begun, self._pending = False, None
            del self._deferred[deferred:]  # the hooks are begun again in the new trace
            return False
        return True

    def _use(self, step_hooks):
        self.step_hooks = step_hooks
        self.hooks, self.checkpoint_saver_hooks = step_hooks.hooks_for(self.call_hooks)

    def _begin(self, tracing):
        hook_fetches.ensure_global_step_read(self.step_hooks.graph)
        with hook_fetches.variables_as_graph_elements():
            for hook in self.hooks:
                hook.begin()
        for hook in self.hooks:
            hook.after_create_session(self.session, self.coord)
        self._first_run_from = len(self._deferred)
        try:
            self._pending = self._before_run(tracing=tracing)
        except tf.errors.OutOfRangeError:
            if not self._input_ended:
                raise
            self._pending = []  # training ends before its first loop (see `before_loop`)
        self._begun = True

    def start(self, traced, scaffold=None, every_step: bool = False) -> None:
        """Once the variables hold their checkpoint values: the Scaffold's initialization if
        no checkpoint was restored (`_initialize`), what hooks' after_create_session()
        changed before (see the module docstring), then begin() and after_create_session()
        for a call whose hooks were not placed while compiling (the trace and its hooks were
        cached).

        Args:
          traced: the compiled step's StepHooks.
          scaffold: the Scaffold model_fn or scaffold_fn gave, or None.
          every_step: each loop is one training step (see `_loop_value`).
        """
        self._started = True
        self.every_step = every_step
        self._use(traced)
        for call in self._init_from_checkpoint_calls:
            self._init_from_checkpoint(*call)
        if scaffold is not None and self._checkpoint_path is None:
            self._initialize(scaffold)
        cut = len(self._deferred) if self._first_run_from is None else self._first_run_from
        self._redo(self._deferred[:cut])
        self._first_loop_redo, self._deferred = self._deferred[cut:], []
        if self._begun or not self.hooks:
            return
        with self._in_step_graph(), hook_fetches.variables_as_graph_elements():
            hook_fetches.ensure_global_step_read(traced.graph)
            for hook in self.hooks:
                hook.begin()
            for hook in self.hooks:
                hook.after_create_session(self.session, self.coord)
        self._begun = True

    def _redo(self, deferred):
        """Does again what hooks did before `start()` (`_deferred` items), in order."""
        for kind, *args in deferred:
            if kind == "restore":
                self._restore_now(*args)
            elif kind == "save":
                self._save_now(*args)
            else:  # "run": done again (it wrote `args[2]` before)
                self._run_now(*args[:2])

    def _init_from_checkpoint(self, ckpt_dir_or_file, assignment_map):
        """`tf.compat.v1.train.init_from_checkpoint` in a hook: it changed the variables'
        initializers, so it acts only when no checkpoint is restored, before the
        Scaffold's init_fn (at `start()` if called before)."""
        if self._checkpoint_path is not None:
            return
        if not self._started:
            self._init_from_checkpoint_calls.append((ckpt_dir_or_file, dict(assignment_map)))
            return
        with tf.init_scope():
            warm_start.init_from_checkpoint(ckpt_dir_or_file, assignment_map,
                                            self.step_hooks.variables.named_variables())
        self.on_variables_restored()

    def _initialize(self, scaffold):
        """What TF1's session manager did when no checkpoint was restored: the Scaffold's
        `init_op` fed `init_feed_dict` (the model's variables, created with their initial
        and warm-start values, have nothing left to initialize: only ops the user gave run),
        then `init_fn(scaffold, session)`; then its `ready_op` must report nothing."""
        with self._in_step_graph():
            if scaffold.init_op is not None:
                self.session.run(scaffold.init_op, feed_dict=scaffold.init_feed_dict)
            if scaffold.init_fn is not None:
                scaffold.init_fn(self.session)
            if scaffold.ready_op is not None:
                not_ready = self.session.run(scaffold.ready_op)
                if np.size(not_ready):
                    names = ", ".join(np.asarray(not_ready, dtype=bytes).ravel().astype(str))
                    raise RuntimeError(
                        "Init operations did not make model ready. The Scaffold's ready_op "
                        f"reports: {names}. Initialize them in the Scaffold's init_op or "
                        "init_fn.")

    def _in_step_graph(self):
        """Hooks are called with the step's graph as the default graph, as TF1 called them
        with the model's graph (so `get_global_step()` works in every callback); the host
        work they do is Python and numpy, and the stand-in session reads eagerly."""
        stack = contextlib.ExitStack()
        stack.enter_context(_tf1_code(self._init_from_checkpoint))
        if self.step_hooks is not None and self.step_hooks.graph is not None:
            stack.enter_context(self.step_hooks.graph.as_default())
        return stack

    def before_loop(self):
        """before_run() of every hook, for the loop about to run (with `every_step`, notes
        the global step the step starts with: see `_loop_value`)."""
        if self._pending is not None:
            # What the first before_run() did, done now: after the initial checkpoint, which
            # TF1's CheckpointSaverHook wrote in after_create_session().
            self._redo(self._first_loop_redo)
            self._first_loop_redo = []
            self._requests, self._pending = self._pending, None
        else:
            with self._in_step_graph():
                try:
                    self._requests = self._before_run(tracing=False)
                except tf.errors.OutOfRangeError:
                    if not self._input_ended:
                        raise
                    # TF1's MonitoredSession ended training normally there: no loop runs
                    # (`input_ended`), and the hooks get no after_run().
                    self._requests = []
        fetched = [fetch for _, _, fetches in self._requests
                   for fetch in fetch_structures.flatten_fetches(fetches)]
        self._loop_start_step = (self.global_step()
                                 if self.every_step and _GLOBAL_STEP_FETCH in fetched else None)

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
        """after_run() of every hook with the loop's values (its result's `hook_fetches`);
        returns whether to stop."""
        self._values = {key: _to_numpy(value) for key, value in hook_values.items()}
        options = _v1.RunOptions()
        for _, args, _ in self._requests or ():
            if args is not None and args.options is not None:
                options.MergeFrom(args.options)
        with self._in_step_graph():
            for hook, args, fetches in self._requests or ():
                results = None if fetches is None else fetch_structures.map_fetches(
                    self._loop_value, fetches)
                hook.after_run(self._context, _v1.train.SessionRunValues(
                    results=results, options=options, run_metadata=_v1.RunMetadata()))
        self._requests = None
        return self.stop_requested

    def skip_after_loop(self):
        """The loop saw only the end of the input: as TF1's run that hit OutOfRange, the
        hooks get no after_run()."""
        self._requests = None

    @property
    def input_ended(self):
        """Whether a hook's session.run met the end of the input (training then ends)."""
        return self._input_ended

    @property
    def stop_requested(self):
        return bool((self._context is not None and self._context.stop_requested)
                    or self.coord.should_stop())

    def end(self):
        with self._in_step_graph():
            for hook in self.hooks:
                hook.end(self.session)

    def restore_variables(self, restore_map, save_path):
        """A hook's Saver restores: at once, or, while the step is traced (before the
        estimator restores the checkpoint), right after that restore in `start()`, as TF1's
        after_create_session ran after the session's restore."""
        if self._started:
            self._restore_now(restore_map, save_path)
        else:
            self._deferred.append(("restore", restore_map, save_path))

    def save_variables(self, save_map, save_path, listed, dropped):
        """A hook's Saver saves: at once, or, before `start()`, after the restore there."""
        if self._started:
            return self._save_now(save_map, save_path, listed, dropped)
        self._deferred.append(("save", save_map, save_path, listed, dropped))
        return save_path

    def _save_now(self, save_map, save_path, listed, dropped):
        with tf.init_scope():
            return checkpoints.save_to_prefix(save_map, save_path, listed, dropped)

    def session_run(self, fetches, feed_dict):
        """`SessionStandIn.run`: see the module docstring."""
        if fed_iterators.run_initializers(fetches, feed_dict):  # input_fn's iterators
            return [None] * len(fetches) if isinstance(fetches, (list, tuple)) else None
        feeds = self.step_hooks.feeds(feed_dict)
        resolved = self.step_hooks.resolve(fetches, tracing=False, feeds=feeds)
        leaves = fetch_structures.flatten_fetches(resolved)
        if feeds and any(fetch.kind == "output" for fetch in leaves):
            raise NotImplementedError(_FEED_MESSAGE)
        ran = ("host", "input")
        on_host = list({id(f.value): f.value for f in leaves if f.kind in ran}.values())
        with_input = any(f.kind == "input" for f in leaves)
        values = dict(zip(map(id, on_host), self._run_on_host(on_host, feeds, with_input))) \
            if on_host else {}
        return fetch_structures.map_fetches(
            lambda f: values[id(f.value)] if f.kind in ran else self._value(f), resolved)

    def _run_on_host(self, fetches, feeds, with_input=False):
        """Runs `fetches` on the host, fed `feeds` and (`with_input`) the next step input."""
        subgraph = self.step_hooks.session_runs.prune(
            self.step_hooks.graph, fetches, [tensor for tensor, _ in feeds], with_input)
        feed_values = [value for _, value in feeds]
        if with_input:
            feed_values += tf.nest.flatten(self._next_input(), expand_composites=True)
        if self._started:
            return self._run_now(subgraph, feed_values)
        if not subgraph.writes:  # reads get the values the variables will hold
            return subgraph.run(feed_values, variable_values=self._restored_value)
        # Before the checkpoint's restore: runs on the values the variables will hold, then
        # undoes its writes; they are done again later (`start`, `before_loop`).
        used = subgraph.variables
        before = subgraph.values_of(used)
        subgraph.set_values(used, [self._restored_value(v) for v in used])
        values = subgraph.run(feed_values)
        written = {id(v): value.numpy()
                   for v, value in zip(subgraph.written, subgraph.values_of(subgraph.written))}
        subgraph.set_values(used, before)
        self._deferred.append(("run", subgraph, feed_values, written))
        return values

    def _next_input(self):
        """The call's next step input; at its end TF1's OutOfRangeError (training then ends
        as at the end of the input: see `before_loop`)."""
        with tf.init_scope():  # eagerly, also while the step is traced
            try:
                return self._read_input()
            except (StopIteration, tf.errors.OutOfRangeError):
                self._input_ended = True
                raise tf.errors.OutOfRangeError(
                    None, None, "End of sequence: the input ended in a hook's "
                    "session.run()") from None

    def _run_now(self, subgraph, feed_values):
        values = subgraph.run(feed_values)
        if subgraph.written:
            self.on_variables_restored()
        return values

    def _restore_now(self, restore_map, save_path):
        with tf.init_scope():
            logging.info("Restoring parameters from %s (a hook's Saver)", save_path)
            checkpoints.restore(restore_map, save_path)
        self.on_variables_restored()

    def global_step(self):
        with tf.init_scope():  # hooks may be running in the step's graph
            if not self._started and self._checkpoint_path is not None:
                # Still tracing: the variables do not hold the checkpoint's values yet.
                return np.int64(checkpoints.load_variable(self._checkpoint_path, "global_step"))
            return np.int64(self.step_hooks.variables.global_step.numpy())

    def _restored_value(self, variable):
        """While tracing, before the variables hold their checkpoint's values: the value
        `variable` will hold once the checkpoint and the hooks' Savers have restored it."""
        for kind, *args in reversed(self._deferred):
            if kind == "restore":
                for name, restored in args[0].items():
                    if restored is variable:
                        return checkpoints.load_variable(args[1], name)
            elif kind == "run" and id(variable) in args[2]:
                return args[2][id(variable)]
        with tf.init_scope():
            if self._checkpoint_path is not None:
                try:
                    return checkpoints.load_variable(self._checkpoint_path,
                                                     tf1_variables.tf1_name(variable))
                except tf.errors.NotFoundError:
                    pass  # not restored from the checkpoint (a Scaffold's Saver)
            return variable.read_value().numpy()

    def _loop_value(self, fetch):
        """A before_run() fetch's value in after_run(). The global step: with `every_step`,
        its value before the step, as TF1's Session.run of one step read it before the train
        op incremented it; per TPU loop, its value after the loop, as the original's own
        step log read it (`session.run` in after_run: always the current value)."""
        if fetch == _GLOBAL_STEP_FETCH and self._loop_start_step is not None:
            return self._loop_start_step
        return self._value(fetch)

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
            if not self._started:
                return self._restored_value(fetch.value)
            with tf.init_scope():
                return fetch.value.read_value().numpy()
        return fetch.value  # 'operation' (None) or 'constant'


def _to_numpy(value):
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def _tf1_code(init_from_checkpoint):
    """Hooks' callbacks are TF1 code, as model_fn is: TF1 shapes and hashable variables
    (`ema.variables_to_restore()`), Savers that restore through the session stand-in, and
    `tf.compat.v1.train.init_from_checkpoint` calling `init_from_checkpoint`."""
    stack = contextlib.ExitStack()
    stack.enter_context(tf1_shapes.tf1_shapes())
    stack.enter_context(legacy_patches.recorded_savers(init_from_checkpoint))
    return stack
