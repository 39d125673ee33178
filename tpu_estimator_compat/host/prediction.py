"""The host side of `predict()`: a generator over the prediction loop's outputs.

Each execution of the inference loop runs up to `steps_per_loop` batches; the host drops the
padding rows (so N inputs give exactly N predictions, in input order) and yields them. The
generator ends when every replica has seen the end of the input, or after the loop in which
a prediction hook requested a stop. Hooks run once per loop execution: before_run, the loop,
after_run (skipped for a loop that saw only the end of the input, like TF1's last run that
hit OutOfRange), the loop's predictions are yielded; end() when the generator finishes.
The loop is `loop_actions.run_loops`, the hooks are its `HookActions`.
"""
import contextlib

import numpy as np
import tensorflow as tf

from tpu_estimator_compat.host import lifecycle_log
from tpu_estimator_compat.host import loop_actions


def generate_predictions(compiled, iterator, *, steps_per_loop: int, predict_keys,
                         yield_single_examples: bool, hook_run, rows_per_replica_copy=None,
                         tpu_semantics: bool = False):
    """Yields predictions (single examples or batches) until the input is exhausted.

    Args:
      hook_run: the call's started `hooks.HookRun`.
      tpu_semantics: log the original's infeed/outfeed lines before each loop.
    """
    is_dict = compiled.traced.predictions_is_dict

    def run_loop(size, step):
        if tpu_semantics:
            lifecycle_log.infeed_outfeed(size)
        run = compiled.loop(iterator, tf.constant(size))  # an InferenceLoopResult
        return loop_actions.LoopEnd(
            run, first_step=step, step=step,
            only_padding=not np.asarray(run.loss_has_real_rows).any(),
            # every replica saw the end
            input_ended=len(run.stop) < size or bool(np.asarray(run.stop)[-1]))

    actions = loop_actions.LoopActions([loop_actions.HookActions(hook_run)])
    loops = loop_actions.run_loops(actions, 0, lambda step: steps_per_loop, run_loop)
    with contextlib.closing(loops):  # the actions are closed if the caller stops early
        for loop in loops:
            run = loop.result._replace(hook_fetches={}).numpy()
            for predictions in _real_rows_per_step(run, rows_per_replica_copy):
                predictions = _select(predictions, predict_keys, is_dict)
                if yield_single_examples:
                    yield from _single_examples(predictions, is_dict)
                else:
                    yield predictions


def _real_rows_per_step(run, rows_per_replica_copy):
    for step in run.batches_per_step():
        mask = step.mask.astype(bool)
        predictions = step.predictions
        if rows_per_replica_copy:
            mask = mask[:rows_per_replica_copy]
            predictions = tf.nest.map_structure(lambda v: v[:rows_per_replica_copy], predictions)
        if mask.any():
            yield tf.nest.map_structure(lambda v, m=mask: _real_rows(v, m), predictions)


def _real_rows(value, mask):
    """The rows of `value` that belong to real examples (`mask`: one entry per example).

    A prediction with k rows per example (`tf.reshape(per_token, [-1])`: rows in example
    order) keeps k rows per real example; a batch without padding keeps every row, as the
    original's Estimator did, whatever their number.
    """
    rows = len(value)
    if rows == len(mask):
        return value[mask]
    if mask.all():
        return value
    if rows % len(mask) == 0:
        return value[np.repeat(mask, rows // len(mask))]
    raise ValueError(
        f"A prediction has {rows} rows in a batch of {len(mask)} examples, of which "
        f"{int(mask.sum())} are real (the rest pad the last batch): its padding rows cannot "
        "be told apart. Return predictions whose first dimension is the batch (or k rows per "
        "example, in example order), or make the number of examples a multiple of the "
        "batch size.")


def _select(predictions, predict_keys, is_dict):
    if predict_keys is None:
        return predictions
    if not is_dict:
        raise ValueError("predict_keys argument is not valid in case of non-dict predictions.")
    keys = [predict_keys] if isinstance(predict_keys, str) else list(predict_keys)
    selected = {k: v for k, v in predictions.items() if k in keys}
    if not selected:
        raise ValueError(
            f"Expected to run at least one output from {sorted(predictions)}, provided "
            f"{keys}.")
    return selected


def _single_examples(predictions, is_dict):
    if not is_dict:
        yield from predictions
        return
    lengths = {key: len(value) for key, value in predictions.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(
            "Batch length of predictions should be same. Got lengths "
            f"{lengths}. Return predictions whose first dimension is the batch, or pass "
            "yield_single_examples=False.")
    for row in range(next(iter(lengths.values()), 0)):
        yield {key: value[row] for key, value in predictions.items()}
