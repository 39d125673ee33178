"""Public types a model_fn builds or receives: TPUEstimatorSpec / EstimatorSpec and ModeKeys
(spec), `params['context']` (tpu_context), CrossShardOptimizer (optimizers)."""
