"""`tf.estimator.BestExporter`: exports a SavedModel when an evaluation beats the best one
so far (by `compare_fn`, default: a smaller 'loss'), keeping the newest `exports_to_keep`.

As TF 1.x's: the best result so far is first read from the model_dir's eval event files
(`event_file_pattern`, so a restarted job does not export a worse model), and the first
evaluation a process sees is always exported.
"""
import inspect
import os

import tensorflow as tf

from tpu_estimator_compat import log as logging
from tpu_estimator_compat.train_and_evaluate_tasks import Exporter
from tpu_estimator_compat.train_and_evaluate_tasks import LatestExporter

_ARGUMENTS = {"best_eval_result", "current_eval_result"}


def _loss_smaller(best_eval_result, current_eval_result):
    """Whether `current_eval_result`'s 'loss' is smaller than `best_eval_result`'s."""
    for name, result in (("best_eval_result", best_eval_result),
                         ("current_eval_result", current_eval_result)):
        if not result or "loss" not in result:
            raise ValueError(f"{name} cannot be empty or no loss is found in it.")
    return best_eval_result["loss"] > current_eval_result["loss"]


def _check_compare_fn(compare_fn):
    if compare_fn is None:
        raise ValueError("`compare_fn` must not be None.")
    arguments = set(inspect.signature(compare_fn).parameters)
    for required in sorted(_ARGUMENTS):
        if required not in arguments:
            raise ValueError(f"compare_fn ({compare_fn}) must include {required} argument.")
    unexpected = sorted(arguments - _ARGUMENTS)
    if unexpected:
        raise ValueError(f"compare_fn ({compare_fn}) has following not expected args: "
                         f"{unexpected}")


class BestExporter(Exporter):
    """Exports the model when `compare_fn(best_eval_result=..., current_eval_result=...)`
    says the evaluation improved; see the module docstring."""

    def __init__(self, name="best_exporter", serving_input_receiver_fn=None,
                 event_file_pattern="eval/*.tfevents.*", compare_fn=_loss_smaller,
                 assets_extra=None, as_text=False, exports_to_keep=5):
        _check_compare_fn(compare_fn)
        self._compare_fn = compare_fn
        # LatestExporter's export: a SavedModel, then the newest exports_to_keep kept.
        self._exporter = LatestExporter(name, serving_input_receiver_fn, assets_extra,
                                        as_text, exports_to_keep)
        self._event_file_pattern = event_file_pattern
        self._model_dir = None
        self._best_eval_result = None
        self._has_exported = False

    @property
    def name(self):
        return self._exporter.name

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        if self._model_dir != estimator.model_dir and self._event_file_pattern:
            logging.info("Loading best metric from event files.")
            self._model_dir = estimator.model_dir
            self._best_eval_result = self._best_in_events(
                os.path.join(self._model_dir, self._event_file_pattern))
        if (self._best_eval_result is None or not self._has_exported
                or self._compare_fn(best_eval_result=self._best_eval_result,
                                    current_eval_result=eval_result)):
            logging.info("Performing best model export.")
            self._best_eval_result = eval_result
            result = self._exporter.export(estimator, export_path, checkpoint_path,
                                           eval_result, is_the_final_export)
            self._has_exported = True
            return result
        return None

    def _best_in_events(self, pattern):
        """The best of the scalar summaries of each event in the files `pattern` matches."""
        best = None
        for path in tf.io.gfile.glob(pattern):
            for event in tf.compat.v1.train.summary_iterator(path):
                result = {value.tag: value.simple_value for value in event.summary.value
                          if value.HasField("simple_value")}
                if result and (best is None or self._compare_fn(best, result)):
                    best = result
        return best
