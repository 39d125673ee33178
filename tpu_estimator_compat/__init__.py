"""The TensorFlow 1 `TPUEstimator` API on TensorFlow 2.

Public names follow `tf.contrib.tpu` / `tf.estimator` exactly.  Modules load on first use,
so `import tpu_estimator_compat` stays cheap until TensorFlow is actually needed.
"""
import importlib
import os

__version__ = "0.1.0"  # setup.cfg reads it (`attr:`)

_PUBLIC_NAMES = {
    # name: module that defines it
    "TPUEstimator": "estimator",
    "Estimator": "estimator",
    "TPUEstimatorSpec": "api.spec",
    "EstimatorSpec": "api.spec",
    "ModeKeys": "api.spec",
    "RunConfig": "config.run_config",
    "TPUConfig": "config.tpu_config",
    "InputPipelineConfig": "config.tpu_config",
    "CrossShardOptimizer": "api.optimizers",
    "WarmStartSettings": "state.warm_start",
    "TrainSpec": "train_and_evaluate_tasks",
    "EvalSpec": "train_and_evaluate_tasks",
    "train_and_evaluate": "train_and_evaluate_tasks",
    "multi_worker_strategy": "engine.runtime",
}

__all__ = sorted(_PUBLIC_NAMES)

if os.environ.get("TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES", "").strip():
    # The simulated TPU's logical devices must exist before TensorFlow starts its devices.
    importlib.import_module(f"{__name__}.engine.runtime").prepare_simulated_tpu()


def __getattr__(name):
    module_name = _PUBLIC_NAMES.get(name)
    if module_name is None:
        raise AttributeError(f"module 'tpu_estimator_compat' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module_name}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC_NAMES))
