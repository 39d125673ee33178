"""One task of the evaluator-role test (`test_evaluator_task.py`): run it per TF_CONFIG task.

    TF_CONFIG=... python tests/evaluator_task_main.py MODEL_DIR RESULT_JSON

Runs `train_and_evaluate` (use_tpu=False, max_steps 8, a checkpoint every 2 steps) with an
exporter that records its calls; RESULT_JSON gets what train_and_evaluate returned and the
exporter's calls.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests import test_train_and_evaluate as shared  # noqa: E402  pylint: disable=wrong-import-position
import tpu_estimator_compat as tec  # noqa: E402  pylint: disable=wrong-import-position

MAX_STEPS = 8


def main(model_dir, result_path):
    config = tec.RunConfig(model_dir=model_dir, save_checkpoints_steps=2, keep_checkpoint_max=0,
                           tpu_config=tec.TPUConfig(iterations_per_loop=2))
    estimator = tec.TPUEstimator(shared.Model(), config=config, use_tpu=False,
                                 train_batch_size=8, eval_batch_size=8)
    exporter = shared.RecordingExporter()
    result = tec.train_and_evaluate(
        estimator, tec.TrainSpec(shared.train_input_fn, max_steps=MAX_STEPS),
        tec.EvalSpec(shared.eval_input_fn, steps=None, exporters=exporter, start_delay_secs=0,
                     throttle_secs=1))
    with open(result_path, "w", encoding="utf-8") as f:
        json.dump({"task": config.task_type, "returned": repr(result),
                   "exports": exporter.calls}, f, default=lambda number: number.item())


if __name__ == "__main__":
    main(*sys.argv[1:])
