"""`tf.contrib.opt`: TF 1.x's decoupled weight decay for v1 optimizers
(`legacy_api/weight_decay.py`); contrib's other optimizers are not provided."""
from tpu_estimator_compat.v1 import _lazy

_NAMES = ("AdamWOptimizer", "MomentumWOptimizer", "extend_with_decoupled_weight_decay",
          "DecoupledWeightDecayExtension")

_lazy.install(
    globals(),
    names={name: f"tpu_estimator_compat.legacy_api.weight_decay:{name}" for name in _NAMES},
    missing_hint=(". tpu_estimator_compat provides tf.contrib.opt's decoupled weight decay only "
                  f"({', '.join(_NAMES)})."),
)
