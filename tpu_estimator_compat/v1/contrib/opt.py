"""`tf.contrib.opt`: TF 1.x's LARS, LazyAdam and moving-average optimizers
(`legacy_api/contrib_opt.py`) and its decoupled weight decay for v1 optimizers
(`legacy_api/weight_decay.py`); contrib's other optimizers are not provided."""
from tpu_estimator_compat.v1 import _lazy

_WEIGHT_DECAY = ("AdamWOptimizer", "MomentumWOptimizer", "extend_with_decoupled_weight_decay",
                 "DecoupledWeightDecayExtension")
_OPTIMIZERS = ("LARSOptimizer", "LazyAdamOptimizer", "MovingAverageOptimizer")
_PKG = "tpu_estimator_compat.legacy_api"

_lazy.install(
    globals(),
    names={**{name: f"{_PKG}.weight_decay:{name}" for name in _WEIGHT_DECAY},
           **{name: f"{_PKG}.contrib_opt:{name}" for name in _OPTIMIZERS}},
    missing_hint=(". tpu_estimator_compat provides these of tf.contrib.opt only: "
                  f"{', '.join(_OPTIMIZERS + _WEIGHT_DECAY)}."),
)
