"""`tf.contrib.opt`: TF 1.x's LARS, LazyAdam and moving-average optimizers
(`rebuilt_apis/contrib_opt.py`) and its decoupled weight decay for v1 optimizers
(`rebuilt_apis/weight_decay.py`); contrib's other optimizers are not provided."""
from tpu_estimator_compat.v1 import _lazy

_WEIGHT_DECAY = ("AdamWOptimizer", "MomentumWOptimizer", "extend_with_decoupled_weight_decay",
                 "DecoupledWeightDecayExtension")
_OPTIMIZERS = ("LARSOptimizer", "LazyAdamOptimizer", "MovingAverageOptimizer")
_PKG = "tpu_estimator_compat.rebuilt_apis"

_lazy.install(
    globals(),
    names={**{name: f"{_PKG}.weight_decay:{name}" for name in _WEIGHT_DECAY},
           **{name: f"{_PKG}.contrib_opt:{name}" for name in _OPTIMIZERS}},
    missing_hint=(". tpu_estimator_compat provides these of tf.contrib.opt only: "
                  f"{', '.join(_OPTIMIZERS + _WEIGHT_DECAY)}."),
)
