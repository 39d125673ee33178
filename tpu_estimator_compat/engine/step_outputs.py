"""What the engine's traced step and device loops return: the engine/host interface.

    ReplicaOutputs        one replica's step (model_step), inside `strategy.run`
    StepOutputs           one step as the host sees it (loops: replica 0's scalars, batch
                          tensors concatenated across replicas)
    TrainLoopResult       what `train_loop(iterator, n)` returns to the host
    InferenceLoopResult   what `inference_loop(iterator, n)` returns to the host (evaluate,
                          predict); its `batches` are `BatchOutputs`

They are namedtuples, so `tf.nest`, `strategy.run` and `tf.function` carry them as they
are. A field the mode (or the spec) does not produce is None; nests in a field (host_call,
metrics, predictions...) are as model_fn gave them.
"""
import typing

import numpy as np
import tensorflow as tf


class ReplicaOutputs(typing.NamedTuple):
    """What the model step returns on one replica.

    Attributes:
      loss: the replica's loss (TRAIN: after its train op; EVAL), else None.
      host_call: the tensors of the spec's host_call (TRAIN: after the train op), or None.
      metrics: the tensors of the spec's eval_metrics (EVAL), or None.
      metric_updates: `{name: value after this step's update}` of eval_metric_ops, or None.
      predictions: the spec's predictions (PREDICT), else None.
      mask: inference: int32 `[batch]`, 1 for rows that are real examples (not padding).
      stop: inference: int32 `[1]`, 1 if the replica got a stop batch (its input ended).
      hook_fetches: `{key: tensor}` the SessionRunHooks fetch (`hook_placement`); zeros of
        the same structure on replicas other than the first; `{}` or None: no fetches.
    """
    loss: typing.Any = None
    host_call: typing.Any = None
    metrics: typing.Any = None
    metric_updates: typing.Any = None
    predictions: typing.Any = None
    mask: typing.Any = None
    stop: typing.Any = None
    hook_fetches: typing.Any = None


class StepOutputs(typing.NamedTuple):
    """One step on every replica as the host sees it (the device loops' step).

    Attributes:
      loss: replica 0's loss, once every replica computed its own; None in PREDICT.
      loss_finite: TRAIN: whether every local replica's loss is finite.
      loss_has_real_rows: inference: whether replica 0 had real examples in this step
        (its loss, metric values and the hooks' values count only then).
      metric_updates: replica 0's `{name: value}` of eval_metric_ops, or None.
      host_call, metrics, predictions, mask: `ReplicaOutputs`' batch tensors concatenated
        across replicas (the original's outfeed), or None.
      stop: inference: bool, whether every replica got a stop batch.
      hook_fetches: this worker's first replica's `{key: tensor}` for the hooks, or None.
    """
    loss: typing.Any = None
    loss_finite: typing.Any = None
    loss_has_real_rows: typing.Any = None
    metric_updates: typing.Any = None
    host_call: typing.Any = None
    metrics: typing.Any = None
    predictions: typing.Any = None
    mask: typing.Any = None
    stop: typing.Any = None
    hook_fetches: typing.Any = None


class TrainLoopResult(typing.NamedTuple):
    """What a training loop of n steps returns.

    Attributes:
      loss: replica 0's loss at the last step.
      loss_finite: whether every local replica's loss was finite at every step.
      host_call: the host_call tensors stacked per step (`[n, ...]`), or None.
      hook_fetches: the hooks' `{key: value}` from the last step (`{}`: no fetches).
    """
    loss: typing.Any
    loss_finite: typing.Any
    host_call: typing.Any
    hook_fetches: typing.Any


class BatchOutputs(typing.NamedTuple):
    """The batch outputs of an inference loop's steps (`StepOutputs`' fields of the same
    names), or one value per field for each of them (e.g. row counts); None where absent."""
    host_call: typing.Any = None
    metrics: typing.Any = None
    predictions: typing.Any = None
    mask: typing.Any = None


class InferenceLoopResult(typing.NamedTuple):
    """What an evaluation or prediction loop returns, for the steps it ran.

    Attributes:
      stop: `[steps]` bool, `StepOutputs.stop` per step (the last may be True).
      loss_has_real_rows: `[steps]` bool, per step.
      batches: `BatchOutputs`, each tensor concatenated over the steps (a step's batch may
        be smaller than the others: the final partial batch on CPU/GPU).
      rows: `BatchOutputs` with each tensor's `[steps]` int32 row counts, to split
        `batches` into steps (`batches_per_step`).
      hook_fetches: the hooks' `{key: value}` of the last step where replica 0 had real
        examples (zeros if none had; `{}`: no fetches).
      loss: `[steps]` replica 0's loss per step (EVAL), else None.
      metric_updates: `{name: [steps]}` per step, or None.
    """
    stop: typing.Any
    loss_has_real_rows: typing.Any
    batches: BatchOutputs
    rows: BatchOutputs
    hook_fetches: typing.Any
    loss: typing.Any = None
    metric_updates: typing.Any = None

    def numpy(self):
        """This result with numpy arrays in place of tensors."""
        return map_present(np.asarray, self)

    def concatenate(self, *later):
        """This result followed by the steps of the `later` results (numpy results); the
        hook values are the last result's."""
        results = (self,) + later
        steps = map_present(lambda *parts: np.concatenate(parts),
                            *(result._replace(hook_fetches={}) for result in results))
        return steps._replace(hook_fetches=results[-1].hook_fetches)

    def batches_per_step(self):
        """Yields each step's `BatchOutputs`: its rows of every batch output (numpy)."""
        ends = map_present(np.cumsum, self.rows)
        for index in range(len(self.stop)):
            yield map_present(
                lambda values, end, rows: values[end[index] - rows[index]:end[index]],
                self.batches, ends, self.rows)


def map_present(fn, *structures):
    """`tf.nest.map_structure(fn, *structures)` leaving None leaves None."""
    return tf.nest.map_structure(
        lambda first, *others: None if first is None else fn(first, *others), *structures)
