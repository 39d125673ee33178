"""`tf.contrib.cluster_resolver`: the same as `tf.distribute.cluster_resolver`."""
from tpu_estimator_compat.v1 import _lazy
from tpu_estimator_compat.v1.distribute import cluster_resolver as _resolvers

_lazy.install(globals(), names=_resolvers.NAMES,
              fallback="tensorflow:compat.v1.distribute.cluster_resolver")
