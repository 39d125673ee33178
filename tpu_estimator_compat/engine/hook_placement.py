"""What the engine needs from a call's SessionRunHooks: placing their fetches in the trace.

A TF1 hook's `before_run()` fetches tensors of the model's graph; here they must be outputs
of the traced step, so hooks are placed while the step is traced. The engine takes a
`HookPlacement` (the host's `hooks.HookRun` implements it; the engine never imports host
code) and uses it so:

    ModelEngine.compile(..., hooks)
      key     (mode, plan, input signature, hooks.trace_key)
      cached  a trace of that key, or one of the same signature that hooks.reuse() accepts
      trace   traced = hooks.new_trace(variables, session_runs), then per replica of the traced step:
                traced.enter_replica()                           first, in replica context
                ReplicaOutputs.hook_fetches =
                    traced.replica_fetches(the spec's *_hooks)   {key: tensor}

`NO_HOOKS`, the default, places nothing: its traces fetch `{}`, and are cached apart from
the traces of any `HookPlacement` (its trace_key, None, is no other's).
"""
import typing


class TracedHooks(typing.Protocol):
    """The hooks placed in one traced step (kept with it: `TracedSpec.placed_hooks`)."""

    def enter_replica(self):
        """Called first in every replica function, while the step is traced."""

    def replica_fetches(self, spec_hooks):
        """`{key: tensor}` the replica returns as `ReplicaOutputs.hook_fetches` (the same
        structure on every replica; only the first replica's values are used).

        Args:
          spec_hooks: the hooks of the spec this replica's model_fn returned for the mode.
        """


class HookPlacement(typing.Protocol):
    """The hooks of one train/evaluate/predict call, as the engine's compile sees them."""

    trace_key: typing.Hashable  # part of the trace cache key (e.g. the hook objects' ids)

    def new_trace(self, variables, session_runs) -> TracedHooks:
        """The `TracedHooks` for a step about to be traced.

        Args:
          variables: the engine's `VariableStore` (hooks read `global_step` and
            `named_variables()`).
          session_runs: the engine's `session_runs.SessionRuns`, which runs what the hooks'
            session runs outside the device loop.
        """

    def reuse(self, traced) -> bool:
        """Whether an earlier trace, whose hooks are `traced`, serves this call's hooks (it
        computes all they fetch); if so they are now placed in it."""


class _NoTracedHooks:
    def enter_replica(self):
        pass

    def replica_fetches(self, spec_hooks):
        del spec_hooks
        return {}


class _NoHooks:
    """Places nothing; reuses no trace made for hooks."""
    trace_key = None

    def new_trace(self, variables, session_runs):
        del variables, session_runs
        return NO_TRACED_HOOKS

    def reuse(self, traced):
        del traced
        return False


NO_TRACED_HOOKS = _NoTracedHooks()
NO_HOOKS = _NoHooks()
